package main

// `ledgermq admin cluster stats|consume-stats` and `admin group
// producers` (mqadmin: statsAll, brokerConsumeStats, producerConnection):
// what every topic holds and how far each group is, one broker node's
// groups queue by queue, a producer group's clients.

import (
	"context"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

func newStatsAllCmd(af *adminFlags, use string) *cobra.Command {
	var topic string
	var active bool
	cmd := &cobra.Command{
		Use: use, Short: "Every topic: messages written and stored, and each consumer group's consumed count and lag", Args: cobra.NoArgs,
		Long: "Every topic (or -t one): the messages its queues took and still hold, and for each consumer group\n" +
			"with offsets on it the messages consumed and the lag (mqadmin's accumulation). Brokers keep no\n" +
			"rates: each node's /metrics has rocketmq_messages_in_total and rocketmq_messages_out_total.",
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			all, err := a.c.StatsAll(ctx, topic)
			if err != nil {
				return err
			}
			stats := []client.TopicStats{}
			var rows []table.Row
			for _, ts := range all {
				if active && ts.Written == 0 {
					continue
				}
				stats = append(stats, ts)
				if len(ts.Groups) == 0 {
					rows = append(rows, table.Row{ts.Topic, "-", ts.Written, ts.Stored, "-", "-"})
				}
				for _, g := range ts.Groups {
					rows = append(rows, table.Row{ts.Topic, g.Group, ts.Written, ts.Stored, g.Consumed, g.Lag})
				}
			}
			return a.emit(map[string]any{"topics": stats}, table.Row{"TOPIC", "GROUP", "WRITTEN", "STORED", "CONSUMED", "LAG"}, rows)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "only this topic")
	f.BoolVarP(&active, "activeTopic", "a", false, "only topics written to")
	return cmd
}

func newBrokerConsumeStatsCmd(af *adminFlags, use string) *cobra.Command {
	var addr string
	var level, timeoutMs int64
	cmd := &cobra.Command{
		Use: use, Short: "One broker node's consumer groups, queue by queue: offsets and lag (-l: at least this lag)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if timeoutMs > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
				defer cancel()
			}
			all, err := a.c.BrokerConsumeStats(ctx, addr)
			if err != nil {
				return err
			}
			qs := []client.GroupQueueProgress{}
			var rows []table.Row
			var total int64
			for _, q := range all {
				if q.Lag < level {
					continue
				}
				qs = append(qs, q)
				total += q.Lag
				rows = append(rows, table.Row{q.Topic, q.Group, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, fmtTime(q.LastConsumed)})
			}
			if a.json {
				return printJSON(a.out, map[string]any{"brokerAddr": addr, "queues": qs, "totalLag": total})
			}
			printTable(a.out, table.Row{"TOPIC", "GROUP", "BROKER", "QID", "BROKER OFFSET", "CONSUMER OFFSET", "LAG", "LAST CONSUMED"}, rows)
			return a.report(nil, "total lag: %d\n", total)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "the broker node, by address")
	f.Int64VarP(&level, "level", "l", 0, "only queues lagging by at least this much")
	if mqadminVerb(use) {
		f.Int64VarP(&timeoutMs, "timeoutMillis", "t", 0, "mqadmin's: bound on the look-ups, ms (--timeout bounds the whole command)")
		mqNoEffect(f, use, "order", "o", true, "ordered topics only")
	}
	required(cmd, "brokerAddr")
	return cmd
}

func newProducerConnectionCmd(af *adminFlags, use string) *cobra.Command {
	var group, topic string
	cmd := &cobra.Command{
		Use: use, Short: "A producer group's online clients (those that heartbeat: transactional producers)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			pcs, err := a.c.ProducerConnections(ctx, group, topic)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(pcs))
			for _, c := range pcs {
				rows = append(rows, table.Row{c.ClientID, c.ClientAddr, c.Language, c.Version, strings.Join(c.Brokers, " ")})
			}
			return a.emit(map[string]any{"group": group, "clients": pcs}, table.Row{"CLIENT", "ADDR", "LANGUAGE", "VERSION", "BROKERS"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&group, "producerGroup", "g", "", "producer group")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "a topic the group sends to: ask its broker groups (default: every one)")
	required(cmd, "producerGroup")
	return cmd
}
