package main

// `ledgermq admin pending …`: work a broker group holds for later.
//
//	timers        timer messages not yet delivered: count, next due, the
//	              first --limit in delivery order
//	transactions  transactions not yet committed or rolled back: count, the
//	              oldest --limit with age, check count and producer group
//	pop           POP messages handed out and not acknowledged, per consumer
//	              group and topic: in flight, due again, oldest
//	              invisible-until (--consumer, --topic keep one)

import (
	"context"
	"fmt"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/protocol"
)

func newAdminPendingCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "pending", Short: "Work a broker group holds for later: timer messages, undecided transactions, POP messages in flight"}
	var group string
	var limit int
	cmd.PersistentFlags().StringVar(&group, "group", "", "broker group (brokerName); default: the only one")
	cmd.PersistentFlags().IntVar(&limit, "limit", 20, "how many to list (1–1000)")
	timers := &cobra.Command{
		Use: "timers", Short: "Timer messages not yet delivered, in delivery order", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			p, err := a.c.PendingTimers(ctx, group, limit)
			if err != nil {
				return err
			}
			if !a.json {
				next := "-"
				if p.NextDueMs > 0 {
					next = fmtTime(time.UnixMilli(p.NextDueMs))
				}
				fmt.Fprintf(a.out, "%d pending timer messages, next due %s, max delay %v\n", p.Count, next, time.Duration(p.MaxDelayMs)*time.Millisecond)
			}
			rows := make([]table.Row, 0, len(p.Timers))
			for _, t := range p.Timers {
				rows = append(rows, table.Row{fmtTime(time.UnixMilli(t.DueMs)), t.Topic, t.QueueID, t.MsgID, fmtTime(time.UnixMilli(t.BornMs)), t.ParkedOffset})
			}
			return a.emit(p, table.Row{"due", "topic", "queue", "msgId", "born", "parkedOffset"}, rows)
		}),
	}
	txns := &cobra.Command{
		Use: "transactions", Short: "Transactions not yet committed or rolled back, oldest first", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			p, err := a.c.PendingTransactions(ctx, group, limit)
			if err != nil {
				return err
			}
			if !a.json {
				fmt.Fprintf(a.out, "%d undecided transactions\n", p.Count)
			}
			rows := make([]table.Row, 0, len(p.Transactions))
			for _, t := range p.Transactions {
				rows = append(rows, table.Row{t.MsgID, t.ProducerGroup, t.Topic, (time.Duration(t.AgeMs) * time.Millisecond).Round(time.Second), t.CheckTimes, t.HalfOffset})
			}
			return a.emit(p, table.Row{"msgId", "producerGroup", "topic", "age", "checks", "halfOffset"}, rows)
		}),
	}
	cmd.AddCommand(timers, txns, newAdminPendingPopCmd(af, &group, &limit))
	return cmd
}

// newAdminPendingPopCmd is `pending pop`; group and limit are its
// parent's flags. The consumer group is --consumer: --group is the broker
// group throughout `pending`.
func newAdminPendingPopCmd(af *adminFlags, group *string, limit *int) *cobra.Command {
	var h protocol.PopStateHeader
	cmd := &cobra.Command{
		Use: "pop", Short: "POP messages in flight per consumer group and topic: how many, how many due again, the oldest invisible-until", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			h.Limit = *limit
			p, err := a.c.PopState(ctx, *group, h)
			if err != nil {
				return err
			}
			if !a.json {
				fmt.Fprintf(a.out, "%d consumer group and topic pairs with POP state\n", p.Count)
			}
			rows := make([]table.Row, 0, len(p.Rows))
			for _, r := range p.Rows {
				oldest := time.Time{}
				if r.OldestInvisibleUntil > 0 {
					oldest = time.UnixMilli(r.OldestInvisibleUntil)
				}
				rows = append(rows, table.Row{r.Group, r.Topic, r.Inflight, r.Due, fmtTime(oldest)})
			}
			return a.emit(p, table.Row{"group", "topic", "inflight", "due", "oldestInvisibleUntil"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&h.Group, "consumer", "g", "", "only this consumer group")
	cmd.Flags().StringVarP(&h.Topic, "topic", "t", "", "only this topic")
	return cmd
}
