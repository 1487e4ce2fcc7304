//go:build unix

package main

// `ledgermq jepsen run` and `ledgermq jepsen replay PLAN`: the chaos
// harness of package jepsen, running its own name server and broker
// processes of this binary. Progress lines while it runs, a summary, and
// as the last line of stdout exactly one
//
//	verdict: PASS|FAIL acked=N lost=N unexpected=N duplicates=N divergent=N max-unavailable-ms=N
//
// (with --exactly-once followed by exactly-once-duplicates=N, then the
// parts of --workload pop and of two or more groups; jepsen/doc.go).
// A FAIL verdict makes the command exit 1 (the error on stderr names the
// report).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
	"github.com/ledgermq/ledgermq/jepsen"
)

type jepsenFlags struct {
	dir, logLevel string
	keep          bool
	producers     int
	consumers     int
	interval      time.Duration
	nodeConf      []string
	workload      string
	tls, acl      bool
	exactlyOnce   bool
}

func (f *jepsenFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "run directory (kept); default a temporary one, removed unless --keep")
	fl.BoolVar(&f.keep, "keep", false, "keep the temporary run directory")
	fl.StringVar(&f.logLevel, "log-level", "warn", "log level of the name server and the nodes")
	fl.IntVar(&f.producers, "producers", 4, "concurrent producers")
	fl.IntVar(&f.consumers, "consumers", 2, "members of the consumer group")
	fl.DurationVar(&f.interval, "interval", 20*time.Millisecond, "each producer sends at most one message per interval")
	fl.StringVar(&f.workload, "workload", "queue", "workloads, comma-separated: queue (always runs), txn (transactional producers), register (consumer offsets as a register, checked by porcupine), pop (RocketMQ 5 SimpleConsumers over the nodes' gRPC ports: receive, ack, change the invisible duration)")
	fl.BoolVar(&f.tls, "tls", false, "run every link over TLS (a local CA in the run directory; raft links mutual)")
	fl.BoolVar(&f.acl, "acl", false, "RocketMQ's plain ACL on every node and the name server; the workloads sign as a publish/subscribe account, the harness as an admin")
	fl.StringArrayVar(&f.nodeConf, "node-conf", nil, "KEY=VALUE added to every node's broker config (repeatable), e.g. store.flush_disk_type=SYNC_FLUSH")
	fl.BoolVar(&f.exactlyOnce, "exactly-once", false, exactlyOnceUsage)
}

// exactlyOnceUsage is the --exactly-once flag's help.
const exactlyOnceUsage = "fail the verdict when a value is stored twice within one broker group (the nodes' duplicate window, dedup.window, " +
	"must cover every retry of the producers; a copy in another group stays allowed)"

func newJepsenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jepsen",
		Short: "Chaos-test a local group: faults, an at-least-once workload, checkers and a report",
		Long: "jepsen starts a name server and a broker group as processes of this binary, every link\n" +
			"between them and to its clients through harness-owned proxies on 127.0.0.1, runs producers\n" +
			"and a consumer group through them while a seeded plan of faults is applied, heals, drains,\n" +
			"reads every replica, checks the history and writes report.html, history.jsonl and\n" +
			"results.json in the run directory.",
	}
	cmd.AddCommand(newJepsenRunCmd(), newJepsenReplayCmd(), newJepsenCheckCmd())
	return cmd
}

func newJepsenRunCmd() *cobra.Command {
	var (
		f        jepsenFlags
		nemeses  string
		total    time.Duration
		seed     int64
		nodes    int
		groups   int
		planOnly bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Generate a fault plan from --seed and run it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := jepsen.ParseNemeses(nemeses)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("seed") {
				seed = time.Now().UnixNano() % 1_000_000_000
			}
			if groups < 1 || groups > procs.MaxGroups {
				return fmt.Errorf("jepsen: --groups %d: want 1..%d", groups, procs.MaxGroups)
			}
			if groups == 1 && slices.Contains(ns, jepsen.NemGroupDown) {
				return fmt.Errorf("jepsen: --nemesis %s needs --groups 2 or more", jepsen.NemGroupDown)
			}
			plan := jepsen.GeneratePlanGroups(seed, groups, nodes, total, ns)
			if err := plan.Validate(); err != nil {
				return err
			}
			if planOnly {
				return printJSONPlan(cmd, plan)
			}
			return runJepsen(cmd, f, plan)
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&nemeses, "nemesis", "kill,pause,partition", "faults to draw from: "+strings.Join(jepsen.AllNemeses, ",")+", all or none; with --groups 2 or more also "+jepsen.NemGroupDown+" (a whole group stopped, then started)")
	fl.DurationVar(&total, "time", 60*time.Second, "length of the load (faults within it)")
	fl.Int64Var(&seed, "seed", 0, "seed of the fault plan (default: from the clock, printed)")
	fl.IntVar(&nodes, "nodes", 3, "nodes in each group (3 or 5)")
	fl.IntVar(&groups, "groups", 1, "broker groups of the cluster (broker-a, broker-b, …); the topic is on every group, each fault acts in one")
	fl.BoolVar(&planOnly, "plan-only", false, "print the plan as JSON and exit")
	return cmd
}

