package consumequeue

import (
	"errors"
	"testing"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		offset int64
		max    int64
		files  []int64
	}{
		{40, 35, []int64{0, 10, 20, 30}}, // beyond max: nothing
		{35, 35, []int64{0, 10, 20, 30}},
		{34, 34, []int64{0, 10, 20, 30}},
		{30, 30, []int64{0, 10, 20}}, // a file boundary: the file goes
		{23, 23, []int64{0, 10, 20}},
		{11, 11, []int64{0, 10}},
		{1, 1, []int64{0}},
		{0, 0, nil}, // everything
	}
	for _, tt := range tests {
		dir := t.TempDir()
		s := openStore(t, dir, 10, 0)
		q := mustQueue(t, s, "t", 0)
		putRange(t, q, 0, 35)
		if err := q.Truncate(tt.offset); err != nil {
			t.Fatalf("Truncate(%d): %v", tt.offset, err)
		}
		checkQueue(t, q, 0, tt.max)
		equalFiles(t, queueFiles(t, dir, "t", 0), tt.files...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openStore(t, dir, 10, 0)
		q = mustQueue(t, s, "t", 0)
		checkQueue(t, q, 0, tt.max)
		putRange(t, q, tt.max, 37)
		checkQueue(t, q, 0, 37)
	}
	s := openStore(t, t.TempDir(), 10, 0)
	if err := mustQueue(t, s, "t", 0).Truncate(-1); !errors.Is(err, ErrOffsetTooSmall) {
		t.Fatalf("Truncate(-1) err = %v", err)
	}
}

func TestTruncateByPhysical(t *testing.T) {
	// unitAt(o).Offset = 1000 + 100*o
	tests := []struct {
		phy int64
		max int64
	}{
		{1 << 40, 35},
		{1000 + 100*35, 35},
		{1000 + 100*34, 34},
		{1000 + 100*34 - 1, 34},
		{1000 + 100*20 + 1, 21},
		{1000 + 100*20, 20},
		{1000 + 100*9 + 50, 10},
		{1001, 1},
		{1000, 0},
		{0, 0},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		s := openStore(t, dir, 10, 0)
		q := mustQueue(t, s, "t", 0)
		putRange(t, q, 0, 35)
		if err := q.TruncateByPhysical(tt.phy); err != nil {
			t.Fatalf("TruncateByPhysical(%d): %v", tt.phy, err)
		}
		checkQueue(t, q, 0, tt.max)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		checkQueue(t, mustQueue(t, openStore(t, dir, 10, 0), "t", 0), 0, tt.max)
	}
}

func TestDeleteBefore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 0)
	q := mustQueue(t, s, "t", 0)
	putRange(t, q, 0, 35)

	steps := []struct {
		phyMin int64
		min    int64
		files  []int64
	}{
		{0, 0, []int64{0, 10, 20, 30}},
		{unitAt(4).Offset, 4, []int64{0, 10, 20, 30}},
		{unitAt(4).Offset - 1, 4, []int64{0, 10, 20, 30}}, // never moves back
		{unitAt(9).Offset + 1, 10, []int64{10, 20, 30}},   // first file all below
		{unitAt(23).Offset, 23, []int64{20, 30}},
		{unitAt(1000).Offset, 35, []int64{30}}, // everything below: the last file stays
	}
	for _, st := range steps {
		if err := q.DeleteBefore(st.phyMin); err != nil {
			t.Fatalf("DeleteBefore(%d): %v", st.phyMin, err)
		}
		checkQueue(t, q, st.min, 35)
		equalFiles(t, queueFiles(t, dir, "t", 0), st.files...)
		if st.min > 0 {
			if _, err := q.Get(st.min-1, 4); !errors.Is(err, ErrOffsetTooSmall) {
				t.Fatalf("Get below min err = %v, want ErrOffsetTooSmall", err)
			}
		}
	}
	// The queue goes on from where it was.
	putRange(t, q, 35, 47)
	checkQueue(t, q, 35, 47)
	if err := q.DeleteBefore(unitAt(41).Offset); err != nil {
		t.Fatal(err)
	}
	checkQueue(t, q, 41, 47)
	equalFiles(t, queueFiles(t, dir, "t", 0), 40)

	// After a restart MinOffset is the first file's start until the owner
	// applies retention again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 10, 0)
	q = mustQueue(t, s, "t", 0)
	checkQueue(t, q, 40, 47)
	if err := q.DeleteBefore(unitAt(41).Offset); err != nil {
		t.Fatal(err)
	}
	checkQueue(t, q, 41, 47)
}

func TestDeleteBeforeEmptyQueue(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 0)
	q := mustQueue(t, s, "t", 0)
	if err := q.DeleteBefore(1 << 30); err != nil {
		t.Fatal(err)
	}
	checkQueue(t, q, 0, 0)
}
