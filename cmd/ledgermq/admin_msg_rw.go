package main

// `ledgermq admin msg send|read|queue|trace` (mqadmin: sendMessage,
// consumeMessage, printMsgByQueue, queryMsgTraceById): send one message
// through ledgermq's client producer, read queues as a pull consumer
// without committing anything, show a message's trace as RocketMQ's
// clients write it.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
)

func newSendMessageCmd(af *adminFlags, use string) *cobra.Command {
	var topic, body, keys, tags, broker string
	var qid int32
	var trace bool
	cmd := &cobra.Command{
		Use: use, Short: "Send one message through ledgermq's client producer (to one queue with -b and -i)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if trace {
				return fmt.Errorf("%w: ledgermq's client writes no message traces (-m true)", errAdmin)
			}
			if qid >= 0 && broker == "" {
				return fmt.Errorf("%w: a queue (-i) needs its broker group (-b)", errAdmin)
			}
			opts := append([]client.Option{client.WithNameServers(a.c.NameServers()...)}, af.tls.clientOptions()...)
			if broker != "" {
				opts = append(opts, client.WithQueueSelector(queueOf(topic, broker, qid)))
			}
			p, err := client.NewProducer(opts...)
			if err != nil {
				return fmt.Errorf("%w: %w", errAdmin, err)
			}
			defer p.Close()
			res, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(body), Tag: tags, Keys: strings.Fields(keys)})
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"brokerName": res.Queue.BrokerName, "queueId": res.Queue.QueueID, "status": res.Status.String(),
				"msgId": res.MsgID, "offsetMsgId": res.OffsetMsgID, "queueOffset": res.QueueOffset},
				table.Row{"BROKER", "QID", "STATUS", "MSGID", "OFFSET MSGID", "QUEUE OFFSET"},
				[]table.Row{{res.Queue.BrokerName, res.Queue.QueueID, res.Status, res.MsgID, res.OffsetMsgID, res.QueueOffset}})
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.StringVarP(&body, "body", "p", "", "the body, as UTF-8 text")
	f.StringVarP(&keys, "key", "k", "", "keys, space-separated")
	f.StringVarP(&tags, "tags", "c", "", "tag")
	f.StringVarP(&broker, "broker", "b", "", "send to this broker group (default: the next queue in turn)")
	f.Int32VarP(&qid, "qid", "i", -1, "send to this queue of -b (default: the group's first)")
	boolFlag(f, use, &trace, "msgTraceEnable", "m", false, "write a trace of the send (not served)")
	required(cmd, "topic", "body")
	return cmd
}

// queueOf selects broker's queue qid (its first one when qid < 0). A queue
// the route does not have is selected anyway, and the send says so.
func queueOf(topic, broker string, qid int32) client.QueueSelector {
	return client.QueueSelectorFunc(func(_ *client.Message, qs []client.Queue) client.Queue {
		for _, q := range qs {
			if q.BrokerName == broker && (qid < 0 || q.QueueID == qid) {
				return q
			}
		}
		return client.Queue{Topic: topic, BrokerName: broker, QueueID: max(qid, 0)}
	})
}

// readFlags are the flags of the verbs that read queues.
type readFlags struct {
	r          client.ReadRequest
	qid        int32
	begin, end string
	expr       string
}

// request is the read the flags ask for.
func (rf *readFlags) request() (client.ReadRequest, error) {
	r := rf.r
	b, e, err := timeRange(rf.begin, rf.end)
	if err != nil {
		return r, err
	}
	r.Begin, r.End, r.Tags = b, e, tagsOf(rf.expr)
	if rf.qid >= 0 {
		r.Queues = []int32{rf.qid}
	}
	r.Offset = max(r.Offset, 0)
	return r, nil
}

