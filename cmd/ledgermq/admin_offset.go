package main

// `ledgermq admin offset reset` (mqadmin: resetOffsetByTime). Unlike
// mqadmin it previews by default: it lists each queue's current and new
// offset, and moves nothing until --execute is given, because a reset
// cannot be undone and a wrong timestamp skips or replays a backlog.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

func newAdminOffsetCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "offset", Short: "Consumer offsets: reset by time (dry run unless --execute)"}
	cmd.AddCommand(newOffsetResetCmd(af, "reset"))
	return cmd
}

// javaTimeLayout is mqadmin's yyyy-MM-dd#HH:mm:ss:SSS.
const javaTimeLayout = "2006-01-02#15:04:05:000"

// parseWhen reads a timestamp as mqadmin does: "now", milliseconds since
// the epoch (-1: the end of every queue), yyyy-MM-dd#HH:mm:ss:SSS in
// local time; RFC 3339 too. It returns milliseconds.
func parseWhen(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now.UnixMilli(), nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= -1 {
		return v, nil
	}
	for _, layout := range []string{javaTimeLayout, time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%w: timestamp %q: want now, milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or RFC 3339", errAdmin, s)
}

func newOffsetResetCmd(af *adminFlags, use string) *cobra.Command {
	var r client.ResetRequest
	var when string
	var force bool
	cmd := &cobra.Command{
		Use:   use,
		Short: "Move a group's offsets on a topic to a time; a dry run unless --execute",
		Args:  cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			ts, err := parseWhen(when, time.Now())
			if err != nil {
				return err
			}
			r.Timestamp, r.OnlyBackward = ts, !force
			resets, err := a.c.ResetOffsetByTime(ctx, r)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, map[string]any{"group": r.Group, "topic": r.Topic, "timestamp": ts, "executed": r.Execute, "queues": resets})
			}
			rows := make([]table.Row, 0, len(resets))
			for _, q := range resets {
				rows = append(rows, table.Row{q.BrokerName, q.QueueID, q.Old, q.New, q.New - q.Old})
			}
			printTable(a.out, table.Row{"BROKER", "QID", "OLD", "NEW", "MOVE"}, rows)
			if !r.Execute {
				return a.report(nil, "dry run: nothing changed; run again with --execute to reset %s on %s\n", r.Group, r.Topic)
			}
			return a.report(nil, "offsets of %s on %s reset\n", r.Group, r.Topic)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&r.Group, "group", "g", "", "consumer group")
	f.StringVarP(&r.Topic, "topic", "t", "", "topic")
	f.StringVarP(&when, "timestamp", "s", "", "now, milliseconds (-1: the end), or yyyy-MM-dd#HH:mm:ss:SSS")
	f.BoolVarP(&force, "force", "f", true, "move offsets forward too (false: only backward)")
	f.BoolVar(&r.Execute, "execute", false, "perform the reset (default: only show it)")
	required(cmd, "group", "topic", "timestamp")
	return cmd
}
