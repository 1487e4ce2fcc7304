package main

// `ledgermq admin msg …` (mqadmin: queryMsgById, queryMsgByUniqueKey,
// queryMsgByKey, queryMsgByOffset, printMsg): find stored messages by
// id, key, queue position or time. admin_msg_rw.go has the verbs that
// send, read queues and show traces.

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
)

func newAdminMsgCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "msg", Short: "Messages: by id, key, queue offset or time range; send, read a queue, trace"}
	cmd.AddCommand(newMsgIDCmd(af, "id"), newMsgKeyCmd(af, "key"), newMsgOffsetCmd(af, "offset"), newMsgTimeCmd(af, "time"),
		newSendMessageCmd(af, "send"), newConsumeMessageCmd(af, "read"), newMsgQueueCmd(af, "queue"), newMsgTraceCmd(af, "trace"),
		newQueryCQCmd(af, "cq"))
	return cmd
}

// msgView is a message for --output json.
type msgView struct {
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	Topic          string            `json:"topic"`
	Tags           string            `json:"tags,omitempty"`
	Keys           string            `json:"keys,omitempty"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	PhysicalOffset int64             `json:"commitLogOffset"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornHost       string            `json:"bornHost"`
	StoreHost      string            `json:"storeHost"`
	Properties     map[string]string `json:"properties"`
	// Body is the body as text when it is UTF-8, else empty (BodySize
	// says how long it is).
	Body     string `json:"body"`
	BodySize int    `json:"bodySize"`
}

func viewOf(m *message.Ext) msgView {
	v := msgView{MsgID: m.MsgID(), OffsetMsgID: m.OffsetMsgID(), Topic: m.Topic, Tags: m.Tags(),
		Keys: m.Properties[message.PropertyKeys], QueueID: m.QueueID, QueueOffset: m.QueueOffset,
		PhysicalOffset: m.PhysicalOffset, ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTimestamp,
		StoreTimestamp: m.StoreTimestamp, BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(),
		Properties: m.Properties, BodySize: len(m.Body)}
	if utf8.Valid(m.Body) {
		v.Body = string(m.Body)
	}
	return v
}

// printMessages prints messages as JSON or one table line each.
func (a *admin) printMessages(msgs []*message.Ext) error {
	views := make([]msgView, 0, len(msgs))
	rows := make([]table.Row, 0, len(msgs))
	for _, m := range msgs {
		v := viewOf(m)
		views = append(views, v)
		body := v.Body
		if len(body) > 40 {
			body = body[:40] + "…"
		}
		rows = append(rows, table.Row{v.MsgID, v.OffsetMsgID, v.Topic, v.Tags, v.Keys, v.QueueID, v.QueueOffset,
			fmtTime(time.UnixMilli(v.StoreTimestamp)), v.BodySize, strings.ReplaceAll(body, "\n", " ")})
	}
	return a.emit(map[string]any{"messages": views}, table.Row{"MSGID", "OFFSET MSGID", "TOPIC", "TAGS", "KEYS", "QID",
		"QUEUE OFFSET", "STORED", "SIZE", "BODY"}, rows)
}

func newMsgIDCmd(af *adminFlags, use string) *cobra.Command {
	var id, topic string
	var resend [3]string // mqadmin's -g, -d, -s
	cmd := &cobra.Command{
		Use: use, Short: "A message by offset msgId, or by UNIQ_KEY (with -t)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if resend != [3]string{} {
				return fmt.Errorf("%w: sending a stored message to a consumer (mqadmin's -g, -d, -s) is not served; "+
					"admin resetOffsetByTime moves a group back to read it again", errAdmin)
			}
			m, err := a.c.MessageByID(ctx, topic, id)
			if err != nil {
				return err
			}
			return a.printMessages([]*message.Ext{m})
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&id, "msg-id", "i", "", "offset msgId or UNIQ_KEY")
	f.StringVarP(&topic, "topic", "t", "", "topic (needed to look a UNIQ_KEY up)")
	if mqadminVerb(use) {
		f.StringVarP(&resend[0], "consumerGroup", "g", "", "mqadmin's: send the message to a consumer of this group (not served)")
		f.StringVarP(&resend[1], "clientId", "d", "", "mqadmin's: the consumer to send it to (not served)")
		f.StringVarP(&resend[2], "sendMessage", "s", "", "mqadmin's: send it again (not served)")
		mqNoEffect(f, use, "unitName", "u", true, "unit name")
		mqNoEffect(f, use, "showAll", "a", false, "print every message of the key")
	}
	required(cmd, "msg-id")
	return cmd
}

