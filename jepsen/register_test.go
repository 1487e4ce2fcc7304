package jepsen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reg appends one register operation on key 0 between call and ret (ms).
func reg(evs []Event, proc, kind string, v int64, call, ret float64, outcome string) []Event {
	return append(evs, Event{Type: EvRegister, Process: proc, Kind: kind, Offset: v, Invoke: call, T: ret, Outcome: outcome})
}

func TestRegisterLinearizable(t *testing.T) {
	var h []Event
	h = reg(h, "r0", "read", 0, 0, 1, OK)
	h = reg(h, "r0", "write", 1, 2, 3, OK)
	h = reg(h, "r1", "read", 1, 4, 5, OK)
	h = reg(h, "r0", "write", 2, 6, 7, OK)
	h = reg(h, "r1", "write", 3, 6.5, 9, Unknown) // no answer: may take effect later, or never
	h = reg(h, "r1", "read", 2, 8, 10, OK)
	h = reg(h, "r2", "read", 3, 20, 21, OK) // the open write took effect late
	h = reg(h, "r0", "write", 4, 22, 23, OK)
	h = reg(h, "r2", "read", 3, 24, 25, OK) // write 4 was lost: allowed
	h = reg(h, "r2", "read", 9, 26, 27, Failed)
	r := checkRegister(h)
	if !r.Checked || !r.Linearizable || r.Ops != 9 || r.Open != 1 {
		t.Fatalf("a linearizable history: %+v", r)
	}
	path := filepath.Join(t.TempDir(), registerHTML)
	if err := r.WriteVisualization(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization: %v", err)
	}
}

func TestRegisterStaleRead(t *testing.T) {
	var h []Event
	h = reg(h, "r0", "write", 1, 0, 1, OK)
	h = reg(h, "r0", "write", 2, 2, 3, OK)
	h = reg(h, "r1", "read", 2, 4, 5, OK)
	h = reg(h, "r2", "read", 1, 6, 7, OK) // went back after 2 was read
	r := checkRegister(h)
	if !r.Checked || r.Linearizable {
		t.Fatalf("a stale read passed: %+v", r)
	}
	res := Check(h, CheckInput{})
	if res.Register.Linearizable || res.Valid() {
		t.Fatalf("a stale read passed the verdict: %s", res.Summary())
	}
}

func TestRegisterResurrectionAndNeverWritten(t *testing.T) {
	var h []Event
	h = reg(h, "r0", "write", 1, 0, 1, OK)
	h = reg(h, "r1", "read", 0, 2, 3, OK) // 1 lost (allowed)
	h = reg(h, "r1", "read", 1, 4, 5, OK) // and back
	if r := checkRegister(h); r.Linearizable {
		t.Fatalf("a resurrected write passed: %+v", r)
	}
	h = reg(nil, "r1", "read", 7, 0, 1, OK)
	if r := checkRegister(h); r.Linearizable {
		t.Fatalf("a value never written passed: %+v", r)
	}
}

func TestRegisterKeysSeparate(t *testing.T) {
	var h []Event
	h = reg(h, "r0", "write", 1, 0, 1, OK)
	h = append(h, Event{Type: EvRegister, Process: "r1", Kind: "read", Queue: 1, Offset: 0, Invoke: 2, T: 3, Outcome: OK})
	if r := checkRegister(h); !r.Linearizable || r.Keys != 2 {
		t.Fatalf("another key's initial value: %+v", r)
	}
}

// TestRegisterKeysOfGroups: with two broker groups a key is a group's
// queue. Queue 0 of broker-a and of broker-b are two registers: each
// history alone is linearizable, and would not be as one register; a
// stale read in broker-b fails broker-b's check and the topic's, not
// broker-a's.
func TestRegisterKeysOfGroups(t *testing.T) {
	op := func(g, proc, kind string, v int64, call float64) Event {
		return Event{Type: EvRegister, Process: proc, Kind: kind, Group: g, Queue: 0, Offset: v, Invoke: call, T: call + 1, Outcome: OK}
	}
	h := []Event{
		op("broker-a", "r0", "write", 1, 0), op("broker-b", "r1", "write", 2, 2),
		op("broker-a", "r0", "read", 1, 4), op("broker-b", "r1", "read", 2, 6),
		op("broker-a", "r2", "read", 1, 8),
	}
	if r := checkRegister(h); !r.Linearizable || r.Keys != 2 {
		t.Fatalf("two groups' queue 0: %+v", r)
	}
	groups := map[string][]string{"broker-a": {"n0"}, "broker-b": {"b0"}}
	in := CheckInput{Nodes: []string{"n0", "b0"}, Groups: groups}
	// Sends so that each group has something acknowledged.
	base := []Event{
		{Type: EvSend, Value: "p0-1", Outcome: OK, Group: "broker-a", Node: "n0", Queue: 1, Offset: 0, Attempts: 1},
		{Type: EvSend, Value: "p0-2", Outcome: OK, Group: "broker-b", Node: "b0", Queue: 1, Offset: 0, Attempts: 1},
		{Type: EvRead, Node: "n0", Value: "p0-1", Queue: 1, Group: "broker-a"}, {Type: EvRecv, Value: "p0-1", Queue: 1, Group: "broker-a"},
		{Type: EvRead, Node: "b0", Value: "p0-2", Queue: 1, Group: "broker-b"}, {Type: EvRecv, Value: "p0-2", Queue: 1, Group: "broker-b"},
	}
	r := CheckGroups(append(slices.Clone(base), h...), in, nil)
	if !r.Valid() || !r.Register.Linearizable || !r.Groups[0].Register.Linearizable || r.Groups[1].Register.Ops != 2 {
		t.Fatalf("registers of two groups: %s", r.Summary())
	}
	stale := append(slices.Clone(h), op("broker-b", "r1", "write", 3, 10), op("broker-b", "r2", "read", 3, 12), op("broker-b", "r0", "read", 2, 14))
	r = CheckGroups(append(slices.Clone(base), stale...), in, nil)
	if r.Valid() || r.Register.Linearizable || !r.Groups[0].Register.Linearizable || r.Groups[1].Register.Linearizable {
		t.Fatalf("a stale read in broker-b: %s", r.Summary())
	}
	if s := r.Summary(); !strings.Contains(s, "group    broker-b register linearizable=false") {
		t.Fatalf("summary lacks broker-b's register:\n%s", s)
	}
}
