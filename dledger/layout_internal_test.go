package dledger

import (
	"errors"
	"testing"
)

// TestDecideLayout: a node without data takes the layout of the members
// that hold data (wal when they differ: a group switching); with none,
// its configuration once a majority, itself included, said it holds no
// data — the same configuration, or it refuses; otherwise it asks again.
// An older binary not configured for one log counts as wal; one that is
// cannot be read and counts as no answer.
func TestDecideLayout(t *testing.T) {
	wal := nodeInfo{Node: "w", Layout: layoutWAL}
	clog := nodeInfo{Node: "c", Layout: layoutCommitLog, OneLog: true}
	freshOne := nodeInfo{Node: "f1", Fresh: true, OneLog: true}
	freshTwo := nodeInfo{Node: "f2", Fresh: true}
	oldTwo := nodeInfo{Node: "o2"}
	oldOne := nodeInfo{Node: "o1", OneLog: true}
	for _, tc := range []struct {
		name     string
		want     bool
		members  int
		answers  []nodeInfo
		oneLog   bool
		decided  bool
		conflict bool
	}{
		{"a member with one log", false, 3, []nodeInfo{clog}, true, true, false},
		{"a member with wal", true, 3, []nodeInfo{wal}, false, true, false},
		{"members differ: switching", true, 3, []nodeInfo{clog, wal}, false, true, false},
		{"data beats fresh", true, 3, []nodeInfo{freshOne, wal}, false, true, false},
		{"no answer", true, 3, nil, false, false, false},
		{"one fresh of five", true, 5, []nodeInfo{freshOne}, false, false, false},
		{"majority fresh", true, 3, []nodeInfo{freshOne}, true, true, false},
		{"majority fresh, wal", false, 3, []nodeInfo{freshTwo}, false, true, false},
		{"fresh, configured otherwise", true, 3, []nodeInfo{freshTwo}, false, false, true},
		{"two of four is no majority", true, 4, []nodeInfo{freshOne}, false, false, false},
		{"older binary, wal", true, 3, []nodeInfo{oldTwo}, false, true, false},
		{"older binary, one log: unknown", true, 3, []nodeInfo{oldOne}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oneLog, decided, err := decideLayout(tc.want, tc.members, tc.answers)
			if tc.conflict != errors.Is(err, ErrLayoutConflict) || (!tc.conflict && err != nil) {
				t.Fatalf("error %v, want conflict %v", err, tc.conflict)
			}
			if decided != tc.decided || (decided && oneLog != tc.oneLog) {
				t.Fatalf("one log %v decided %v, want %v %v", oneLog, decided, tc.oneLog, tc.decided)
			}
		})
	}
}
