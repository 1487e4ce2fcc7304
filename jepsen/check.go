package jepsen

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Result is what the checkers found in a history (doc.go defines every
// figure).
type Result struct {
	Attempted, Acked, Failed, Unknown int
	Delivered                         int // distinct values delivered to the consumer group
	// Lost: acknowledged and in no replica's final read, split by where
	// the value sits in its producer's sequence of values found.
	Lost, LostPrefix, LostMiddle, LostPostfix int
	LostOnNode                                map[string]int // acknowledged, missing from that node's read
	LostByAcker                               map[string]int // lost, by the node that acknowledged
	LostValues                                []string       // the first few
	Unexpected                                int            // read or delivered, never sent
	Recovered                                 int            // unknown outcome, found stored
	FailedButStored                           int            // failed outcome, found stored (reported, not a defect by itself)
	// Duplicates: values stored at more than one queue offset.
	// Unjustified ones had a single attempt, acknowledged: the broker
	// stored one send twice.
	Duplicates, UnjustifiedDuplicates int
	Redelivered                       int // queue offsets delivered to the group more than once
	// GroupDuplicates: values stored at more than one queue offset of one
	// broker group (a copy in another group, left by a retry that moved
	// there, is not counted: no group's duplicate window sees both).
	// ExactlyOnce is CheckInput's: with it any fails the verdict.
	GroupDuplicates int
	ExactlyOnce     bool
	// InconsistentOffsets: a queue offset holding different values (in
	// two replicas, or as delivered and as finally stored) or a delivered
	// value the final log no longer has.
	InconsistentOffsets int
	Reorders            int // a producer's value stored before one it acknowledged earlier
	Gaps                int // stored queue offsets never delivered to the group
	Divergent           int // queue offsets where the replicas' final reads differ
	ReplicaCompare      string
	// OffsetRegressions: a node's committed offset of a queue went
	// down while the group ran (reported, allowed: commits still pending
	// on a leader that was killed or lost leadership may be lost, and a
	// restarted node answers what it has applied so far).
	// OffsetDivergent: queues whose committed offset differs between the
	// replicas once they have converged (counted in Divergent too).
	OffsetRegressions, OffsetDivergent int
	// Availability.
	OKRatioInFaults, OKRatioOutside float64
	MaxUnavailableMS                float64
	FailoverMS                      []float64 // per leader-affecting fault
	FailoverP50, FailoverP99        float64
	FailoverMax                     float64
	LatencyP50, LatencyP95          float64
	LatencyP99, LatencyMax          float64
	// Txn is the transactions workload's checker (check_txn.go), folded
	// into Lost, Unexpected and (unjustified) Duplicates; Register the
	// consumer-offset register's (register.go).
	Txn      TxnResult
	Register RegisterResult
	// Pop is the POP workload's checker (check_pop.go).
	Pop PopResult `json:",omitzero"`
	// Groups is each broker group's finding and GroupDown the sends
	// during group-down faults (runs of two or more groups,
	// check_groups.go).
	Groups    []GroupResult   `json:",omitempty"`
	GroupDown GroupDownResult `json:",omitzero"`
	Problems  []string        // why the verdict is FAIL
}

// Valid is the verdict: no problem found.
func (r *Result) Valid() bool { return len(r.Problems) == 0 }

// VerdictLine is the run's last line.
func (r *Result) VerdictLine() string {
	v := "PASS"
	if !r.Valid() {
		v = "FAIL"
	}
	return fmt.Sprintf("verdict: %s acked=%d lost=%d unexpected=%d duplicates=%d divergent=%d max-unavailable-ms=%d",
		v, r.Acked, r.Lost, r.Unexpected, r.Duplicates, r.Divergent, int64(math.Round(r.MaxUnavailableMS))) +
		r.exactlyOnceVerdict() + r.Pop.verdict() + r.groupsVerdict()
}

// exactlyOnceVerdict is the verdict line's exactly-once figure, with
// ExactlyOnce only.
func (r *Result) exactlyOnceVerdict() string {
	if !r.ExactlyOnce {
		return ""
	}
	return fmt.Sprintf(" exactly-once-duplicates=%d", r.GroupDuplicates)
}

// pos is one queue offset (g the queue's broker group in a run of two or
// more groups, where queue ids repeat in every group).
type pos struct {
	g   string
	q   int32
	off int64
}

// cmpPos orders positions by group, queue, offset.
func cmpPos(a, b pos) int {
	if a.g != b.g {
		return strings.Compare(a.g, b.g)
	}
	if a.q != b.q {
		return int(a.q - b.q)
	}
	return int(a.off - b.off)
}

// CheckInput is what Check needs besides the history.
type CheckInput struct {
	Nodes []string // every node read at the end
	// ReplicaCompare is the byte comparison of the replicas' CommitLogs
	// ("" when identical).
	ReplicaCompare string
	// NoFinalRead: the final read failed; loss cannot be judged.
	NoFinalRead string
	// Groups are the nodes of each broker group in a run of two or more
	// (nil: one group, every node of Nodes): replicas are compared within
	// their group, and events carry their Group.
	Groups map[string][]string
	// ExactlyOnce: every broker group keeps a duplicate window (the
	// broker's dedup.window) covering the producers' retries to it, so a
	// value stored at two queue offsets of one group fails the verdict
	// (Result.GroupDuplicates); copies in two groups are still allowed.
	ExactlyOnce bool
}

// replicas are the nodes holding group g's queues.
func (in CheckInput) replicas(all []string, g string) []string {
	if in.Groups == nil {
		return all
	}
	return in.Groups[g]
}

// Check runs every checker over a history.
func Check(evs []Event, in CheckInput) *Result {
	r := &Result{LostOnNode: map[string]int{}, LostByAcker: map[string]int{}, ReplicaCompare: in.ReplicaCompare,
		ExactlyOnce: in.ExactlyOnce}
	sends := map[string]Event{}
	var sendList []Event
	reads := map[string]map[pos]string{} // node → position → value
	for _, n := range in.Nodes {
		reads[n] = map[pos]string{}
	}
	var recvs []Event
	var faults []Event
	var offsets []Event
	txnVals := map[string]bool{} // transactional values: checkTxn judges them
	for _, e := range evs {
		switch e.Type {
		case EvTxn:
			txnVals[e.Value] = true
		case EvSend:
			sends[e.Value] = e
			sendList = append(sendList, e)
		case EvRead:
			if reads[e.Node] == nil {
				reads[e.Node] = map[pos]string{}
			}
			reads[e.Node][pos{e.Group, e.Queue, e.Offset}] = e.Value
		case EvRecv:
			recvs = append(recvs, e)
		case EvFault:
			faults = append(faults, e)
		case EvOffset:
			offsets = append(offsets, e)
		}
	}
	r.Attempted = len(sendList)
	for _, s := range sendList {
		switch s.Outcome {
		case OK:
			r.Acked++
		case Failed:
			r.Failed++
		default:
			r.Unknown++
		}
	}

	// The final log: the value at each position, as the replicas agree
	// on it (a position where they differ counts as divergent, and the
	// first node's value stands).
	nodes := slices.Sorted(mapKeys(reads))
	final := map[pos]string{}
	allPos := map[pos]bool{}
	for _, n := range nodes {
		for p := range reads[n] {
			allPos[p] = true
		}
	}
	for p := range allPos {
		var vals []string
		for _, n := range in.replicas(nodes, p.g) {
			vals = append(vals, reads[n][p])
		}
		for _, v := range vals {
			if v != "" {
				final[p] = v
				break
			}
		}
		if slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] }) {
			r.Divergent++
			if slices.ContainsFunc(vals, func(v string) bool { return v != "" && v != final[p] }) {
				r.InconsistentOffsets++
			}
		}
	}
	if r.Divergent == 0 && in.ReplicaCompare != "" {
		r.Divergent = 1 // the bytes differ where the messages do not
	}
	stored := map[string][]pos{} // value → positions in the final log
	for p, v := range final {
		stored[v] = append(stored[v], p)
	}
	for v := range stored {
		slices.SortFunc(stored[v], cmpPos)
	}

	// Delivery: lost, unexpected, recovered, duplicates.
	delivered := map[string]bool{}
	unexpected := map[string]bool{}
	recvAt := map[pos]int{}
	for _, e := range recvs {
		delivered[e.Value] = true
		p := pos{e.Group, e.Queue, e.Offset}
		recvAt[p]++
		if recvAt[p] == 2 {
			r.Redelivered++
		}
		if fv, ok := final[p]; in.NoFinalRead == "" && (!ok || fv != e.Value) {
			r.InconsistentOffsets++
		}
		if _, ok := sends[e.Value]; !ok && !txnVals[e.Value] {
			unexpected[e.Value] = true
		}
	}
	r.Delivered = len(delivered)
	for v := range stored {
		if _, ok := sends[v]; !ok && !txnVals[v] {
			unexpected[v] = true
		}
	}
	r.Unexpected = len(unexpected)
	r.Txn = checkTxn(evs, final, delivered, in.NoFinalRead == "")
	r.Unexpected += r.Txn.RolledBackDelivered
	r.Duplicates += r.Txn.Duplicates
	r.UnjustifiedDuplicates += r.Txn.Duplicates
	for v, ps := range stored {
		if _, sent := sends[v]; (sent || txnVals[v]) && twiceInAGroup(ps) {
			r.GroupDuplicates++
		}
	}
	// Per producer: the range of sequence numbers found.
	type span struct{ lo, hi int64 }
	spans := map[string]span{}
	for v := range stored {
		seq, prod := parseValue(v)
		if prod == "" {
			continue
		}
		s, ok := spans[prod]
		if !ok {
			s = span{seq, seq}
		}
		s.lo, s.hi = min(s.lo, seq), max(s.hi, seq)
		spans[prod] = s
	}
	for _, s := range sendList {
		ps, found := stored[s.Value]
		switch {
		case s.Outcome == Unknown && found:
			r.Recovered++
		case s.Outcome == Failed && found:
			r.FailedButStored++
		}
		if len(ps) > 1 {
			r.Duplicates++
			if s.Outcome == OK && s.Attempts <= 1 && !s.MaybeDup {
				r.UnjustifiedDuplicates++
			}
		}
		if s.Outcome != OK || in.NoFinalRead != "" {
			continue
		}
		for _, n := range in.replicas(nodes, s.Group) {
			if !slices.ContainsFunc(ps, func(p pos) bool { return reads[n][p] == s.Value }) {
				r.LostOnNode[n]++
			}
		}
		if found {
			continue
		}
		r.Lost++
		r.LostByAcker[s.Node]++
		if len(r.LostValues) < 20 {
			r.LostValues = append(r.LostValues, s.Value)
		}
		seq, prod := parseValue(s.Value)
		sp, ok := spans[prod]
		switch {
		case !ok || seq < sp.lo:
			r.LostPrefix++
		case seq > sp.hi:
			r.LostPostfix++
		default:
			r.LostMiddle++
		}
	}

	// Order within a queue: a value stored below one its producer had
	// acknowledged before sending it.
	type firstAt struct {
		seq int64
		p   pos
	}
	byProd := map[string][]firstAt{}
	for v, ps := range stored {
		seq, prod := parseValue(v)
		if prod != "" {
			byProd[prod] = append(byProd[prod], firstAt{seq, ps[0]})
		}
	}
	for prod, fs := range byProd {
		slices.SortFunc(fs, func(a, b firstAt) int { return int(a.seq - b.seq) })
		var ackedMax *firstAt
		for i := range fs {
			f := fs[i]
			sameQueue := ackedMax != nil && f.p.g == ackedMax.p.g && f.p.q == ackedMax.p.q
			if sameQueue && f.p.off < ackedMax.p.off {
				r.Reorders++
			}
			if s, ok := sends[prod+"-"+fmt.Sprint(f.seq)]; ok && s.Outcome == OK {
				if !sameQueue || f.p.off > ackedMax.p.off {
					ackedMax = &fs[i]
				}
			}
		}
	}
	// Gaps: every stored offset must reach the group at least once.
	if in.NoFinalRead == "" {
		for p := range final {
			if recvAt[p] == 0 {
				r.Gaps++
			}
		}
	}
	// Committed offsets, as each node reported them while the group ran,
	// and once more after the replicas converged.
	type groupQueue struct {
		g string
		q int32
	}
	lastOff := map[string]int64{}
	finalOff := map[groupQueue]map[string]int64{}
	for _, e := range offsets {
		if e.Kind == "final" {
			gq := groupQueue{e.Group, e.Queue}
			if finalOff[gq] == nil {
				finalOff[gq] = map[string]int64{}
			}
			finalOff[gq][e.Node] = e.Offset
			continue
		}
		key := fmt.Sprintf("%s/%d", e.Node, e.Queue)
		if prev, ok := lastOff[key]; ok && e.Offset < prev {
			r.OffsetRegressions++
		}
		lastOff[key] = e.Offset
	}
	for gq, byNode := range finalOff {
		var vals []int64
		for _, n := range in.replicas(nodes, gq.g) {
			v, ok := byNode[n]
			if !ok {
				v = -1 // did not answer
			}
			vals = append(vals, v)
		}
		if slices.ContainsFunc(vals, func(v int64) bool { return v != vals[0] }) {
			r.OffsetDivergent++
		}
	}
	r.Divergent += r.OffsetDivergent
	r.Lost += r.Txn.Lost
	r.Register = checkRegister(evs)
	r.Pop = checkPop(evs, popMustReceive(evs))

	availability(r, sendList, faults)
	r.Problems = problems(r, in)
	return r
}

