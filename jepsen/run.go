//go:build unix

package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

// Mechanism names how faults reach the network (the report says which
// ran).
const MechanismProxy = "proxy (harness-owned TCP proxies on 127.0.0.1 for every directed link)"

// RunConfig is one run of the harness.
type RunConfig struct {
	Bin  string // the ledgermq binary the processes run
	Dir  string // run directory; "" makes a temporary one
	Keep bool   // keep a temporary run directory
	Plan Plan
	// Workload sizes the load; NodeConf are extra KEY=VALUE lines of each
	// node's config; LogLevel is the processes' log level.
	Workload WorkloadConfig
	NodeConf []string
	LogLevel string
	// Security turns TLS and the ACL on for every process and client.
	Security Security
	// ExactlyOnce checks that no value was stored twice within one broker
	// group (CheckInput.ExactlyOnce): the nodes' duplicate window must
	// cover every retry of the producers.
	ExactlyOnce bool
	// Out gets the progress lines, the summary and the verdict line.
	Out io.Writer
	// Progress is the interval of progress lines (default 5 s).
	Progress time.Duration
}

// RunResult is what a run found and where its files are.
type RunResult struct {
	*Result
	Dir       string // "" once removed
	Mechanism string
	Security  Security
	// Unidentified counts the raft proxies' connections refused because
	// their sender could not be named (proxy_source.go).
	Unidentified int64
}

// Bounds of the phases after the load (each a bound, not a wait: the
// run moves on as soon as the condition holds).
const (
	startBound    = 90 * time.Second
	healBound     = 2 * time.Minute
	drainBound    = 2 * time.Minute
	convergeBound = time.Minute
	stopGrace     = 20 * time.Second
)

