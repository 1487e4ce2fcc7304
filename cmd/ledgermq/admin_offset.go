package main

// `ledgermq admin offset reset|skip|clone` (mqadmin: resetOffsetByTime,
// skipAccumulatedMessage, cloneGroupOffset). Unlike mqadmin, reset and
// skip preview by default: they list each queue's current and new
// offset, and move nothing until --execute is given, because a reset
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
	cmd := &cobra.Command{Use: "offset", Short: "Consumer offsets: reset by time, skip to the end (dry runs unless --execute), clone"}
	cmd.AddCommand(newOffsetResetCmd(af, "reset"), newOffsetSkipCmd(af, "skip"), newCloneOffsetCmd(af, "clone"))
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
			return a.reset(ctx, r)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&r.Group, "group", "g", "", "consumer group")
	f.StringVarP(&r.Topic, "topic", "t", "", "topic")
	f.StringVarP(&when, "timestamp", "s", "", "now, milliseconds (-1: the end), or yyyy-MM-dd#HH:mm:ss:SSS")
	boolFlag(f, use, &force, "force", "f", true, "move offsets forward too (false: only backward)")
	f.BoolVar(&r.Execute, "execute", false, "perform the reset (default: only show it)")
	mqNoEffect(f, use, "cplus", "c", false, "reset a C++ client's offsets (the broker resets them for every client)")
	required(cmd, "group", "topic", "timestamp")
	return cmd
}

// reset runs r and prints each queue's move.
func (a *admin) reset(ctx context.Context, r client.ResetRequest) error {
	resets, err := a.c.ResetOffsetByTime(ctx, r)
	if err != nil {
		return err
	}
	if a.json {
		return printJSON(a.out, map[string]any{"group": r.Group, "topic": r.Topic, "timestamp": r.Timestamp, "executed": r.Execute, "queues": resets})
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
}

func newOffsetSkipCmd(af *adminFlags, use string) *cobra.Command {
	r := client.ResetRequest{Timestamp: -1}
	cmd := &cobra.Command{
		Use:   use,
		Short: "Move a group's offsets on a topic to the end of each queue, skipping its backlog; a dry run unless --execute",
		Args:  cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			return a.reset(ctx, r)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&r.Group, "group", "g", "", "consumer group")
	f.StringVarP(&r.Topic, "topic", "t", "", "topic")
	f.BoolVar(&r.Execute, "execute", false, "perform the skip (default: only show it)")
	mqNoEffect(f, use, "force", "f", true, "force (a skip always moves forward)")
	required(cmd, "group", "topic")
	return cmd
}

func newCloneOffsetCmd(af *adminFlags, use string) *cobra.Command {
	var src, dest, topic string
	cmd := &cobra.Command{
		Use: use, Short: "Give a group the committed offsets another group has on a topic", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			clones, err := a.c.CloneGroupOffset(ctx, src, dest, topic)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, map[string]any{"srcGroup": src, "destGroup": dest, "topic": topic, "queues": clones})
			}
			rows := make([]table.Row, 0, len(clones))
			for _, c := range clones {
				rows = append(rows, table.Row{c.BrokerName, c.QueueID, c.Offset})
			}
			printTable(a.out, table.Row{"BROKER", "QID", "OFFSET"}, rows)
			return a.report(nil, "offsets of %s on %s cloned to %s\n", src, topic, dest)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&src, "srcGroup", "s", "", "the group whose offsets are copied")
	f.StringVarP(&dest, "destGroup", "d", "", "the group that gets them")
	f.StringVarP(&topic, "topic", "t", "", "topic")
	mqNoEffect(f, use, "offline", "o", true, "the group or topic is offline (offsets are committed through raft either way)")
	required(cmd, "srcGroup", "destGroup", "topic")
	return cmd
}
