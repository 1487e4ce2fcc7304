package dledger

import (
	"io"
	"testing"
)

// BenchmarkSnapshotOpenRead streams a snapshot of about 4 MiB of
// CommitLog segments, as a leader does for InstallSnapshot.
func BenchmarkSnapshotOpenRead(b *testing.B) {
	a := newSnapNode(b, b.TempDir())
	defer a.close()
	a.put(4000, 1000)
	meta := a.snapshot(1, 1)
	b.SetBytes(meta.Size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, rc, err := a.snaps.Open(meta.ID)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

// BenchmarkSnapshotReceive stages the same stream on a follower: parse,
// write the segments, fsync, finalise.
func BenchmarkSnapshotReceive(b *testing.B) {
	a := newSnapNode(b, b.TempDir())
	defer a.close()
	a.put(4000, 1000)
	meta := a.snapshot(1, 1)
	_, stream := a.read(meta.ID)
	f := newSnapNode(b, b.TempDir())
	defer f.close()
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.receive(uint64(i+1), 1, stream); err != nil {
			b.Fatal(err)
		}
	}
}
