package devcluster

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// segFile is a CommitLog segment of size bytes holding the entries given
// by their payload lengths (each framed as the CommitLog frames it: the
// length word first, then the payload, then a 4-byte trailer), the rest
// zeros; fill is the payload byte.
func segFile(size int, fill byte, lens ...int) []byte {
	b := make([]byte, size)
	pos := 0
	for _, n := range lens {
		binary.BigEndian.PutUint32(b[pos:], uint32(n))
		for i := 4; i < n+4; i++ {
			b[pos+i] = fill
		}
		pos += n + 4
	}
	return b
}

func writeNode(t *testing.T, dir, id string, oneLog bool, segs map[int64][]byte) Node {
	t.Helper()
	n := Node{ID: id, Dir: filepath.Join(dir, id)}
	if err := os.MkdirAll(CommitLogDir(n), 0o755); err != nil {
		t.Fatal(err)
	}
	if oneLog {
		if err := os.WriteFile(filepath.Join(n.Dir, "store", "onelog"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for start, b := range segs {
		if err := os.WriteFile(filepath.Join(CommitLogDir(n), fmt.Sprintf("%020d", start)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestCompareCommitLogsOneLogPrefix: with one log, a node a few entries
// behind the others compares equal up to its end; a difference below it
// is found; with two logs the whole files must be equal.
func TestCompareCommitLogsOneLogPrefix(t *testing.T) {
	const size = 4096
	dir := t.TempDir()
	a := writeNode(t, dir, "a", true, map[int64][]byte{0: segFile(size, 1, 100, 60)})
	b := writeNode(t, dir, "b", true, map[int64][]byte{0: segFile(size, 1, 100, 60, 40, 40)})
	c := writeNode(t, dir, "c", true, map[int64][]byte{0: segFile(size, 1, 100, 60, 40, 40), size: segFile(size, 1, 50)})
	n, err := CompareCommitLogs([]Node{a, b, c})
	if err != nil || n != 168 {
		t.Fatalf("a log that extends another: %d bytes compared, %v", n, err)
	}
	d := writeNode(t, dir, "d", true, map[int64][]byte{0: segFile(size, 2, 100, 60, 40)})
	if _, err := CompareCommitLogs([]Node{a, d}); err == nil || !strings.Contains(err.Error(), "differ from byte 4") {
		t.Fatalf("different bytes below the shorter end: %v", err)
	}
	e := writeNode(t, dir, "e", false, map[int64][]byte{0: segFile(size, 1, 100, 60)})
	f := writeNode(t, dir, "f", false, map[int64][]byte{0: segFile(size, 1, 100, 60, 40)})
	if _, err := CompareCommitLogs([]Node{e, f}); err == nil {
		t.Fatal("two logs: a longer CommitLog was taken as equal")
	}
	if n, err := CompareCommitLogs([]Node{e, e}); err != nil || n != size {
		t.Fatalf("two logs, the same files: %d, %v", n, err)
	}
}