// Run starts the cluster, runs the workload under the plan, heals,
// drains, reads every replica, checks the history and writes the report.
// It returns an error when the run could not be carried out (the cluster
// never served, a file could not be written); a run that completes
// returns its Result, whose verdict may be FAIL.
func Run(ctx context.Context, cfg RunConfig) (*RunResult, error) {
	if err := cfg.Plan.Validate(); err != nil {
		return nil, err
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Progress <= 0 {
		cfg.Progress = 5 * time.Second
	}
	dir, temp := cfg.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "ledgermq-jepsen-")
		if err != nil {
			return nil, err
		}
		dir, temp = d, true
	} else {
		// A run directory is used once: its nodes' raft state names the
		// ports of the run that made it.
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("%w: run directory %s is not empty", ErrCluster, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	res := &RunResult{Dir: dir, Mechanism: MechanismProxy, Security: cfg.Security}
	defer func() {
		if temp && !cfg.Keep {
			os.RemoveAll(dir)
			res.Dir = ""
		}
	}()
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Out, "jepsen: "+format+"\n", args...) }
	if n := powerToMinority(&cfg.Plan, cfg.NodeConf); n > 0 {
		say("%d power faults on every node narrowed to the leader: the nodes run ASYNC_FLUSH, under which a power loss of most of a group may lose acknowledged sends (run with --node-conf store.flush_disk_type=SYNC_FLUSH for them)", n)
	}
	if err := WritePlan(filepath.Join(dir, "plan.json"), cfg.Plan); err != nil {
		return nil, err
	}
	shape := fmt.Sprintf("%d nodes", cfg.Plan.Nodes)
	if cfg.Plan.groups() > 1 {
		shape = fmt.Sprintf("%d groups of %d nodes", cfg.Plan.groups(), cfg.Plan.Nodes)
	}
	checks := ""
	if cfg.ExactlyOnce {
		checks = "; exactly-once checked"
	}
	say("run directory %s; %s; %d faults over %v; seed %d; network faults by %s; %s%s",
		dir, shape, len(cfg.Plan.Faults), time.Duration(cfg.Plan.Time), cfg.Plan.Seed, MechanismProxy, cfg.Security, checks)

	net := NewNet(uint64(cfg.Plan.Seed))
	defer net.Close()
	nodeConf := cfg.NodeConf
	if needsSyncReport(cfg.Plan) {
		nodeConf = append(slices.Clone(nodeConf), "store.sync_report=true")
	}
	c, err := NewCluster(ClusterConfig{Bin: cfg.Bin, Dir: dir, Nodes: cfg.Plan.Nodes, Groups: cfg.Plan.groups(), LogLevel: cfg.LogLevel, NodeConf: nodeConf,
		Security: cfg.Security, OwnDisks: needsOwnDisks(cfg.Plan), GRPC: cfg.Workload.Pop > 0}, net)
	if err != nil {
		return nil, err
	}
	if needsOwnDisks(cfg.Plan) {
		unmount, err := mountDisks(c)
		if err != nil {
			return nil, err
		}
		// After the processes stop (the defer below runs first), before
		// a temporary run directory is removed.
		defer func() {
			if err := unmount(); err != nil {
				say("%v", err)
			}
		}()
		say("each node's data directory is a tmpfs of %d MiB (disk-full faults)", DiskSize>>20)
	}
	stopped := false
	stopCluster := func() {
		if !stopped {
			stopped = true
			c.Stop(stopGrace)
		}
	}
	defer stopCluster()
	h, err := NewHistory(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	defer h.Close()

	sctx, cancel := context.WithTimeout(ctx, startBound)
	err = c.Start(sctx)
	cancel()
	if err != nil {
		return nil, err
	}
	if err := c.WriteFile(); err != nil {
		return nil, err
	}
	say("cluster serving; name server %s (clients via %s)", c.NamesrvAddr, c.ClientNamesrv)
	var sup *supervisor
	if needsOwnDisks(cfg.Plan) {
		sup = supervise(ctx, c, h, say)
	}

	mctx, stopMon := context.WithCancel(ctx)
	mon := &monitor{c: c, h: h}
	var monWG sync.WaitGroup
	monWG.Add(1)
	go func() { defer monWG.Done(); mon.run(mctx) }()
	defer func() { stopMon(); monWG.Wait() }()

	w := newWorkload(cfg.Workload, c, h)
	if err := w.createTopic(ctx); err != nil {
		return nil, err
	}
	if err := w.startConsumers(); err != nil {
		return nil, err
	}
	defer w.stopConsumers()
	w.startPop(w.cfg.Pop)
	h.Add(Event{Type: EvPhase, Kind: "load"})
	began := time.Now()
	if err := w.startProducers(); err != nil {
		return nil, err
	}
	defer w.stopProducers()

	var activeMu sync.Mutex
	active := map[string]string{} // group → fault
	nctx, stopNem := context.WithCancel(ctx)
	nem := &nemesis{c: c, h: h, leader: mon.leader, rng: rand.New(rand.NewPCG(uint64(cfg.Plan.Seed), 0x73746f726d)),
		log: say, active: func(g, s string) { activeMu.Lock(); active[g] = s; activeMu.Unlock() }, sup: sup}
	var nemWG sync.WaitGroup
	nemWG.Add(1)
	go func() { defer nemWG.Done(); nem.run(nctx, cfg.Plan, began) }()

	end := began.Add(time.Duration(cfg.Plan.Time))
	tick := time.NewTicker(cfg.Progress)
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
		case <-time.After(time.Until(end)):
			waiting = false
		case <-tick.C:
			activeMu.Lock()
			var faults []string
			for _, g := range slices.Sorted(maps.Keys(active)) {
				if active[g] != "" {
					faults = append(faults, active[g])
				}
			}
			activeMu.Unlock()
			say("%3.0fs/%v acked=%d failed=%d unknown=%d delivered=%d %s fault=%s",
				time.Since(began).Seconds(), time.Duration(cfg.Plan.Time), w.counts.ok.Load(), w.counts.failed.Load(),
				w.counts.unknown.Load(), w.counts.recv.Load(), mon.viewText(), orNone(strings.Join(faults, ",")))
		}
	}
	tick.Stop()
	stopNem()
	nemWG.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// Heal everything (each fault heals itself; this makes sure), then
	// stop the load and let the group recover.
	h.Add(Event{Type: EvPhase, Kind: "heal"})
	net.Heal()
	for _, id := range append(c.NodeIDs(), Namesrv) {
		if c.Running(id) {
			_ = c.Resume(id)
		} else if err := c.Restart(id); err != nil {
			say("restart %s: %v", id, err)
		}
	}
	if cfg.Plan.has(NemMember) {
		if err := c.EnsureMembers(ctx, h); err != nil {
			say("after healing, membership: %v", err)
		}
	}
	w.stopProducers()
	w.pop.drain()
	hctx, cancel := context.WithTimeout(ctx, healBound)
	err = c.WaitServing(hctx)
	cancel()
	if err != nil {
		say("after healing: %v", err)
	}

	// Drain: wait until the consumer group (and the POP group) has every
	// acknowledged value.
	h.Add(Event{Type: EvPhase, Kind: "drain"})
	var acked []string
	for _, e := range h.Events() {
		if e.Type == EvSend && e.Outcome == OK {
			acked = append(acked, e.Value)
		}
	}
	acked = append(acked, txnMustDeliver(h.Events())...)
	deadline := time.Now().Add(drainBound)
	for w.delivered(acked)+w.pop.missing(acked) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepUntil(ctx, time.Now().Add(250*time.Millisecond))
	}
	if n := w.delivered(acked); n > 0 {
		say("drain: %d acknowledged values not delivered after %v", n, drainBound)
	}
	if n := w.pop.missing(acked); n > 0 {
		say("drain: %d acknowledged values not received by the POP group after %v", n, drainBound)
	}
	// Then until deliveries stop (values of unknown sends stored after the
	// last acknowledged one, redeliveries), so that the gaps checker sees
	// a group that has caught up.
	quiet := time.Now().Add(30 * time.Second)
	for last := int64(-1); last != w.counts.recv.Load()+w.pop.deliveries() && time.Now().Before(quiet) && ctx.Err() == nil; {
		last = w.counts.recv.Load() + w.pop.deliveries()
		sleepUntil(ctx, time.Now().Add(2*time.Second))
	}
	w.stopConsumers()

	// Final read of every replica once they have applied the same entries.
	h.Add(Event{Type: EvPhase, Kind: "final-read"})
	cctx, cancel := context.WithTimeout(ctx, convergeBound)
	for !converged(c.Status(cctx, 2*time.Second), c) && cctx.Err() == nil {
		sleepUntil(cctx, time.Now().Add(250*time.Millisecond))
	}
	notConverged := cctx.Err() != nil
	cancel()
	in := CheckInput{Nodes: c.NodeIDs(), ExactlyOnce: cfg.ExactlyOnce}
	if c.Multi() {
		in.Groups = map[string][]string{}
		for _, g := range c.Groups {
			in.Groups[g] = c.GroupNodes(g)
		}
	}
	if err := finalRead(ctx, c, h); err != nil {
		in.NoFinalRead = err.Error()
	}
	finalOffsets(ctx, c, h)
	stopMon()
	monWG.Wait()
	stopCluster()
	if notConverged {
		say("replicas had not converged after %v", convergeBound)
	}
	groupCompare := map[string]string{}
	for _, g := range c.Groups {
		if _, err := devcluster.CompareCommitLogs(c.GroupFile(g).Nodes); err != nil {
			groupCompare[g] = err.Error()
		}
	}
	if err := h.Close(); err != nil {
		return nil, err
	}
	if c.Multi() {
		res.Result = CheckGroups(h.Events(), in, groupCompare)
	} else {
		in.ReplicaCompare = groupCompare[GroupName]
		res.Result = Check(h.Events(), in)
	}
	if res.Unidentified = net.Unidentified(); res.Unidentified > 0 {
		say("raft proxies refused %d connections whose sending node could not be named", res.Unidentified)
	}
	if err := writeResults(dir, res); err != nil {
		return nil, err
	}
	if err := res.Register.WriteVisualization(filepath.Join(dir, registerHTML)); err != nil {
		return nil, err
	}
	if err := WriteReport(filepath.Join(dir, "report.html"), cfg.Plan, h.Events(), res); err != nil {
		return nil, err
	}
	fmt.Fprint(cfg.Out, res.Summary())
	if !temp || cfg.Keep {
		say("report %s; replay with: ledgermq jepsen replay %s", filepath.Join(dir, "report.html"), filepath.Join(dir, "plan.json"))
	}
	return res, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func writeResults(dir string, res *RunResult) error {
	data, err := json.MarshalIndent(struct {
		Verdict      string   `json:"verdict"`
		Mechanism    string   `json:"mechanism"`
		Security     Security `json:"security"`
		Unidentified int64    `json:"unidentified_raft_connections"`
		Result       *Result  `json:"result"`
	}{res.VerdictLine(), res.Mechanism, res.Security, res.Unidentified, res.Result}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644)
}

