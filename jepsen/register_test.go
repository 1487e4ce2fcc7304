package jepsen

import (
	"os"
	"path/filepath"
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
