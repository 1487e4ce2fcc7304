package jepsen

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Consumer offsets checked as a register (workload_register.go writes the
// history, porcupine checks it).
//
// Each (consumer group, topic, queue) key of a broker group is a register
// (in a run of two or more broker groups each holds its own offsets, so
// the key names the broker group too): UPDATE_CONSUMER_OFFSET
// writes a value unique over the run, QUERY_CONSUMER_OFFSET reads it. The
// broker acknowledges a commit when it has taken it, before raft commits
// it (broker/offsets.go: commits are coalesced into one raft entry every
// 100 ms, and a leader that dies or is deposed meanwhile loses them), so
// the model is a register whose acknowledged writes may be lost: a write
// takes effect at one instant between its invocation and its answer, or
// never. What it must not do: answer a read with a value that is not the
// register's at some instant of the read — not an older value once a
// newer one has been read or a later write has taken effect (a stale
// read), not a lost write's value again after another was read (a
// resurrection), never a value nobody wrote. An operation whose answer
// never came (a timeout, a reset) is open: its return is after the end
// of the history, so it may take effect at any later time or never.
// Reads that got an error answer are left out; so are writes refused with
// one (nothing was taken).

// EvRegister is one register operation: process r<i>, kind read|write,
// queue the key's queue (group its broker group in a run of two or
// more), offset the value written or read, invoke and t
// its call and answer, outcome ok|unknown (unknown: no answer), node the
// node that answered.
const EvRegister = "register"

// RegisterResult is the register checker's verdict.
type RegisterResult struct {
	Checked      bool   // the history had register operations
	Linearizable bool   // porcupine found a linearization (of every key)
	Outcome      string // porcupine's: Ok, Illegal, Unknown (it timed out: not judged)
	Ops, Reads   int
	Writes, Open int
	Keys         int
	Info         string // what was wrong, for the problem line

	info  porcupine.LinearizationInfo
	model porcupine.Model
}

type regInput struct {
	write bool
	value int64
}

// regKey is a register's key: a queue of a broker group ("" in a
// one-group run).
type regKey struct {
	g string
	q int32
}

func cmpRegKey(a, b regKey) int {
	if c := strings.Compare(a.g, b.g); c != 0 {
		return c
	}
	return int(a.q - b.q)
}

// registerModel is the lossy-write register, one partition per key.
func registerModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[regKey][]porcupine.Operation{}
			for _, op := range h {
				k := op.Metadata.(regKey)
				by[k] = append(by[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(by))
			for _, k := range slices.SortedFunc(mapKeys(by), cmpRegKey) {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() []any { return []any{int64(0)} },
		Step: func(state, input, output any) []any {
			in := input.(regInput)
			if in.write {
				return []any{in.value, state} // taken, or lost
			}
			if output.(int64) == state.(int64) {
				return []any{state}
			}
			return nil
		},
		Equal: func(a, b any) bool { return a.(int64) == b.(int64) },
		DescribeOperation: func(input, output any) string {
			in := input.(regInput)
			if in.write {
				return fmt.Sprintf("write(%d)", in.value)
			}
			return fmt.Sprintf("read() → %d", output.(int64))
		},
		DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
	}
	return nm.ToModel()
}

// registerTimeout bounds porcupine's search.
const registerTimeout = time.Minute

// checkRegister checks the register operations of a history.
func checkRegister(evs []Event) RegisterResult {
	var r RegisterResult
	var tmax float64
	for _, e := range evs {
		tmax = max(tmax, e.T)
	}
	end := int64(tmax*1000) + 1 // after everything: an open operation's return
	var ops []porcupine.Operation
	clients := map[string]int{}
	keys := map[regKey]bool{}
	for _, e := range evs {
		if e.Type != EvRegister || e.Outcome == Failed {
			continue
		}
		write := e.Kind == "write"
		if !write && e.Outcome != OK {
			continue // a read without an answer constrains nothing
		}
		id, ok := clients[e.Process]
		if !ok {
			id = len(clients)
			clients[e.Process] = id
		}
		op := porcupine.Operation{ClientId: id, Input: regInput{write: write, value: e.Offset}, Call: int64(e.Invoke * 1000),
			Output: e.Offset, Return: int64(e.T * 1000), Metadata: regKey{e.Group, e.Queue}}
		if e.Outcome != OK {
			op.Return = end
			r.Open++
		}
		if write {
			r.Writes++
		} else {
			r.Reads++
		}
		keys[regKey{e.Group, e.Queue}] = true
		ops = append(ops, op)
	}
	r.Ops, r.Keys = len(ops), len(keys)
	if len(ops) == 0 {
		return r
	}
	r.Checked = true
	r.model = registerModel()
	res, info := porcupine.CheckOperationsVerbose(r.model, ops, registerTimeout)
	info.AddAnnotations(faultAnnotations(evs, end))
	r.info = info
	r.Outcome = string(res)
	r.Linearizable = res == porcupine.Ok
	switch res {
	case porcupine.Illegal:
		r.Info = "porcupine found no linearization (see register.html)"
	case porcupine.Unknown:
		r.Linearizable, r.Checked = false, false // timed out: not judged, reported
		r.Info = "porcupine timed out"
	}
	return r
}

// WriteVisualization writes porcupine's HTML visualization of the
// register history (nothing when there was none).
func (r *RegisterResult) WriteVisualization(path string) error {
	if r.Ops == 0 || r.model.Init == nil {
		return nil
	}
	return porcupine.VisualizePath(r.model, r.info, path)
}

func (r RegisterResult) summary() string {
	if r.Ops == 0 {
		return ""
	}
	return fmt.Sprintf("register linearizable=%t (porcupine %s) ops=%d reads=%d writes=%d open=%d keys=%d\n",
		r.Linearizable, r.Outcome, r.Ops, r.Reads, r.Writes, r.Open, r.Keys)
}

// faultAnnotations are the run's faults as bars of porcupine's
// visualization (tag "nemesis"), on the operations' clock (µs).
func faultAnnotations(evs []Event, end int64) []porcupine.Annotation {
	var out []porcupine.Annotation
	open := map[string]Event{}
	for _, e := range evs {
		if e.Type != EvFault {
			continue
		}
		switch e.Phase {
		case "start":
			open[e.Detail] = e
		case "end":
			if st, ok := open[e.Detail]; ok {
				delete(open, e.Detail)
				out = append(out, porcupine.Annotation{Tag: "nemesis", Start: int64(st.T * 1000), End: int64(e.T * 1000),
					Description: st.Detail, Details: fmt.Sprintf("on %v (leader %s)", st.Targets, st.Leader), BackgroundColor: faultColor[st.Kind]})
			}
		}
	}
	for _, st := range open {
		out = append(out, porcupine.Annotation{Tag: "nemesis", Start: int64(st.T * 1000), End: end, Description: st.Detail + " (never healed)",
			BackgroundColor: faultColor[st.Kind]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}
