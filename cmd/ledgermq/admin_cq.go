package main

// `ledgermq admin msg cq` (mqadmin: queryCq): a queue's ConsumeQueue
// units from an index.

import (
	"context"
	"fmt"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/protocol"
)

func newQueryCQCmd(af *adminFlags, use string) *cobra.Command {
	var h protocol.QueryConsumeQueueRequestHeader
	var addr string
	cmd := &cobra.Command{
		Use: use, Short: "A queue's ConsumeQueue units from an index: CommitLog offset, size, tags hash (and a group's filter verdict)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			body, remark, err := a.c.ConsumeQueueUnits(ctx, addr, h)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, map[string]any{"topic": h.Topic, "queueId": h.QueueID, "remark": remark, "body": body})
			}
			if _, err := fmt.Fprintf(a.out, "queue %d@%s: index %d to %d\n", h.QueueID, h.Topic, body.MinQueueIndex, body.MaxQueueIndex); err != nil {
				return err
			}
			if body.FilterData != "" {
				if _, err := fmt.Fprintf(a.out, "filter: %s\n", body.FilterData); err != nil {
					return err
				}
			}
			rows := make([]table.Row, 0, len(body.QueueData))
			for i, d := range body.QueueData {
				rows = append(rows, table.Row{h.Index + int64(i), d.PhysicOffset, d.PhysicSize, d.TagsCode, d.Eval})
			}
			printTable(a.out, table.Row{"INDEX", "COMMITLOG OFFSET", "SIZE", "TAGS CODE", "EVAL"}, rows)
			if remark != "" {
				_, err = fmt.Fprintln(a.out, remark)
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&h.Topic, "topic", "t", "", "topic")
	f.Int32VarP(&h.QueueID, "queue", "q", 0, "queue id")
	f.Int64VarP(&h.Index, "index", "i", 0, "first queue index (offset)")
	f.Int32VarP(&h.Count, "count", "c", 10, "how many units")
	f.StringVarP(&addr, "broker", "b", "", "broker node address (default: the first broker group serving the topic)")
	f.StringVarP(&h.ConsumerGroup, "consumer", "g", "", "consumer group: show its subscription and each unit's filter verdict")
	required(cmd, "topic", "queue", "index")
	return cmd
}
