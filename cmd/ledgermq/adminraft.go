package main

// `ledgermq admin raft …`: a broker group's raft membership.
//
//	status           every member's role, term, log positions and lag
//	transfer-leader  hand leadership to a member (or any caught-up one)
//	remove-node      remove a member from the configuration
//	add-node         add a node as a non-voter, wait until it has caught
//	                 up, promote it to voter
//	replace-node     rebuild a member that cannot start from its files:
//	                 remove it, move its data aside (on this host), let it
//	                 start empty, add it back as a non-voter, wait until it
//	                 has caught up (by snapshot when the leader's log no
//	                 longer reaches back), promote it
//
// replace-node never deletes data and never lets an emptied node vote
// before it has caught up: a voter that forgot entries it acknowledged
// could help a minority that lacks them look like a majority.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/protocol"
)

// catchUpSlack is how many raft entries behind the leader's commit index a
// non-voter may be when it is promoted.
const catchUpSlack = 16

func newAdminRaftCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "raft", Short: "A broker group's raft members: status, leadership, add, remove, replace"}
	var group string
	cmd.PersistentFlags().StringVar(&group, "group", "", "broker group (brokerName); default: the only one")
	cmd.AddCommand(newRaftStatusCmd(af, &group), newRaftTransferCmd(af, &group), newRaftRemoveCmd(af, &group),
		newRaftAddCmd(af, &group), newRaftReplaceCmd(af, &group))
	return cmd
}

// groupLeader resolves the group and its leader's view.
func (a *admin) groupLeader(ctx context.Context, group string) (string, protocol.RaftStatus, error) {
	return a.c.GroupLeader(ctx, group)
}

// withLeader is a verb's RunE that opens an admin run and resolves the
// group and its leader before calling f.
func (af *adminFlags) withLeader(group *string, f func(ctx context.Context, a *admin, g string, ls protocol.RaftStatus, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, ctx, cancel, err := af.open(cmd)
		if err != nil {
			return err
		}
		defer cancel()
		defer a.Close()
		g, ls, err := a.groupLeader(ctx, *group)
		if err != nil {
			return err
		}
		return f(ctx, a, g, ls, args)
	}
}

// memberRow is one line of `raft status`.
type memberRow = client.MemberStatus

func newRaftStatusCmd(af *adminFlags, group *string) *cobra.Command {
	return &cobra.Command{
		Use: "status", Short: "Every member's role, term, log positions and lag behind the leader", Args: cobra.NoArgs,
		RunE: af.withLeader(group, func(ctx context.Context, a *admin, g string, ls protocol.RaftStatus, _ []string) error {
			rows := a.c.RaftMembers(ctx, ls)
			// Each member's format versions and replica verifier, asked of
			// the member itself.
			views := map[string]protocol.RaftStatus{ls.Node: ls}
			for _, m := range ls.Members {
				if m.ID != ls.Node {
					if st, err := a.c.RaftStatus(ctx, m.ClientAddr); err == nil {
						views[m.ID] = st
					}
				}
			}
			if a.json {
				verifiers := map[string]any{}
				for id, st := range views {
					verifiers[id] = map[string]any{"formatVersion": st.FormatVersion, "minFormatVersion": st.MinFormatVersion,
						"maxFormatVersion": st.MaxFormatVersion, "verifier": st.Verifier}
				}
				return printJSON(a.out, map[string]any{"group": g, "leader": ls.Node, "term": ls.Term, "members": rows, "verifiers": verifiers})
			}
			defer printVerifiers(a, ls, views)
			fmt.Fprintf(a.out, "group %s: leader %s, term %d\n", g, ls.Node, ls.Term)
			var trows []table.Row
			for _, r := range rows {
				voter := "voter"
				if !r.Voter {
					voter = "non-voter"
				}
				if r.Error != "" {
					trows = append(trows, table.Row{r.ID, voter, r.Role, "-", "-", "-", "-", "-", r.ClientAddr, r.RaftAddr})
					continue
				}
				trows = append(trows, table.Row{r.ID, voter, r.Role, r.Term, r.LastIndex, r.CommitIndex, r.AppliedIndex, r.Lag, r.ClientAddr, r.RaftAddr})
			}
			printTable(a.out, table.Row{"NODE", "SUFFRAGE", "ROLE", "TERM", "LAST", "COMMIT", "APPLIED", "LAG", "CLIENT", "RAFT"}, trows)
			return nil
		}),
	}
}