func newMsgKeyCmd(af *adminFlags, use string) *cobra.Command {
	var topic, key, begin, end string
	var maxNum int
	cmd := &cobra.Command{
		Use: use, Short: "Messages whose KEYS hold a key (newest first)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			b, e, err := timeRange(begin, end)
			if err != nil {
				return err
			}
			msgs, err := a.c.MessagesByKey(ctx, topic, key, maxNum, b, e)
			if err != nil {
				return err
			}
			return a.printMessages(msgs)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.StringVarP(&key, "key", "k", "", "message key")
	f.StringVarP(&begin, "begin", "b", "", "stored at or after (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.StringVarP(&end, "end", "e", "", "stored at or before")
	f.IntVarP(&maxNum, "max", "m", 64, "at most this many")
	required(cmd, "topic", "key")
	return cmd
}

// timeRange parses optional begin and end flags.
func timeRange(begin, end string) (time.Time, time.Time, error) {
	var b, e time.Time
	now := time.Now()
	for _, p := range []struct {
		s   string
		dst *time.Time
	}{{begin, &b}, {end, &e}} {
		if p.s == "" {
			continue
		}
		v, err := parseWhen(p.s, now)
		if err != nil {
			return b, e, err
		}
		*p.dst = time.UnixMilli(v)
	}
	return b, e, nil
}

func newMsgOffsetCmd(af *adminFlags, use string) *cobra.Command {
	var topic, broker string
	var queue int32
	var offset int64
	cmd := &cobra.Command{
		Use: use, Short: "The message at a queue offset", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			m, err := a.c.MessageAtOffset(ctx, topic, broker, queue, offset)
			if err != nil {
				return err
			}
			return a.printMessages([]*message.Ext{m})
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.StringVarP(&broker, "broker-name", "b", "", "broker group (default: the topic's only one)")
	f.Int32VarP(&queue, "queue", "i", 0, "queue id")
	f.Int64VarP(&offset, "offset", mqShort(use, "o"), 0, "queue offset")
	required(cmd, "topic", "offset")
	return cmd
}

func newMsgTimeCmd(af *adminFlags, use string) *cobra.Command {
	var topic, begin, end, expr string
	var maxNum int
	cmd := &cobra.Command{
		Use: use, Short: "Messages stored within a time range, queue by queue", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			b, e, err := timeRange(begin, end)
			if err != nil {
				return err
			}
			msgs, err := a.c.ReadMessages(ctx, client.ReadRequest{Topic: topic, Begin: b, End: e, Max: maxNum, Tags: tagsOf(expr)})
			if err != nil {
				return err
			}
			return a.printMessages(msgs)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.StringVarP(&begin, "begin", "b", "", "stored at or after (ms or yyyy-MM-dd#HH:mm:ss:SSS; default: the start)")
	f.StringVarP(&end, "end", "e", "", "stored at or before (default: now)")
	f.IntVarP(&maxNum, "max", "m", 2000, "at most this many")
	f.StringVarP(&expr, "subExpression", "s", "*", "only these tags: TagA || TagB, or *")
	mqNoEffect(f, use, "charsetName", "c", true, "charset of bodies (shown as UTF-8 text here)")
	mqNoEffect(f, use, "printBody", "d", true, "print bodies (always here)")
	required(cmd, "topic")
	return cmd
}

// tagsOf reads a tag expression (TagA || TagB); nil for * (every tag).
func tagsOf(expr string) []string {
	var tags []string
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" && t != "*" {
			tags = append(tags, t)
		}
	}
	return tags
}