// twiceInAGroup reports whether positions ps (sorted by cmpPos) hold two
// queue offsets of one broker group.
func twiceInAGroup(ps []pos) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i].g == ps[i-1].g {
			return true
		}
	}
	return false
}

func problems(r *Result, in CheckInput) []string {
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	if in.NoFinalRead != "" {
		out = append(out, "no final read: "+in.NoFinalRead)
	}
	if r.Acked == 0 {
		out = append(out, "nothing was acknowledged")
	}
	add(r.Lost, "acknowledged messages lost")
	add(r.Unexpected, "unexpected messages (never sent)")
	add(r.UnjustifiedDuplicates, "messages stored twice from one acknowledged attempt")
	if in.ExactlyOnce {
		add(r.GroupDuplicates, "messages stored twice within one broker group (exactly-once)")
	}
	add(r.InconsistentOffsets, "inconsistent queue offsets (a delivered value the final log does not hold there)")
	add(r.Reorders, "reorders within a queue")
	add(r.Gaps, "stored queue offsets never delivered to the consumer group")
	add(r.Divergent-r.OffsetDivergent, "divergent replica positions")
	add(r.OffsetDivergent, "queues whose committed consumer offset differs between converged replicas")
	add(r.Txn.Lost, "committed transactions lost (txn-lost)")
	add(r.Txn.RolledBackDelivered, "transactions rolled back (or never run) yet stored or delivered (txn-rolledback-delivered)")
	add(r.Txn.Misplaced, "committed transactions stored in another group or queue than their half message named (txn-misplaced)")
	r.Pop.problems(add)
	if r.Register.Checked && !r.Register.Linearizable {
		out = append(out, "consumer offsets not linearizable as a register: "+r.Register.Info)
	}
	if in.ReplicaCompare != "" {
		out = append(out, "replica CommitLogs differ: "+in.ReplicaCompare)
	}
	return out
}