// printVerifiers prints each member's format versions and what its replica
// verifier found.
func printVerifiers(a *admin, ls protocol.RaftStatus, views map[string]protocol.RaftStatus) {
	var rows []table.Row
	var mismatches []string
	for _, m := range ls.Members {
		st, ok := views[m.ID]
		if !ok || st.Verifier == nil {
			rows = append(rows, table.Row{m.ID, "-", "-", "-", "-", "-", "-"})
			continue
		}
		v := st.Verifier
		rows = append(rows, table.Row{m.ID, st.FormatVersion, fmt.Sprintf("%d-%d", st.MinFormatVersion, st.MaxFormatVersion),
			v.Matched, v.Mismatched, v.Skipped, v.LastTo})
		if v.LastMismatch != "" {
			mismatches = append(mismatches, m.ID+": "+v.LastMismatch)
		}
	}
	fmt.Fprintln(a.out)
	printTable(a.out, table.Row{"NODE", "FORMAT", "SUPPORTS", "VERIFIED", "MISMATCHED", "SKIPPED", "VERIFIED TO"}, rows)
	for _, m := range mismatches {
		fmt.Fprintln(a.out, "diverged", m)
	}
}

func newRaftTransferCmd(af *adminFlags, group *string) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use: "transfer-leader", Short: "Hand the group's leadership to a member (--to), or to the most caught-up follower", Args: cobra.NoArgs,
		RunE: af.withLeader(group, func(ctx context.Context, a *admin, g string, ls protocol.RaftStatus, _ []string) error {
			_, now, err := a.c.TransferLeader(ctx, g, to)
			if err != nil {
				return err
			}
			return a.report(map[string]any{"group": g, "from": ls.Node, "to": now.Node, "term": now.Term},
				"group %s: leadership moved from %s to %s (term %d)\n", g, ls.Node, now.Node, now.Term)
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the member to lead (default: the most caught-up follower)")
	return cmd
}

// report prints v as JSON, or the formatted line for people.
func (a *admin) report(v any, format string, args ...any) error {
	if a.json {
		return printJSON(a.out, v)
	}
	_, err := fmt.Fprintf(a.out, format, args...)
	return err
}

func newRaftRemoveCmd(af *adminFlags, group *string) *cobra.Command {
	return &cobra.Command{
		Use: "remove-node NODE", Short: "Remove a member from the group's configuration (not the leader)", Args: cobra.ExactArgs(1),
		RunE: af.withLeader(group, func(ctx context.Context, a *admin, g string, ls protocol.RaftStatus, args []string) error {
			if err := a.removeNode(ctx, ls, args[0]); err != nil {
				return err
			}
			return a.report(map[string]any{"group": g, "removed": args[0]}, "group %s: %s removed\n", g, args[0])
		}),
	}
}

func (a *admin) removeNode(ctx context.Context, ls protocol.RaftStatus, node string) error {
	return a.c.RemoveNode(ctx, ls.Group, node)
}

func newRaftAddCmd(af *adminFlags, group *string) *cobra.Command {
	var raftAddr, clientAddr string
	cmd := &cobra.Command{
		Use:   "add-node NODE --raft-addr IP:PORT --client-addr IP:PORT",
		Short: "Add a node as a non-voter, wait until it has caught up, then promote it to voter",
		Args:  cobra.ExactArgs(1),
		RunE: af.withLeader(group, func(ctx context.Context, a *admin, g string, ls protocol.RaftStatus, args []string) error {
			if raftAddr == "" || clientAddr == "" {
				return fmt.Errorf("%w: add-node needs --raft-addr and --client-addr", errAdmin)
			}
			st, err := a.addAndPromote(ctx, g, ls, protocol.RaftMember{ID: args[0], RaftAddr: raftAddr, ClientAddr: clientAddr})
			if err != nil {
				return err
			}
			return a.report(map[string]any{"group": g, "added": args[0], "appliedIndex": st.AppliedIndex},
				"group %s: %s added and promoted to voter (applied index %d)\n", g, args[0], st.AppliedIndex)
		}),
	}
	cmd.Flags().StringVar(&raftAddr, "raft-addr", "", "the node's raft address")
	cmd.Flags().StringVar(&clientAddr, "client-addr", "", "the node's client-facing address (to follow its catch-up)")
	return cmd
}

// addAndPromote adds m as a non-voter (unless it is one already), waits
// until it has caught up, and promotes it (client.Admin.AddNode), printing
// progress for people.
func (a *admin) addAndPromote(ctx context.Context, group string, _ protocol.RaftStatus, m protocol.RaftMember) (protocol.RaftStatus, error) {
	st, err := a.c.AddNode(ctx, group, m, client.AddNodeOptions{Slack: catchUpSlack, Progress: a.progress})
	if err != nil {
		return st, fmt.Errorf("%w: %w", errAdmin, err)
	}
	return st, nil
}

// progress prints a step for people (not with --output json).
func (a *admin) progress(format string, args ...any) {
	if !a.json {
		fmt.Fprintf(a.out, format, args...)
	}
}

func newRaftReplaceCmd(af *adminFlags, group *string) *cobra.Command {
	var dataDir, devDir, raftAddr, clientAddr string
	cmd := &cobra.Command{
		Use:   "replace-node NODE (--data-dir DIR | --dev-dir DIR)",
		Short: "Rebuild a member that cannot start from its files, from the rest of the group",
		Long: "replace-node rebuilds a member whose raft log or store cannot be read: it removes the node from\n" +
			"the group's configuration, moves its data directory aside (to DIR.replaced-<time>; nothing is\n" +
			"deleted), leaves an empty directory that tells the node not to bootstrap, waits for the node to\n" +
			"start again (`ledgermq dev --restart` does that; otherwise start it yourself), adds it back as a\n" +
			"non-voter, waits until it has caught up and promotes it to voter. Run it on the node's host:\n" +
			"--data-dir is the node's data directory (storePathRootDir), or --dev-dir the directory of a\n" +
			"`ledgermq dev` cluster. The node must be stopped or failing to start; the leader cannot be\n" +
			"replaced (transfer leadership first). Run it again to resume after an interruption.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node := args[0]
			if (dataDir == "") == (devDir == "") {
				return fmt.Errorf("%w: give the node's --data-dir, or the --dev-dir of a dev cluster", errAdmin)
			}
			if devDir != "" {
				cf, err := devcluster.ReadFile(devDir)
				if err != nil {
					return err
				}
				for _, n := range cf.Nodes {
					if n.ID == node {
						dataDir, raftAddr, clientAddr = n.Dir, firstNonEmpty(raftAddr, n.Raft), firstNonEmpty(clientAddr, n.Addr)
					}
				}
				if dataDir == "" {
					return fmt.Errorf("%w: %s names no node %s", errAdmin, filepath.Join(devDir, devcluster.FileName), node)
				}
				if f := cmd.Flag("namesrv"); f == nil || !f.Changed {
					// The dev cluster's name server, unless -n names one
					// (NAMESRV_ADDR and the default do not).
					af.namesrv = cf.Namesrv
				}
			}
			a, ctx, cancel, err := af.open(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			defer a.Close()
			r := &replacement{admin: a, node: node, dataDir: dataDir, member: protocol.RaftMember{ID: node, RaftAddr: raftAddr, ClientAddr: clientAddr}}
			return r.run(ctx, *group)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "the node's data directory (on this host)")
	f.StringVar(&devDir, "dev-dir", "", "the `DIR` of a cluster run by ledgermq dev (its cluster.json names the node's data directory)")
	f.StringVar(&raftAddr, "raft-addr", "", "the node's raft address, when it is no longer a member (resuming)")
	f.StringVar(&clientAddr, "client-addr", "", "the node's client-facing address, when it is no longer a member (resuming)")
	return cmd
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// replacement is one run of replace-node.
type replacement struct {
	*admin
	node, dataDir string
	member        protocol.RaftMember
}

func (r *replacement) run(ctx context.Context, group string) error {
	g, ls, err := r.groupLeader(ctx, group)
	if err != nil {
		return err
	}
	if ls.Node == r.node {
		return fmt.Errorf("%w: %s leads group %s; run `ledgermq admin raft transfer-leader` first", errAdmin, r.node, g)
	}
	cur, isMember := ls.Member(r.node)
	if isMember {
		r.member.RaftAddr, r.member.ClientAddr = cur.RaftAddr, firstNonEmpty(cur.ClientAddr, r.member.ClientAddr)
	}
	if r.member.RaftAddr == "" || r.member.ClientAddr == "" {
		return fmt.Errorf("%w: %s is not a member of %s; to resume, give its --raft-addr and --client-addr", errAdmin, r.node, g)
	}
	r.progress("replacing %s of group %s (raft %s, client %s); leader %s, term %d\n", r.node, g, r.member.RaftAddr, r.member.ClientAddr, ls.Node, ls.Term)

	aside := ""
	if _, err := os.Stat(filepath.Join(r.dataDir, dledger.JoinMarker)); err == nil {
		// Resuming: the data was moved aside by an earlier run.
		if isMember && cur.Voter {
			return r.report(map[string]any{"group": g, "replaced": r.node}, "%s is a voter of %s again already\n", r.node, g)
		}
		r.progress("  1/4 %s was removed and emptied earlier (%s holds %s)\n", r.node, r.dataDir, dledger.JoinMarker)
	} else {
		// The node must not be running: its store lock must be free. A
		// node that fails at start-up holds it only briefly.
		if err := r.waitStopped(ctx); err != nil {
			return err
		}
		// Out of the configuration before its files go: from here on its
		// (possibly incomplete) log counts for nothing.
		if isMember {
			if err := r.removeNode(ctx, ls, r.node); err != nil {
				return fmt.Errorf("remove %s: %w", r.node, err)
			}
			r.progress("  1/4 removed %s from the configuration\n", r.node)
		}
		// Its data moved aside; an empty directory that does not bootstrap.
		if aside, err = r.prepare(ctx); err != nil {
			return err
		}
		r.progress("  2/4 moved %s aside to %s\n", r.dataDir, aside)
	}
	r.progress("  3/4 waiting for %s to start empty (ledgermq dev --restart starts it; otherwise start it now)\n", r.node)
	if err := r.waitServing(ctx); err != nil {
		return err
	}
	if _, ls, err = r.groupLeader(ctx, g); err != nil {
		return err
	}
	st, err := r.addAndPromote(ctx, g, ls, r.member)
	if err != nil {
		return err
	}
	r.progress("  4/4 %s is a voter again (applied index %d)\n", r.node, st.AppliedIndex)
	return r.report(map[string]any{"group": g, "replaced": r.node, "appliedIndex": st.AppliedIndex, "oldData": aside},
		"%s replaced; its old data is in %s: delete it once you are satisfied\n", r.node, firstNonEmpty(aside, "the directory an earlier run named"))
}

// waitStopped waits until nothing holds the node's store lock.
func (r *replacement) waitStopped(ctx context.Context) error {
	return r.retryRunning(ctx, func() error {
		_, err := os.Stat(r.dataDir)
		if err != nil {
			return fmt.Errorf("%w: data directory: %w", errAdmin, err)
		}
		if running, err := storeLocked(r.dataDir); err != nil || !running {
			return err
		}
		return dledger.ErrNodeRunning
	})
}

// prepare moves the data aside, retrying while a restarting node holds it.
func (r *replacement) prepare(ctx context.Context) (string, error) {
	var aside string
	err := r.retryRunning(ctx, func() error {
		var err error
		aside, err = dledger.PrepareRejoin(r.dataDir, time.Now())
		return err
	})
	return aside, err
}

// retryRunning calls f until it returns anything but ErrNodeRunning.
func (r *replacement) retryRunning(ctx context.Context, f func() error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	warned := false
	for {
		err := f()
		if !errors.Is(err, dledger.ErrNodeRunning) {
			return err
		}
		if !warned {
			r.progress("  %s is running; waiting for it to stop (stop it, or let it fail)\n", r.node)
			warned = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s is still running (%s locked): stop it first", errAdmin, r.node, r.dataDir)
		case <-tick.C:
		}
	}
}

// waitServing waits until the node answers RAFT_STATUS.
func (r *replacement) waitServing(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := r.raftStatus(ctx, r.member.ClientAddr); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s did not start at %s in time; start it and run replace-node again", errAdmin, r.node, r.member.ClientAddr)
		case <-tick.C:
		}
	}
}

// storeLocked reports whether a process holds the node's store lock.
func storeLocked(dataDir string) (bool, error) {
	return dledger.StoreLocked(dataDir)
}