func newConsumeMessageCmd(af *adminFlags, use string) *cobra.Command {
	rf := &readFlags{}
	cmd := &cobra.Command{
		Use: use, Short: "Read messages as a pull consumer, committing nothing: every queue, or one (-b, -i), from an offset (-o) or a time (-s)",
		Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			r, err := rf.request()
			if err != nil {
				return err
			}
			msgs, err := a.c.ReadMessages(ctx, r)
			if err != nil {
				return err
			}
			return a.printMessages(msgs)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&rf.r.Topic, "topic", "t", "", "topic")
	f.StringVarP(&rf.r.BrokerName, "brokerName", "b", "", "only this broker group")
	f.Int32VarP(&rf.qid, "queueId", "i", -1, "only this queue (default: every queue)")
	f.Int64VarP(&rf.r.Offset, "offset", mqShort(use, "o"), 0, "first queue offset to read")
	f.StringVarP(&rf.r.Group, "consumerGroup", "g", "", "the consumer group the pulls name (default "+client.ToolsConsumerGroup+"; nothing is committed)")
	f.StringVarP(&rf.begin, "beginTimestamp", "s", "", "stored at or after (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.StringVarP(&rf.end, "endTimestamp", "e", "", "stored at or before")
	f.IntVarP(&rf.r.Max, "MessageNumber", "c", 128, "at most this many")
	required(cmd, "topic")
	return cmd
}

func newMsgQueueCmd(af *adminFlags, use string) *cobra.Command {
	rf := &readFlags{}
	var print, count bool
	cmd := &cobra.Command{
		Use: use, Short: "The messages of one queue within a time range, and (-f) how many of each tag", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			r, err := rf.request()
			if err != nil {
				return err
			}
			msgs, err := a.c.ReadMessages(ctx, r)
			if err != nil {
				return err
			}
			return a.printQueue(msgs, print, count)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&rf.r.Topic, "topic", "t", "", "topic")
	f.StringVarP(&rf.r.BrokerName, "brokerName", "a", "", "broker group")
	f.Int32VarP(&rf.qid, "queueId", "i", -1, "queue id")
	f.StringVarP(&rf.expr, "subExpression", "s", "*", "only these tags: TagA || TagB, or *")
	f.StringVarP(&rf.begin, "beginTimestamp", "b", "", "stored at or after (ms or yyyy-MM-dd#HH:mm:ss:SSS; default: the start)")
	f.StringVarP(&rf.end, "endTimestamp", "e", "", "stored at or before (default: now)")
	f.IntVarP(&rf.r.Max, "max", "m", client.DefaultTimeRangeMax, "at most this many")
	boolFlag(f, use, &print, "print", "p", true, "print the messages")
	boolFlag(f, use, &count, "calculate", "f", false, "count the messages of each tag")
	mqNoEffect(f, use, "charsetName", "c", true, "charset of bodies (shown as UTF-8 text here)")
	mqNoEffect(f, use, "printBody", "d", true, "print bodies (always here)")
	required(cmd, "topic", "brokerName", "queueId")
	return cmd
}

// tagCount is one tag's line of printMsgByQueue -f.
type tagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

// printQueue prints a queue's messages (when print) and the count of each
// tag, most frequent first (when count).
func (a *admin) printQueue(msgs []*message.Ext, print, count bool) error {
	byTag := map[string]int{}
	for _, m := range msgs {
		byTag[m.Tags()]++
	}
	counts := make([]tagCount, 0, len(byTag))
	for t, n := range byTag {
		counts = append(counts, tagCount{t, n})
	}
	sort.Slice(counts, func(i, j int) bool {
		if counts[i].Count != counts[j].Count {
			return counts[i].Count > counts[j].Count
		}
		return counts[i].Tag < counts[j].Tag
	})
	if a.json {
		v := map[string]any{}
		if print {
			views := make([]msgView, 0, len(msgs))
			for _, m := range msgs {
				views = append(views, viewOf(m))
			}
			v["messages"] = views
		}
		if count {
			v["tags"] = counts
		}
		return printJSON(a.out, v)
	}
	if print {
		if err := a.printMessages(msgs); err != nil {
			return err
		}
	}
	if count {
		rows := make([]table.Row, 0, len(counts))
		for _, c := range counts {
			rows = append(rows, table.Row{c.Tag, c.Count})
		}
		printTable(a.out, table.Row{"TAG", "COUNT"}, rows)
	}
	return nil
}

func newMsgTraceCmd(af *adminFlags, use string) *cobra.Command {
	var id, topic string
	cmd := &cobra.Command{
		Use: use, Short: "A message's trace as RocketMQ's clients with tracing on write it: sent, delivered, consumed", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			evs, err := a.c.MessageTrace(ctx, topic, id)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(evs))
			for _, ev := range evs {
				rows = append(rows, table.Row{ev.Type, ev.Group, ev.ClientHost, fmtTime(ev.Time), fmt.Sprintf("%dms", ev.CostMs), ev.Status})
			}
			return a.emit(map[string]any{"msgId": id, "events": evs}, table.Row{"TYPE", "GROUP", "CLIENT HOST", "TIME", "COST", "STATUS"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&id, "msgId", "i", "", "the message's id (UNIQ_KEY)")
	cmd.Flags().StringVarP(&topic, "traceTopic", "t", client.DefaultTraceTopic, "the trace topic")
	required(cmd, "msgId")
	return cmd
}