// window is one fault's [start, end] in history time.
type window struct {
	start, end float64
	leader     bool // the fault removed or cut off the leader
}

// availability computes success ratios, the longest time without an
// acknowledgement, failover times and latency quantiles.
func availability(r *Result, sends []Event, faults []Event) {
	var ws []window
	open := map[string]int{}
	for _, f := range faults {
		key := f.Detail
		switch f.Phase {
		case "start":
			hitsLeader := f.Leader != "" && slices.Contains(f.Targets, f.Leader) &&
				f.Kind != NemLoss && f.Kind != NemDelay && f.Kind != NemHostile
			if f.Kind == NemTransfer {
				hitsLeader = true
			}
			open[key] = len(ws)
			ws = append(ws, window{start: f.T, end: math.Inf(1), leader: hitsLeader})
		case "end":
			if i, ok := open[key]; ok {
				ws[i].end = f.T
				delete(open, key)
			}
		}
	}
	inFault := func(t float64) bool {
		return slices.ContainsFunc(ws, func(w window) bool { return t >= w.start && t <= w.end })
	}
	var okIn, allIn, okOut, allOut int
	var acks []float64
	var lat []float64
	for _, s := range sends {
		ok := s.Outcome == OK
		if inFault(s.Invoke) {
			allIn++
			if ok {
				okIn++
			}
		} else {
			allOut++
			if ok {
				okOut++
			}
		}
		if ok {
			acks = append(acks, s.T)
			lat = append(lat, s.T-s.Invoke)
		}
	}
	r.OKRatioInFaults = ratio(okIn, allIn)
	r.OKRatioOutside = ratio(okOut, allOut)
	sort.Float64s(acks)
	if len(sends) > 0 {
		first := sends[0].Invoke
		last := first
		for _, s := range sends {
			first, last = min(first, s.Invoke), max(last, s.T)
		}
		prev := first
		for _, a := range append(acks, last) {
			r.MaxUnavailableMS = max(r.MaxUnavailableMS, a-prev)
			prev = max(prev, a)
		}
	}
	for _, w := range ws {
		if !w.leader {
			continue
		}
		// The first send invoked after the fault began and acknowledged.
		best := math.Inf(1)
		for _, s := range sends {
			if s.Outcome == OK && s.Invoke >= w.start && s.T < best {
				best = s.T
			}
		}
		if !math.IsInf(best, 1) {
			r.FailoverMS = append(r.FailoverMS, best-w.start)
		}
	}
	fo := slices.Sorted(slices.Values(r.FailoverMS))
	r.FailoverP50, r.FailoverP99, r.FailoverMax = quantile(fo, 0.5), quantile(fo, 0.99), quantile(fo, 1)
	sort.Float64s(lat)
	r.LatencyP50, r.LatencyP95, r.LatencyP99, r.LatencyMax = quantile(lat, 0.5), quantile(lat, 0.95), quantile(lat, 0.99), quantile(lat, 1)
}

