package syncreport

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func open(t *testing.T, dir string) *Report {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func entries(t *testing.T, dir string) map[string]Entry {
	t.Helper()
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOffRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	var r *Report // off
	r.Synced(filepath.Join(dir, "a"), 10)
	r.Created(filepath.Join(dir, "a"), 10)
	if r.Enabled() {
		t.Fatal("a nil report is enabled")
	}
	if err := r.SyncFile(nil, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("report written while off: %v", err)
	}
}

func TestRecords(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	seg := filepath.Join(dir, "store", "commitlog", "00000000000000000000")
	r.Created(seg, 4096)
	r.Range(seg, 0, 100, 4096)
	r.Range(seg, 200, 300, 4096) // past a gap: extends nothing
	r.Range(seg, 100, 150, 4096)
	wal := filepath.Join(dir, "raft", "wal", "seg")
	r.Created(wal, 1024)
	r.SyncedExtent(wal, 300, 1024)
	r.SyncedExtent(wal, 200, 1024) // a reopened tail's first sync: never shrinks
	q := filepath.Join(dir, "q")
	r.Synced(q, 40)
	r.Zeroed(seg, 120, 4096)
	gone := filepath.Join(dir, "gone")
	r.Synced(gone, 5)
	r.Removed(gone)
	r.Synced("/elsewhere/x", 1) // outside the data dir: not recorded
	want := map[string]Entry{
		"store/commitlog/00000000000000000000": {Len: 120, Size: 4096},
		"raft/wal/seg":                         {Len: 300, Size: 1024},
		"q":                                    {Len: 40, Size: 40},
	}
	got := entries(t, dir)
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %+v, want %+v", k, got[k], v)
		}
	}
	// A second process keeps the first one's records; a closed report
	// records nothing more.
	r.Close()
	r.Synced(q, 99)
	open(t, dir)
	if got := entries(t, dir); got["q"] != want["q"] {
		t.Fatalf("reopened: %v", got)
	}
}

func TestSyncFileRecordsSizeBeforeSync(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(make([]byte, 10))
	err = r.SyncFile(f, func() error {
		f.Write([]byte("later")) // written during the sync: not vouched for
		return f.Sync()
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := entries(t, dir)["f"]; e != (Entry{10, 10}) {
		t.Fatalf("%+v", e)
	}
	// A failed sync records nothing.
	_ = r.SyncFile(f, func() error { return errors.New("EIO") })
	if e := entries(t, dir)["f"]; e != (Entry{10, 10}) {
		t.Fatalf("after a failed sync: %+v", e)
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	p := filepath.Join(dir, "f")
	for i := range int64(40000) {
		r.Synced(p, i)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > compactAt {
		t.Fatalf("report grew to %d bytes", fi.Size())
	}
	if e := entries(t, dir)["f"]; e.Len != 39999 {
		t.Fatalf("%+v", e)
	}
}

func TestParse(t *testing.T) {
	good := header + "\n1 2 a\n3 3 b\n-1 -1 a\n4 4 c"
	m, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m["b"] != (Entry{3, 3}) {
		t.Fatalf("%v (a removed, c torn)", m)
	}
	for _, bad := range []string{"", "nope\n", header + "\n5 2 a\n", header + "\nx 2 a\n", header + "\n1 2 ../a\n", header + "\n1 2 /a\n"} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(header + "\n1 2 a\n"))
	f.Add([]byte(header + "\n-1 -1 a\n3 3 b/c"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		for p, e := range m {
			if e.Len < 0 || e.Len > e.Size || !filepath.IsLocal(filepath.FromSlash(p)) {
				t.Fatalf("%q: %+v", p, e)
			}
		}
	})
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCut(t *testing.T) {
	dir := t.TempDir()
	full := bytes.Repeat([]byte{7}, 8192)
	// A preallocated segment: 8 KiB, data durable up to 1000.
	write(t, filepath.Join(dir, "seg"), full)
	// A plain file durable at 100 bytes, now 300.
	write(t, filepath.Join(dir, "q", "0"), full[:300])
	// Created, never synced.
	write(t, filepath.Join(dir, "new"), full[:50])
	// Untracked: left as it is.
	write(t, filepath.Join(dir, "meta.db"), full[:77])
	// Shorter now than recorded (truncated later): left as it is.
	write(t, filepath.Join(dir, "short"), full[:10])
	rep := header + "\n1000 8192 seg\n100 100 q/0\n0 0 new\n20 20 short\n5 5 deleted\n"
	write(t, filepath.Join(dir, FileName), []byte(rep))

	st, err := Cut(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 4 || st.Missing != 1 || st.Untracked != 1 || st.Dropped != (8192-1000)+200+50 {
		t.Fatalf("%+v", st)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	seg := read("seg")
	if len(seg) != 8192 || !bytes.Equal(seg[:1000], full[:1000]) || !bytes.Equal(seg[1000:], make([]byte, 8192-1000)) {
		t.Fatalf("seg not cut to 1000 (size kept)")
	}
	if got := read("q/0"); !bytes.Equal(got, full[:100]) {
		t.Fatalf("q/0: %d bytes", len(got))
	}
	if got := read("new"); len(got) != 0 {
		t.Fatalf("new: %d bytes", len(got))
	}
	if got := read("meta.db"); len(got) != 77 {
		t.Fatalf("untracked file changed")
	}
	if got := read("short"); len(got) != 10 {
		t.Fatalf("short: %d", len(got))
	}
	// The report now vouches for what is on disk.
	m := entries(t, dir)
	if m["seg"] != (Entry{1000, 8192}) || m["q/0"] != (Entry{100, 100}) || m["new"] != (Entry{0, 0}) || m["short"] != (Entry{10, 10}) {
		t.Fatalf("%v", m)
	}
	if _, ok := m["deleted"]; ok {
		t.Fatal("missing file still recorded")
	}
	// Cutting again changes nothing.
	if st, err := Cut(dir); err != nil || st.Dropped != 0 {
		t.Fatalf("second cut: %+v %v", st, err)
	}
}
