package consumequeue

import (
	"errors"
	"testing"
)

func TestOffsetByTime(t *testing.T) {
	// Store times of queue offsets 0..9, with duplicates; queue offset o
	// points at CommitLog offset unitAt(o).Offset.
	times := []int64{100, 200, 200, 200, 300, 400, 400, 500, 600, 700}
	timeOf := func(u Unit) (int64, error) { return times[(u.Offset-1000)/100], nil }

	s := openStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "t", 0)
	if got, err := q.OffsetByTime(300, timeOf); err != nil || got != 0 {
		t.Fatalf("empty queue: OffsetByTime = %d, %v; want 0", got, err)
	}
	putRange(t, q, 0, int64(len(times)))

	tests := []struct {
		name string
		ts   int64
		want int64
	}{
		{"before first", 50, 0},
		{"exact first", 100, 0},
		{"between", 150, 1},
		{"duplicate times: the first of them", 200, 1},
		{"exact hit", 300, 4},
		{"between duplicates and next", 450, 7},
		{"exact last", 700, 9},
		{"after last", 701, 10},
		{"far after last", 1 << 50, 10},
	}
	for _, tt := range tests {
		got, err := q.OffsetByTime(tt.ts, timeOf)
		if err != nil || got != tt.want {
			t.Errorf("%s: OffsetByTime(%d) = %d, %v; want %d", tt.name, tt.ts, got, err, tt.want)
		}
	}

	// Units whose messages cannot be read (their CommitLog files are gone)
	// count as older: the search moves past them.
	unreadable := func(u Unit) (int64, error) {
		if u.Offset < unitAt(3).Offset {
			return 0, errors.New("record gone")
		}
		return timeOf(u)
	}
	for _, tt := range []struct{ ts, want int64 }{{50, 3}, {200, 3}, {300, 4}, {701, 10}} {
		if got, err := q.OffsetByTime(tt.ts, unreadable); err != nil || got != tt.want {
			t.Errorf("unreadable head: OffsetByTime(%d) = %d, %v; want %d", tt.ts, got, err, tt.want)
		}
	}

	// Retention moves MinOffset: nothing below it is returned.
	if err := q.DeleteBefore(unitAt(5).Offset); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ts, want int64 }{{50, 5}, {400, 5}, {450, 7}, {701, 10}} {
		if got, err := q.OffsetByTime(tt.ts, timeOf); err != nil || got != tt.want {
			t.Errorf("after retention: OffsetByTime(%d) = %d, %v; want %d", tt.ts, got, err, tt.want)
		}
	}
}