// monitor polls every node's raft view, records changes and knows the
// current leader for the nemesis.
type monitor struct {
	c       *Cluster
	h       *History
	mu      sync.Mutex
	lead    map[string]string // group → leader
	term    map[string]uint64 // group → the highest term seen
	latest  map[string]devcluster.NodeStatus
	offsets map[string]int64 // node/queue → the committed offset last recorded
	rounds  int
}

const monitorEvery = 250 * time.Millisecond

func (m *monitor) run(ctx context.Context) {
	m.latest = map[string]devcluster.NodeStatus{}
	m.offsets = map[string]int64{}
	m.mu.Lock()
	m.lead, m.term = map[string]string{}, map[string]uint64{}
	m.mu.Unlock()
	tick := time.NewTicker(monitorEvery)
	defer tick.Stop()
	for {
		st := m.c.Status(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		lead, term := map[string]string{}, map[string]uint64{}
		for _, s := range st {
			g := m.c.GroupOf(s.ID)
			if s.Role == devcluster.RoleLeader && s.Term >= term[g] {
				lead[g], term[g] = s.ID, s.Term
			}
			prev, seen := m.latest[s.ID]
			if !seen || prev.Role != s.Role || (s.Term != 0 && prev.Term != s.Term) {
				m.h.Add(Event{Type: EvStatus, Node: s.ID, Role: s.Role, Term: s.Term, Leader: s.LeaderID, Group: m.c.eventGroup(s.ID)})
			}
			if s.Term != 0 || !seen || s.Role != prev.Role {
				m.latest[s.ID] = s
			}
		}
		m.mu.Lock()
		m.lead = lead
		for g, t := range term {
			m.term[g] = max(t, m.term[g])
		}
		m.mu.Unlock()
		if m.rounds++; m.rounds%2 == 0 {
			m.pollOffsets(ctx, st)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pollOffsets asks every answering node (at its own address) for the
// consumer group's committed offset of every queue and records those that
// changed.
func (m *monitor) pollOffsets(ctx context.Context, st []devcluster.NodeStatus) {
	for _, s := range st {
		if s.Role == devcluster.RoleDown || s.Role == "unreachable" {
			continue
		}
		offs, err := m.c.NodeOffsets(ctx, s.ID, ConsumerGroup, Topic, 500*time.Millisecond)
		if err != nil {
			continue // not answering
		}
		for q := range int32(queues) {
			v, ok := offs[q]
			if !ok {
				break // the topic not applied there yet
			}
			key := fmt.Sprintf("%s/%d", s.ID, q)
			if prev, ok := m.offsets[key]; !ok || prev != v {
				m.offsets[key] = v
				m.h.Add(Event{Type: EvOffset, Node: s.ID, Queue: q, Offset: v, Group: m.c.eventGroup(s.ID)})
			}
		}
	}
}

// finalOffsets records every node's committed offset of every queue
// once the replicas have converged: replicated metadata must agree.
func finalOffsets(ctx context.Context, c *Cluster, h *History) {
	for _, nd := range c.Nodes {
		offs, err := c.NodeOffsets(ctx, nd.ID, ConsumerGroup, Topic, 2*time.Second)
		for q := range int32(queues) {
			v, ok := offs[q]
			if err != nil || !ok {
				v = -1
			}
			h.Add(Event{Type: EvOffset, Kind: "final", Node: nd.ID, Queue: q, Offset: v, Group: c.eventGroup(nd.ID)})
		}
	}
}

// leader is group g's leader of the last poll ("" none; g "" is a
// one-group run's group).
func (m *monitor) leader(g string) string {
	if g == "" {
		g = GroupName
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lead[g]
}

// viewText is the progress line's leader and term of every group.
func (m *monitor) viewText() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.c.Multi() {
		return fmt.Sprintf("leader=%s term=%d", orNone(m.lead[GroupName]), m.term[GroupName])
	}
	var parts []string
	for _, g := range m.c.Groups {
		parts = append(parts, fmt.Sprintf("%s:%s/%d", g, orNone(m.lead[g]), m.term[g]))
	}
	return "leaders=" + strings.Join(parts, ",")
}

// converged reports whether every group's replicas have applied the
// same entries.
func converged(st []devcluster.NodeStatus, c *Cluster) bool {
	for _, g := range c.Groups {
		var gs []devcluster.NodeStatus
		for _, s := range st {
			if c.GroupOf(s.ID) == g {
				gs = append(gs, s)
			}
		}
		if !devcluster.Converged(gs) {
			return false
		}
	}
	return true
}

// ErrVerdictFail is what the command returns for a FAIL verdict.
var ErrVerdictFail = errors.New("jepsen: verdict FAIL")
