package dledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// snapNode is a store, a metadata state, an FSM and a snapshot store in a
// data directory, without raft: the snapshot store's tests drive it the
// way raft does.
type snapNode struct {
	t       testing.TB
	dataDir string
	cfg     store.Config
	st      *store.Store
	fsm     *fsm
	snaps   *snapshotStore
	seq     uint64
	// fs is the snapshot store's file system (nil: the OS's).
	fs vfs.FS
}

func snapStoreConfig(dir string) store.Config {
	c := store.DefaultConfig(dir)
	c.SegmentSize = 64 << 10
	c.MaxMessageSize = 8 << 10
	c.IndexSlots = 256
	c.IndexEntries = 4096
	c.CheckpointInterval = time.Hour
	c.CleanInterval = time.Hour
	return c
}

func newSnapNode(t testing.TB, dataDir string) *snapNode {
	t.Helper()
	n := &snapNode{t: t, dataDir: dataDir, cfg: snapStoreConfig(filepath.Join(dataDir, "store"))}
	n.open()
	t.Cleanup(n.close)
	return n
}

func (n *snapNode) open() {
	n.t.Helper()
	var err error
	if n.st, err = store.Open(n.cfg); err != nil {
		n.t.Fatal(err)
	}
	n.fsm = &fsm{store: n.st, meta: metadata.New(), metaPath: filepath.Join(n.dataDir, "metadata.json")}
	if n.snaps, err = newSnapshotStore(filepath.Join(n.dataDir, "raft"), n.fsm, n.fs, hclog.NewNullLogger()); err != nil {
		n.t.Fatal(err)
	}
	n.seq = n.st.LastSeq()
}

func (n *snapNode) close() {
	if n.st != nil {
		n.st.Close()
		n.st = nil
	}
}

// put stores count batches of messages with ~body bytes each.
func (n *snapNode) put(count, body int) {
	n.t.Helper()
	for i := 0; i < count; i++ {
		n.seq++
		m := testMsg("T", int32(i%4), fmt.Sprintf("m%d-%s", n.seq, strings.Repeat("x", body)))
		m.StoreHost = testBorn
		if _, err := n.st.Put(n.seq, []*message.Ext{m}); err != nil {
			n.t.Fatal(err)
		}
	}
}