// ratio is a/b, or -1 (no sends to judge by) when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return -1
	}
	return float64(a) / float64(b)
}

// quantile of sorted xs (nearest rank); 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Summary is the result as text lines (the report's and the command's).
func (r *Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ops      attempted=%d ok=%d failed=%d unknown=%d delivered=%d recovered=%d failed-but-stored=%d\n",
		r.Attempted, r.Acked, r.Failed, r.Unknown, r.Delivered, r.Recovered, r.FailedButStored)
	fmt.Fprintf(&b, "safety   lost=%d (prefix %d, middle %d, postfix %d) lost-on-node=%v lost-by-acker=%v\n",
		r.Lost, r.LostPrefix, r.LostMiddle, r.LostPostfix, r.LostOnNode, r.LostByAcker)
	fmt.Fprintf(&b, "         unexpected=%d duplicates=%d (unjustified %d) redelivered=%d inconsistent-offsets=%d\n",
		r.Unexpected, r.Duplicates, r.UnjustifiedDuplicates, r.Redelivered, r.InconsistentOffsets)
	fmt.Fprintf(&b, "         reorders=%d gaps=%d divergent=%d offset-regressions=%d offset-divergent=%d\n", r.Reorders, r.Gaps, r.Divergent, r.OffsetRegressions, r.OffsetDivergent)
	if r.ExactlyOnce {
		fmt.Fprintf(&b, "         exactly-once duplicates-within-a-group=%d\n", r.GroupDuplicates)
	}
	fmt.Fprintf(&b, "avail    ok-ratio in-faults=%s outside=%s max-unavailable-ms=%.0f\n", ratioText(r.OKRatioInFaults), ratioText(r.OKRatioOutside), r.MaxUnavailableMS)
	fmt.Fprintf(&b, "failover n=%d p50=%.0fms p99=%.0fms max=%.0fms\n", len(r.FailoverMS), r.FailoverP50, r.FailoverP99, r.FailoverMax)
	fmt.Fprintf(&b, "latency  ok sends p50=%.1fms p95=%.1fms p99=%.1fms max=%.1fms\n", r.LatencyP50, r.LatencyP95, r.LatencyP99, r.LatencyMax)
	b.WriteString(r.Txn.summary())
	b.WriteString(r.Register.summary())
	b.WriteString(r.Pop.summary(""))
	b.WriteString(r.groupsSummary())
	if len(r.LostValues) > 0 {
		fmt.Fprintf(&b, "lost     %s\n", strings.Join(r.LostValues, " "))
	}
	if len(r.Txn.LostValues) > 0 {
		fmt.Fprintf(&b, "txn      %s\n", strings.Join(r.Txn.LostValues, " "))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "problem  %s\n", p)
	}
	return b.String()
}

func ratioText(r float64) string {
	if r < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", r)
}
