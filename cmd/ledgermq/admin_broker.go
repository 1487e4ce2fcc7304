package main

// `ledgermq admin broker drain|undrain NODE` and `ledgermq admin cluster
// rolling-restart`: maintenance of one node and of a whole group.
//
// rolling-restart restarts the group's nodes one at a time through a
// supervisor (client.RollingRestart has the sequence):
//
//	--dev DIR             the nodes of `ledgermq dev --restart --dir DIR`:
//	                      SIGTERM to the node's pid (from cluster.json), dev
//	                      starts it again from the binary it was started
//	                      with (rebuild it in place to upgrade)
//	--restart-cmd 'CMD'   any supervisor: CMD runs under sh -c with {node},
//	                      {addr} and {raft} replaced, and returns once the
//	                      node's new process runs (e.g. systemctl restart
//	                      ledgermq@{node})

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/protocol"
)

// rollingRestartTimeout bounds a rolling restart unless --timeout is given.
const rollingRestartTimeout = 30 * time.Minute

func newAdminBrokerCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "broker", Short: "One broker node: drain it before maintenance, undrain it after"}
	var group string
	cmd.PersistentFlags().StringVar(&group, "group", "", "broker group (brokerName); default: the only one")
	verb := func(use, short string, drain bool) *cobra.Command {
		return &cobra.Command{
			Use: use + " NODE", Short: short, Args: cobra.ExactArgs(1),
			RunE: af.run(func(ctx context.Context, a *admin, args []string) error {
				if err := a.c.Drain(ctx, group, args[0], drain); err != nil {
					return err
				}
				// A drained leader hands over: the next one may still be
				// being elected.
				g, ls, err := a.c.WaitGroupLeader(ctx, group)
				if err != nil {
					return err
				}
				return a.report(map[string]any{"group": g, "node": args[0], "drained": drain, "leader": ls.Node},
					"group %s: %s %s; leader %s\n", g, args[0], map[bool]string{true: "drained", false: "undrained"}[drain], ls.Node)
			}),
		}
	}
	cmd.AddCommand(
		verb("drain", "Move leadership away from NODE and keep it from leading until undrained (it keeps serving as a follower)", true),
		verb("undrain", "Let NODE campaign and lead again", false))
	return cmd
}

func newRollingRestartCmd(af *adminFlags) *cobra.Command {
	var (
		group, devDir, restartCmd string
		o                         client.RollingRestartOptions
	)
	cmd := &cobra.Command{
		Use:   "rolling-restart (--dev DIR | --restart-cmd CMD)",
		Short: "Restart every node of a group one at a time: drain, restart, wait caught up, undrain",
		Long: "rolling-restart restarts the nodes of a broker group one at a time, followers first and the leader\n" +
			"last: drain the node (leadership moves away; it keeps forwarding sends), wait --route-wait when it\n" +
			"led (the standard RocketMQ client re-reads routes every 30 s), restart it through --dev DIR (the\n" +
			"nodes of `ledgermq dev --restart`) or --restart-cmd CMD ({node}, {addr}, {raft} replaced; it must\n" +
			"return once the new process runs), wait until it has caught up, undrain it, go on.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (devDir == "") == (restartCmd == "") {
				return fmt.Errorf("%w: give exactly one of --dev DIR and --restart-cmd CMD", errAdmin)
			}
			if !cmd.Flags().Changed("timeout") {
				af.timeout = rollingRestartTimeout
			}
			restart := templateRestarter(restartCmd)
			if devDir != "" {
				restart = devRestarter(devDir)
			}
			return af.run(func(ctx context.Context, a *admin, _ []string) error {
				if !a.json {
					o.Progress = func(format string, args ...any) { fmt.Fprintf(a.out, format, args...) }
				}
				steps, err := a.c.RollingRestart(ctx, group, restart, o)
				if a.json {
					if perr := printJSON(a.out, steps); perr != nil && err == nil {
						err = perr
					}
				} else if err == nil {
					fmt.Fprintf(a.out, "rolling restart done: %d nodes\n", len(steps))
				}
				return err
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&group, "group", "", "broker group (brokerName); default: the only one")
	f.StringVar(&devDir, "dev", "", "restart the nodes of the dev cluster in `DIR` (run with dev --restart)")
	f.StringVar(&restartCmd, "restart-cmd", "", "shell command restarting one node ({node}, {addr}, {raft} replaced)")
	f.DurationVar(&o.RouteWait, "route-wait", 35*time.Second,
		"how long a drained former leader keeps forwarding before its restart (0 when every client is ledgermq's)")
	f.Uint64Var(&o.Slack, "slack", client.DefaultCatchUpSlack, "raft entries behind the leader a restarted node may be")
	return cmd
}

// templateRestarter runs tmpl under sh -c for each node.
func templateRestarter(tmpl string) client.Restarter {
	return func(ctx context.Context, m protocol.RaftMember) error {
		line := strings.NewReplacer("{node}", m.ID, "{addr}", m.ClientAddr, "{raft}", m.RaftAddr).Replace(tmpl)
		out, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", line, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
}

// devRestarter stops a node of the dev cluster in dir with SIGTERM and
// waits until dev has started it again (cluster.json names a new live pid).
func devRestarter(dir string) client.Restarter {
	return func(ctx context.Context, m protocol.RaftMember) error {
		f, err := devcluster.ReadFile(dir)
		if err != nil {
			return err
		}
		var old int
		for _, n := range f.Nodes {
			if n.ID == m.ID {
				old = n.PID
			}
		}
		if old == 0 || !devcluster.Alive(old) {
			return fmt.Errorf("%w: %s has no running process in %s", errAdmin, m.ID, dir)
		}
		if err := syscall.Kill(old, syscall.SIGTERM); err != nil {
			return fmt.Errorf("stopping %s (pid %d): %w", m.ID, old, err)
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: dev did not start %s again (is it running with --restart?): %w", errAdmin, m.ID, ctx.Err())
			case <-t.C:
			}
			if f, err = devcluster.ReadFile(dir); err != nil {
				continue
			}
			for _, n := range f.Nodes {
				if n.ID == m.ID && n.PID != 0 && n.PID != old && devcluster.Alive(n.PID) && !devcluster.Alive(old) {
					return nil
				}
			}
		}
	}
}