// snapshot takes a local snapshot as raft does: FSM.Snapshot, Create,
// Persist, Close (twice: raft closes after Persist did).
func (n *snapNode) snapshot(index, term uint64) *raft.SnapshotMeta {
	n.t.Helper()
	fs, err := n.fsm.Snapshot()
	if err != nil {
		n.t.Fatal(err)
	}
	defer fs.Release()
	sink, err := n.snaps.Create(1, index, term, raft.Configuration{}, 1, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := fs.Persist(sink); err != nil {
		n.t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		n.t.Fatal(err)
	}
	metas, _ := n.snaps.List()
	for _, m := range metas {
		if m.ID == sink.ID() {
			return m
		}
	}
	n.t.Fatalf("snapshot %s not listed", sink.ID())
	return nil
}

// read opens a snapshot and returns its stream.
func (n *snapNode) read(id string) (*raft.SnapshotMeta, []byte) {
	n.t.Helper()
	meta, rc, err := n.snaps.Open(id)
	if err != nil {
		n.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		n.t.Fatal(err)
	}
	return meta, b
}

// receive writes a stream into a sink as InstallSnapshot does, in pieces.
func (n *snapNode) receive(index, term uint64, stream []byte) (raft.SnapshotSink, error) {
	sink, err := n.snaps.Create(1, index, term, raft.Configuration{}, 1, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	for len(stream) > 0 {
		k := min(len(stream), 7919)
		if _, err := sink.Write(stream[:k]); err != nil {
			sink.Cancel()
			return sink, err
		}
		stream = stream[k:]
	}
	return sink, sink.Close()
}

// logBelow renders a store's CommitLog entries below limit.
func logBelow(t *testing.T, s *store.Store, limit int64) []byte {
	t.Helper()
	var out []byte
	err := s.ScanCommitLog(s.MinPhysicalOffset(), func(off int64, p []byte) error {
		if off < limit {
			out = fmt.Appendf(out, "%d:", off)
			out = append(out, p...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func snapshotManifest(t *testing.T, stream []byte) manifest {
	t.Helper()
	mlen := binary.BigEndian.Uint32(stream[16:])
	m, err := decodeManifest(stream[streamHeaderSize : streamHeaderSize+int(mlen)])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSnapshotStoreRoundTrip(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	a.put(150, 1000) // about 2.5 segments
	meta := a.snapshot(10, 2)
	_, stream := a.read(meta.ID)
	if int64(len(stream)) != meta.Size {
		t.Fatalf("stream is %d bytes, meta says %d", len(stream), meta.Size)
	}
	m := snapshotManifest(t, stream)
	if m.StoreSeq != a.seq || m.CommitLogMax != a.st.MaxPhysicalOffset() {
		t.Fatalf("manifest %+v, store at seq %d offset %d", m, a.seq, a.st.MaxPhysicalOffset())
	}
	// Appends after the snapshot reach the pinned active segment's inode
	// but never its stream.
	a.put(20, 1000)
	if _, again := a.read(meta.ID); !bytes.Equal(again, stream) {
		t.Fatal("the stream changed after later appends")
	}

	b := newSnapNode(t, t.TempDir())
	b.put(5, 10) // behind, on its own log
	sink, err := b.receive(10, 2, stream)
	if err != nil {
		t.Fatal(err)
	}
	metas, _ := b.snaps.List()
	if len(metas) != 1 || metas[0].ID != sink.ID() || metas[0].Size != meta.Size {
		t.Fatalf("receiver lists %+v", metas)
	}
	if _, back := b.read(sink.ID()); !bytes.Equal(back, stream) {
		t.Fatal("the receiver streams the snapshot differently")
	}
	_, rc, err := b.snaps.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.fsm.Restore(rc); err != nil {
		t.Fatal(err)
	}
	if b.st.LastSeq() != m.StoreSeq || b.fsm.applied.Load() != 10 {
		t.Fatalf("after restore: seq %d (want %d), applied %d", b.st.LastSeq(), m.StoreSeq, b.fsm.applied.Load())
	}
	if !bytes.Equal(logBelow(t, b.st, 1<<62), logBelow(t, a.st, m.CommitLogMax)) {
		t.Fatal("restored commitlog differs from the source")
	}
	if st := (&Group{fsm: b.fsm}).SnapshotStats(); st.Received != 1 || st.Restored != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A store that already holds the data is kept as it is.
	b.seq = b.st.LastSeq()
	b.put(3, 10)
	_, rc, _ = b.snaps.Open(sink.ID())
	if err := b.fsm.Restore(rc); err != nil || b.st.LastSeq() != b.seq {
		t.Fatalf("restore onto a store ahead: %v, seq %d want %d", err, b.st.LastSeq(), b.seq)
	}

	// A stream that does not come from the snapshot store is staged first.
	c := newSnapNode(t, t.TempDir())
	if err := c.fsm.Restore(io.NopCloser(bytes.NewReader(stream))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(logBelow(t, c.st, 1<<62), logBelow(t, a.st, m.CommitLogMax)) {
		t.Fatal("commitlog restored from a plain stream differs")
	}
	if left, _ := filepath.Glob(filepath.Join(c.snaps.dir, "*"+tmpSuffix)); len(left) != 0 {
		t.Fatalf("staging left behind: %v", left)
	}
}

func TestSnapshotStoreKeepsPinnedSegmentsAfterRetention(t *testing.T) {
	now := time.Now()
	a := newSnapNode(t, t.TempDir())
	a.close()
	a.cfg.Clock = func() time.Time { return now }
	a.open()
	a.put(150, 1000)
	meta := a.snapshot(5, 1)
	_, before := a.read(meta.ID)
	a.put(50, 1000)
	now = now.Add(1000 * time.Hour)
	if n, err := a.st.Clean(true); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	if a.st.MinPhysicalOffset() == 0 {
		t.Fatal("retention kept the first segment")
	}
	if _, after := a.read(meta.ID); !bytes.Equal(after, before) {
		t.Fatal("the pinned snapshot lost data to retention")
	}
}

func TestSnapshotStoreRejectsBadStreams(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	a.put(80, 1000)
	meta := a.snapshot(3, 1)
	_, stream := a.read(meta.ID)
	mlen := int(binary.BigEndian.Uint32(stream[16:]))
	firstData := streamHeaderSize + mlen + segmentFrameSize
	flip := func(at int) []byte {
		b := bytes.Clone(stream)
		b[at] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"flipped magic", flip(1)},
		{"flipped segment size", flip(12)},
		{"flipped manifest", flip(streamHeaderSize + mlen/2)},
		{"flipped frame start", flip(streamHeaderSize + mlen + 3)},
		{"flipped segment byte", flip(firstData + 100)},
		{"flipped last segment byte", flip(len(stream) - endFrameSize - 1)},
		{"flipped checksum", flip(len(stream) - 1)},
		{"truncated in the header", stream[:10]},
		{"truncated in a segment", stream[:firstData+500]},
		{"truncated before the end frame", stream[:len(stream)-endFrameSize]},
		{"truncated in the end frame", stream[:len(stream)-2]},
		{"trailing bytes", append(bytes.Clone(stream), 0)},
		{"garbage", []byte("hello")},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newSnapNode(t, t.TempDir())
			if _, err := b.receive(3, 1, tc.stream); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("got %v, want ErrBadSnapshot", err)
			}
			if metas, _ := b.snaps.List(); len(metas) != 0 {
				t.Fatalf("a bad stream was stored: %+v", metas)
			}
			if ents, _ := os.ReadDir(b.snaps.dir); len(ents) != 0 {
				t.Fatalf("a bad stream left %d entries behind", len(ents))
			}
		})
	}
}

func TestSnapshotStoreReapsKeepingTwo(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	var ids []string
	for i := uint64(1); i <= 4; i++ {
		a.put(30, 500)
		ids = append(ids, a.snapshot(10*i, 1).ID)
		if i == 2 {
			// An open snapshot is not reaped until it is closed.
			_, rc, err := a.snaps.Open(ids[0])
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			a.put(30, 500)
			ids = append(ids, a.snapshot(25, 1).ID)
			if _, err := os.Stat(filepath.Join(a.snaps.dir, ids[0])); err != nil {
				t.Fatalf("open snapshot reaped: %v", err)
			}
			if _, err := io.Copy(io.Discard, rc); err != nil {
				t.Fatal(err)
			}
			rc.Close()
		}
	}
	metas, _ := a.snaps.List()
	if len(metas) != 2 || metas[0].ID != ids[len(ids)-1] || metas[1].ID != ids[len(ids)-2] {
		t.Fatalf("kept %v of %v", metas, ids)
	}
	ents, _ := os.ReadDir(a.snaps.dir)
	if len(ents) != 2 {
		t.Fatalf("%d snapshot directories on disk", len(ents))
	}
	// A reopened store lists the same, newest first.
	a.close()
	a.open()
	again, _ := a.snaps.List()
	if len(again) != 2 || again[0].ID != metas[0].ID || again[0].Size != metas[0].Size {
		t.Fatalf("after reopen: %+v", again)
	}
}

func TestSnapshotStoreFinishesInterruptedInstall(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	a.put(120, 1000)
	meta := a.snapshot(7, 1)
	_, stream := a.read(meta.ID)

	// b receives the stream, then stops before Restore ran.
	b := newSnapNode(t, t.TempDir())
	if _, err := b.receive(7, 1, stream); err != nil {
		t.Fatal(err)
	}
	b.close()
	b.open()
	if b.st.LastSeq() != a.seq {
		t.Fatalf("reopened store at seq %d, want the snapshot's %d", b.st.LastSeq(), a.seq)
	}

	// A manifest without data that is ahead of the store is dropped.
	c := newSnapNode(t, t.TempDir())
	sink, err := c.snaps.Create(1, 9, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(sink, `{"version":1,"storeSeq":50,"commitLogMin":0,"commitLogMax":0}`)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_, rc, _ := c.snaps.Open(sink.ID())
	if err := c.fsm.Restore(rc); !errors.Is(err, ErrSnapshotNeedsData) {
		t.Fatalf("restoring a manifest ahead of the store: %v", err)
	}
	c.close()
	c.open()
	if metas, _ := c.snaps.List(); len(metas) != 0 {
		t.Fatalf("dataless snapshot ahead of the store kept: %+v", metas)
	}
}

// memTarget collects a parsed stream for the fuzz target.
type memTarget struct {
	segSize int64
	man     []byte
	segs    []memSegment
}

type memSegment struct {
	start int64
	data  []byte
}

func (t *memTarget) header(segSize int64, _ int) error { t.segSize = segSize; return nil }
func (t *memTarget) manifest(b []byte) error {
	t.man = bytes.Clone(b)
	return nil
}
func (t *memTarget) beginSegment(start, _ int64) error {
	t.segs = append(t.segs, memSegment{start: start})
	return nil
}
func (t *memTarget) segmentData(p []byte) error {
	s := &t.segs[len(t.segs)-1]
	s.data = append(s.data, p...)
	return nil
}
func (t *memTarget) endSegment() error { return nil }

// encodeStream builds a stream in memory with the reader's framing.
func encodeStream(segSize int64, man []byte, segs []memSegment) []byte {
	b := appendStreamHeader(nil, segSize, len(man), len(segs))
	b = append(b, man...)
	for _, s := range segs {
		b = appendSegmentFrame(b, s.start, int64(len(s.data)))
		b = append(b, s.data...)
	}
	b = append(b, frameKindEnd)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// FuzzSnapshotStream feeds arbitrary bytes, in pieces of arbitrary size, to
// the stream parser: it must never panic, must mark every rejection
// ErrBadSnapshot, and a stream it accepts must re-encode to the same bytes.
// (Seeds stay small: a full segment is 64 KiB, which makes the fuzzer's
// minimisation crawl; the unit tests cover multi-segment streams.)
func FuzzSnapshotStream(f *testing.F) {
	const seg = 64 << 10
	man := []byte(`{"version":1,"storeSeq":3,"commitLogMin":0,"commitLogMax":13}`)
	one := encodeStream(seg, man, []memSegment{{0, []byte("only a little")}})
	f.Add(encodeStream(seg, man, nil), uint16(1))
	f.Add(one, uint16(3))
	f.Add(one, uint16(4095))
	f.Add(one[:len(one)-3], uint16(100))
	f.Add(encodeStream(seg, man, []memSegment{{seg, []byte("x")}, {2 * seg, []byte("y")}}), uint16(7))
	f.Add([]byte("LMQS"), uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint16) {
		tg := &memTarget{}
		p := newStreamParser(tg)
		step := int(chunk%4096) + 1
		var err error
		for rest := b; len(rest) > 0 && err == nil; {
			k := min(step, len(rest))
			_, err = p.Write(rest[:k])
			rest = rest[k:]
		}
		if err == nil {
			err = p.finish()
		}
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error not marked ErrBadSnapshot: %v", err)
			}
			return
		}
		if again := encodeStream(tg.segSize, tg.man, tg.segs); !bytes.Equal(again, b) {
			t.Fatalf("accepted stream does not re-encode to itself")
		}
	})
}

// TestSnapshotStoreReadsFileSnapshotStoreDirs: snapshots that raft's
// FileSnapshotStore wrote (meta.json + state.bin holding the manifest) are
// listed and streamed as manifest-only snapshots.
func TestSnapshotStoreReadsFileSnapshotStoreDirs(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	a.put(10, 100)
	a.close()
	old, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(a.dataDir, "raft"), 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := old.Create(1, 12, 3, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	man := fmt.Sprintf(`{"version":1,"storeSeq":%d,"commitLogMin":0,"commitLogMax":0}`, a.seq)
	if _, err := io.WriteString(sink, man); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	a.open()
	metas, _ := a.snaps.List()
	if len(metas) != 1 || metas[0].ID != sink.ID() || metas[0].Index != 12 {
		t.Fatalf("listed %+v", metas)
	}
	meta, stream := a.read(sink.ID())
	if int64(len(stream)) != meta.Size || snapshotManifest(t, stream).StoreSeq != a.seq {
		t.Fatalf("stream of %d bytes for size %d", len(stream), meta.Size)
	}
}
