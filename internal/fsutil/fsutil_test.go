package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLockExcludesSecondOpen(t *testing.T) {
	dir := t.TempDir()
	l1, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: got %v, want ErrLocked", err)
	}
	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Lock(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = l2.Release()
	_ = l2.Release()
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "f")
	if err := MkdirAll(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		if err := WriteFileAtomic(p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
	if err := RemoveFile(p); err != nil {
		t.Fatal(err)
	}
	if err := RemoveFile(p); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
}