func newJepsenReplayCmd() *cobra.Command {
	var f jepsenFlags
	cmd := &cobra.Command{
		Use:   "replay PLAN",
		Short: "Run a plan file (a run directory's plan.json) again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := jepsen.ReadPlan(args[0])
			if err != nil {
				return err
			}
			return runJepsen(cmd, f, plan)
		},
	}
	f.add(cmd)
	return cmd
}

func newJepsenCheckCmd() *cobra.Command {
	var exactlyOnce bool
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Check a run directory's history.jsonl again (offline) and print the verdict",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := jepsen.ReadPlan(filepath.Join(args[0], "plan.json"))
			if err != nil {
				return err
			}
			f, err := os.Open(filepath.Join(args[0], "history.jsonl"))
			if err != nil {
				return err
			}
			defer f.Close()
			evs, err := jepsen.ReadHistory(f)
			if err != nil {
				return err
			}
			in := jepsen.CheckInput{}
			groups := procs.GroupNames(max(plan.Groups, 1))
			if len(groups) > 1 {
				in.Groups = map[string][]string{}
			}
			for g, name := range groups {
				for i := range plan.Nodes {
					in.Nodes = append(in.Nodes, procs.NodeID(g, i))
					if in.Groups != nil {
						in.Groups[name] = append(in.Groups[name], procs.NodeID(g, i))
					}
				}
			}
			// The CommitLog comparison needs the stopped nodes' files: take
			// the run's own finding.
			var prev struct{ Result *jepsen.Result }
			if data, err := os.ReadFile(filepath.Join(args[0], "results.json")); err == nil {
				_ = json.Unmarshal(data, &prev)
			}
			// Checked as the run was, unless --exactly-once says otherwise.
			in.ExactlyOnce = prev.Result != nil && prev.Result.ExactlyOnce
			if cmd.Flags().Changed("exactly-once") {
				in.ExactlyOnce = exactlyOnce
			}
			var res *jepsen.Result
			if in.Groups == nil {
				if prev.Result != nil {
					in.ReplicaCompare = prev.Result.ReplicaCompare
				}
				res = jepsen.Check(evs, in)
			} else {
				cmp := map[string]string{}
				if prev.Result != nil {
					for _, g := range prev.Result.Groups {
						cmp[g.Name] = g.ReplicaCompare
					}
				}
				res = jepsen.CheckGroups(evs, in, cmp)
			}
			out := cmd.OutOrStdout()
			fmt.Fprint(out, res.Summary())
			fmt.Fprintln(out, res.VerdictLine())
			if !res.Valid() {
				return jepsen.ErrVerdictFail
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&exactlyOnce, "exactly-once", false, exactlyOnceUsage+"; default: as the run was checked (results.json)")
	return cmd
}

func printJSONPlan(cmd *cobra.Command, plan jepsen.Plan) error {
	data, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
	return err
}

func runJepsen(cmd *cobra.Command, f jepsenFlags, plan jepsen.Plan) error {
	f.nodeConf = append(envNodeConf(), f.nodeConf...)
	for _, kv := range f.nodeConf {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(kv, "\n\r") {
			return fmt.Errorf("jepsen: --node-conf %q: want KEY=VALUE", kv)
		}
	}
	wl := jepsen.WorkloadConfig{Producers: f.producers, Consumers: f.consumers, Interval: f.interval, Seed: plan.Seed}
	for _, w := range strings.Split(f.workload, ",") {
		switch strings.TrimSpace(w) {
		case "", "queue":
		case "txn":
			wl.Txn = 2
		case "register":
			wl.Register = 3
		case "pop":
			wl.Pop = 3
		default:
			return fmt.Errorf("jepsen: --workload %q: want queue, txn, register, pop", w)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := f.dir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout()
	res, err := jepsen.Run(ctx, jepsen.RunConfig{
		Bin: exe, Dir: dir, Keep: f.keep, Plan: plan, LogLevel: f.logLevel, NodeConf: f.nodeConf, Out: out,
		Workload: wl, Security: jepsen.Security{TLS: f.tls, ACL: f.acl}, ExactlyOnce: f.exactlyOnce,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res.VerdictLine())
	if !res.Valid() {
		where := "run again with --keep to keep the report"
		if res.Dir != "" {
			where = "see " + filepath.Join(res.Dir, "report.html")
		}
		return fmt.Errorf("%w (%s)", jepsen.ErrVerdictFail, where)
	}
	return nil
}
