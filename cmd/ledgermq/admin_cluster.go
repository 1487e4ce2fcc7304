package main

// `ledgermq admin cluster …` (mqadmin: clusterList, brokerStatus) and
// `cluster health`, the check deploy scripts and rolling restarts wait on:
// it exits non-zero, listing what is wrong, until every broker group has a
// leader, every member answers RAFT_STATUS as a voter within --max-lag of
// the leader's commit index, and every name server lists the leader as
// brokerId 0. With --wait it polls until then or --timeout.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

// errUnhealthy is cluster health's failure: the cluster answered, and is
// not healthy.
var errUnhealthy = errors.New("cluster unhealthy")

func newAdminClusterCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "The cluster: every node's role, term and lag; broker runtime; health; topic and group stats"}
	cmd.AddCommand(newClusterListCmd(af, "list"), newBrokerStatusCmd(af, "status"), newBrokerConfigCmd(af, "config"), newClusterHealthCmd(af), newRollingRestartCmd(af),
		newStatsAllCmd(af, "stats"), newBrokerConsumeStatsCmd(af, "consume-stats"))
	return cmd
}

func newClusterListCmd(af *adminFlags, use string) *cobra.Command {
	var cluster string
	var interval int
	cmd := &cobra.Command{
		Use: use, Short: "One line per node: cluster, broker group, brokerId, address, raft role, term, applied index, lag", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if interval > 0 {
				return fmt.Errorf("%w: printing again every -i seconds is not served: run the command under watch -n %d", errAdmin, interval)
			}
			all, err := a.c.ClusterList(ctx)
			if err != nil {
				return err
			}
			nodes := []client.MemberStatus{}
			for _, n := range all {
				if cluster == "" || n.Cluster == cluster {
					nodes = append(nodes, n)
				}
			}
			rows := make([]table.Row, 0, len(nodes))
			for _, n := range nodes {
				bid := any(n.BrokerID)
				if n.BrokerID < 0 {
					bid = "-"
				}
				if n.Error != "" {
					rows = append(rows, table.Row{n.Cluster, n.BrokerName, bid, n.ID, n.ClientAddr, n.Role, "-", "-", "-", "-"})
					continue
				}
				rows = append(rows, table.Row{n.Cluster, n.BrokerName, bid, n.ID, n.ClientAddr, n.Role, n.Term, n.AppliedIndex, n.Lag, suffrage(n.Voter)})
			}
			return a.emit(map[string]any{"nodes": nodes}, table.Row{"CLUSTER", "BROKER", "BID", "NODE", "ADDR", "ROLE", "TERM", "APPLIED", "LAG", "SUFFRAGE"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&cluster, "cluster", "c", "", "only this cluster")
	if mqadminVerb(use) {
		mqNoEffect(cmd.Flags(), use, "moreStats", "m", false, "more columns")
		cmd.Flags().IntVarP(&interval, "interval", "i", 0, "mqadmin's: print again every N seconds (not served)")
	}
	return cmd
}

func suffrage(voter bool) string {
	if voter {
		return "voter"
	}
	return "non-voter"
}

func newBrokerStatusCmd(af *adminFlags, use string) *cobra.Command {
	return newNodeTableCmd(af, use, "A broker node's runtime table (-b addr), or every node's (-c cluster, or all)",
		func(ctx context.Context, a *admin, addr string) (map[string]string, error) {
			return a.c.BrokerRuntime(ctx, addr)
		})
}

func newBrokerConfigCmd(af *adminFlags, use string) *cobra.Command {
	return newNodeTableCmd(af, use, "A broker node's effective settings (-b addr), or every node's (-c cluster, or all); secrets show as (set)",
		func(ctx context.Context, a *admin, addr string) (map[string]string, error) {
			return a.c.BrokerConfig(ctx, addr)
		})
}

// newNodeTableCmd is a verb that prints a key/value table fetched from one
// broker node (-b), or from every node of a cluster (-c) or of all.
func newNodeTableCmd(af *adminFlags, use, short string, fetch func(context.Context, *admin, string) (map[string]string, error)) *cobra.Command {
	var addr, cluster string
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			addrs := []string{addr}
			if addr == "" {
				nodes, err := a.c.ClusterList(ctx)
				if err != nil {
					return err
				}
				addrs = addrs[:0]
				for _, n := range nodes {
					if (cluster == "" || n.Cluster == cluster) && n.ClientAddr != "" {
						addrs = append(addrs, n.ClientAddr)
					}
				}
			}
			out := map[string]map[string]string{}
			var rows []table.Row
			for _, ad := range addrs {
				kv, err := fetch(ctx, a, ad)
				if err != nil {
					return err
				}
				out[ad] = kv
				keys := make([]string, 0, len(kv))
				for k := range kv {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					rows = append(rows, table.Row{ad, k, kv[k]})
				}
			}
			return a.emit(out, table.Row{"BROKER", "KEY", "VALUE"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&addr, "broker-addr", "b", "", "one broker node")
	cmd.Flags().StringVarP(&cluster, "cluster", "c", "", "every node of this cluster")
	return cmd
}

func newClusterHealthCmd(af *adminFlags) *cobra.Command {
	var wait bool
	var maxLag uint64
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit non-zero, saying why, unless every group has a leader and every member votes and is caught up",
		Args:  cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				rep, err := a.c.Health(ctx, maxLag)
				if err == nil && rep.Healthy {
					return a.report(rep, "healthy: %d members, every group led, every member a caught-up voter\n", len(rep.Members))
				}
				if !wait || ctx.Err() != nil {
					return a.unhealthy(rep, err)
				}
				select {
				case <-ctx.Done():
					return a.unhealthy(rep, err)
				case <-tick.C:
				}
			}
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&wait, "wait", false, "poll until healthy or --timeout")
	f.Uint64Var(&maxLag, "max-lag", client.DefaultCatchUpSlack, "most raft entries a member may lag the leader's commit index")
	f.DurationVar(&interval, "interval", 500*time.Millisecond, "poll interval with --wait")
	return cmd
}

// unhealthy prints the problems and returns errUnhealthy (or the error
// that kept the check from running).
func (a *admin) unhealthy(rep *client.HealthReport, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", errUnhealthy, err)
	}
	if a.json {
		if perr := printJSON(a.out, rep); perr != nil {
			return perr
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(a.out, "unhealthy: %s\n", p)
		}
	}
	return fmt.Errorf("%w: %d problem(s), first: %s", errUnhealthy, len(rep.Problems), rep.Problems[0])
}
