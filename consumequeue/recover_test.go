package consumequeue

import (
	"errors"
	"os"
	"testing"
)

// TestRecoverAfterCrash damages a closed queue of 25 units (files 0, 10, 20
// with UnitsPerFile 10) the way a crash can, reopens it and checks what
// load makes of it.
func TestRecoverAfterCrash(t *testing.T) {
	zeros := func(n int) []byte { return make([]byte, n*UnitSize) }
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		max     int64   // MaxOffset after reopening
		files   []int64 // files left
		sizes   []int64 // sizes of the files left
		loadErr error
	}{
		{
			name:   "clean",
			damage: func(*testing.T, string) {},
			max:    25, files: []int64{0, 10, 20}, sizes: []int64{200, 200, 100},
		},
		{
			name:   "partial trailing unit",
			damage: appendTo(20, []byte{1, 2, 3, 4, 5, 6, 7}),
			max:    25, files: []int64{0, 10, 20}, sizes: []int64{200, 200, 100},
		},
		{
			name:   "trailing zero units",
			damage: appendTo(20, zeros(3)),
			max:    25, files: []int64{0, 10, 20}, sizes: []int64{200, 200, 100},
		},
		{
			name:   "zero units then a partial unit",
			damage: appendTo(20, append(zeros(2), 9, 9, 9)),
			max:    25, files: []int64{0, 10, 20}, sizes: []int64{200, 200, 100},
		},
		{
			name: "last file all zero",
			damage: func(t *testing.T, dir string) {
				writeFile(t, queueFilePath(dir, "t", 0, 20), zeros(4))
			},
			max: 20, files: []int64{0, 10}, sizes: []int64{200, 200},
		},
		{
			name: "last file empty, zeros at the end of the one before",
			damage: func(t *testing.T, dir string) {
				b := readFile(t, queueFilePath(dir, "t", 0, 10))
				copy(b[140:], zeros(3))
				writeFile(t, queueFilePath(dir, "t", 0, 10), b)
				writeFile(t, queueFilePath(dir, "t", 0, 20), nil)
			},
			max: 17, files: []int64{0, 10}, sizes: []int64{200, 140},
		},
		{
			name:   "last file longer than a file can be",
			damage: appendTo(20, seqUnits(25, 8)),
			max:    30, files: []int64{0, 10, 20}, sizes: []int64{200, 200, 200},
		},
		{
			name:   "missing last file",
			damage: removeFile(20),
			max:    20, files: []int64{0, 10}, sizes: []int64{200, 200},
		},
		{
			name:    "missing middle file",
			damage:  removeFile(10),
			loadErr: ErrMissingFile,
		},
		{
			name: "short middle file",
			damage: func(t *testing.T, dir string) {
				if err := os.Truncate(queueFilePath(dir, "t", 0, 10), 180); err != nil {
					t.Fatal(err)
				}
			},
			loadErr: ErrMissingFile,
		},
		{
			name: "misaligned file name",
			damage: func(t *testing.T, dir string) {
				if err := os.Rename(queueFilePath(dir, "t", 0, 20), queueFilePath(dir, "t", 0, 21)); err != nil {
					t.Fatal(err)
				}
			},
			loadErr: ErrMissingFile,
		},
		{
			name: "stray names are ignored",
			damage: func(t *testing.T, dir string) {
				writeFile(t, queueFilePath(dir, "t", 0, 0)+".tmp", []byte("x"))
				writeFile(t, dir+"/t/0/00000000000000000007", []byte("x")) // not a multiple of 20
				if err := os.Mkdir(dir+"/t/0/lost+found", 0o755); err != nil {
					t.Fatal(err)
				}
			},
			max: 25, files: nil, sizes: []int64{200, 200, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, 10, 0)
			putRange(t, mustQueue(t, s, "t", 0), 0, 25)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)

			s = openStore(t, dir, 10, 0)
			q := mustQueue(t, s, "t", 0)
			if tt.loadErr != nil {
				if _, _, err := q.LastUnit(); !errors.Is(err, tt.loadErr) {
					t.Fatalf("LastUnit err = %v, want %v", err, tt.loadErr)
				}
				if err := q.Put(25, unitAt(25)); !errors.Is(err, tt.loadErr) {
					t.Fatalf("Put err = %v, want %v", err, tt.loadErr)
				}
				if _, err := q.Get(0, 1); !errors.Is(err, tt.loadErr) {
					t.Fatalf("Get err = %v, want %v", err, tt.loadErr)
				}
				if q.MaxOffset() != 0 {
					t.Fatalf("MaxOffset of a queue that fails to load = %d", q.MaxOffset())
				}
				return
			}
			checkQueue(t, q, 0, tt.max)
			if tt.files != nil {
				equalFiles(t, queueFiles(t, dir, "t", 0), tt.files...)
			}
			for i, size := range tt.sizes {
				fi, err := os.Stat(queueFilePath(dir, "t", 0, int64(i)*10))
				if err != nil || fi.Size() != size {
					t.Fatalf("file %d: size %v (%v), want %d", i, fi.Size(), err, size)
				}
			}
			// The repaired queue takes appends where it ends.
			putRange(t, q, tt.max, tt.max+12)
			checkQueue(t, q, 0, tt.max+12)
		})
	}
}

func TestLoadHoleInLastFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 0)
	putRange(t, mustQueue(t, s, "t", 0), 0, 8)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := queueFilePath(dir, "t", 0, 0)
	b := readFile(t, p)
	copy(b[3*UnitSize:5*UnitSize], make([]byte, 2*UnitSize))
	writeFile(t, p, b)

	s = openStore(t, dir, 10, 0)
	q := mustQueue(t, s, "t", 0)
	if q.MaxOffset() != 8 {
		t.Fatalf("MaxOffset = %d, want 8 (a hole is not a tail)", q.MaxOffset())
	}
	units, err := q.Get(0, 10)
	if !errors.Is(err, ErrBadUnit) || len(units) != 3 {
		t.Fatalf("Get over a hole = %d units, %v; want 3 and ErrBadUnit", len(units), err)
	}
	if _, err := q.GetUnit(4); !errors.Is(err, ErrBadUnit) {
		t.Fatalf("GetUnit(hole) err = %v", err)
	}
	if units, err := q.Get(5, 10); err != nil || len(units) != 3 {
		t.Fatalf("Get after the hole = %d units, %v", len(units), err)
	}
}

func TestFileRemovedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 1)
	q := mustQueue(t, s, "t", 0)
	putRange(t, q, 0, 15)
	// With one descriptor, reading file 0 after writing file 10 reopens it.
	if err := os.Remove(queueFilePath(dir, "t", 0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Get(0, 3); !errors.Is(err, ErrMissingFile) {
		t.Fatalf("Get of a removed file err = %v, want ErrMissingFile", err)
	}
	if err := os.Truncate(queueFilePath(dir, "t", 0, 10), 40); err != nil {
		t.Fatal(err)
	}
	units, err := q.Get(10, 5)
	if !errors.Is(err, ErrShortUnit) || len(units) != 2 {
		t.Fatalf("Get of a cut file = %d units, %v; want 2 and ErrShortUnit", len(units), err)
	}
}

func appendTo(start int64, b []byte) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		f, err := os.OpenFile(queueFilePath(dir, "t", 0, start), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

func removeFile(start int64) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(queueFilePath(dir, "t", 0, start)); err != nil {
			t.Fatal(err)
		}
	}
}

// seqUnits encodes unitAt(o) for o in [from, from+n).
func seqUnits(from, n int64) []byte {
	b := make([]byte, n*UnitSize)
	for i := int64(0); i < n; i++ {
		EncodeUnit(b[i*UnitSize:], unitAt(from+i))
	}
	return b
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
