package dledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// snapshotSink receives one snapshot into <id>.tmp/ and, on Close, makes
// it durable and renames it to <id>/. raft uses a sink from one goroutine.
type snapshotSink struct {
	s    *snapshotStore
	meta raft.SnapshotMeta
	tmp  string
	w    *stagingWriter
	done bool
}

var _ raft.SnapshotSink = (*snapshotSink)(nil)

func (k *snapshotSink) ID() string { return k.meta.ID }

func (k *snapshotSink) Write(p []byte) (int, error) {
	if k.done {
		return 0, fmt.Errorf("%w: write to a finished sink", ErrBadSnapshot)
	}
	return k.w.Write(p)
}

// Close finalises the snapshot: a stream must be complete and its checksum
// must match; a local manifest gets its CommitLog segments pinned. Any
// failure removes the staging directory. A second Close is a no-op (raft
// closes after Persist did).
func (k *snapshotSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	snap, err := k.finalise()
	if err != nil {
		k.w.abort()
		if rerr := k.s.fs.RemoveAll(k.tmp); rerr != nil {
			k.s.log.Warn("removing a discarded snapshot's directory", "dir", k.tmp, "error", rerr)
		}
		k.s.log.Error("snapshot discarded", "id", k.meta.ID, "error", err)
		return fmt.Errorf("dledger: snapshot %s: %w", k.meta.ID, err)
	}
	if k.w.streamed() {
		k.s.received.Add(1)
	} else {
		k.s.taken.Add(1)
	}
	k.s.log.Info("snapshot stored", "id", k.meta.ID, "received", k.w.streamed(), "segments", len(snap.segs),
		"store_seq", snap.m.StoreSeq, "size", snap.meta.Size)
	k.s.add(snap)
	return nil
}

// Cancel drops the snapshot. Safe to call more than once.
func (k *snapshotSink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	k.w.abort()
	return k.s.fs.RemoveAll(k.tmp)
}

func (k *snapshotSink) finalise() (*snapshot, error) {
	m, err := k.w.finish()
	if err != nil {
		return nil, err
	}
	if !k.w.streamed() {
		// A local snapshot: what the FSM captured must be durable before
		// the manifest is (fsm.Snapshot leaves the flush to here).
		if k.s.fsm.store.OneLog() && m.StoreSeq < k.meta.Index {
			m, err = k.coverIndex(m) // it flushes
		} else {
			err = k.s.fsm.store.Flush()
		}
		if err != nil {
			return nil, err
		}
	}
	if !k.w.streamed() {
		if err := k.s.pin(k.tmp, m); err != nil {
			return nil, err
		}
	}
	mf := snapshotMetaFile{SnapshotMeta: k.meta, Format: snapshotFormat, SegmentSize: k.w.segSize, Received: k.w.streamed()}
	b, err := json.Marshal(mf)
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(k.s.fs, filepath.Join(k.tmp, metaFileName), b); err != nil {
		return nil, err
	}
	if err := k.s.fs.SyncDir(k.tmp); err != nil {
		return nil, err
	}
	final := filepath.Join(k.s.dir, k.meta.ID)
	if err := k.s.fs.Rename(k.tmp, final); err != nil {
		return nil, err
	}
	if err := k.s.fs.SyncDir(k.s.dir); err != nil {
		return nil, err
	}
	snap, err := k.s.load(final)
	if err != nil {
		if rerr := k.s.fs.RemoveAll(final); rerr != nil {
			k.s.log.Warn("removing an unreadable snapshot", "dir", final, "error", rerr)
		}
		return nil, err
	}
	return snap, nil
}

// coverIndex makes a local one-log snapshot's manifest end at the
// snapshot's raft index: raft's index counts the no-ops and barriers after
// the last entry the FSM applied, and those are in the CommitLog too, so a
// node that installs the snapshot must hold them at the same offsets. They
// are recorded as applied here (and made durable before the manifest is).
func (k *snapshotSink) coverIndex(m manifest) (manifest, error) {
	st := k.s.fsm.store
	if err := st.MarkApplied(k.meta.Index); err != nil {
		return m, err
	}
	end, ok := st.EntryEnd(k.meta.Index)
	if !ok {
		return m, fmt.Errorf("raft entry %d is not in the log", k.meta.Index)
	}
	if err := st.Flush(); err != nil {
		return m, err
	}
	m.StoreSeq, m.CommitLogMax = k.meta.Index, end
	b, err := json.Marshal(m)
	if err != nil {
		return m, err
	}
	return m, writeFileSync(k.s.fs, filepath.Join(k.tmp, manifestFileName), b)
}

// pin hard-links the CommitLog segments that hold the bytes below the
// manifest's CommitLogMax into dir. The links keep the files' data alive
// when retention deletes the originals; appends beyond CommitLogMax reach
// the linked files too but are never streamed. A segment that retention
// deleted since the manifest was taken ends the pinned run there: only a
// contiguous run up to CommitLogMax is kept.
func (s *snapshotStore) pin(dir string, m manifest) error {
	var pinned []string
	for _, seg := range s.fsm.store.SegmentPaths() {
		if seg.Start >= m.CommitLogMax {
			break
		}
		dst := filepath.Join(dir, s.fsm.store.SegmentFileName(seg.Start))
		if err := s.fs.Link(seg.Path, dst); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				for _, p := range pinned {
					if rerr := s.fs.Remove(p); rerr != nil {
						return fmt.Errorf("unpin segment %s: %w", p, rerr)
					}
				}
				pinned = nil
				continue
			}
			return fmt.Errorf("pin segment %s: %w", seg.Path, err)
		}
		pinned = append(pinned, dst)
	}
	if len(pinned) == 0 && m.CommitLogMax > 0 {
		s.log.Warn("no commitlog segment left to pin; the snapshot carries the manifest only", "commitlog_max", m.CommitLogMax)
	}
	return nil
}

// Staging modes, decided by the first byte written.
const (
	stageUnknown = iota
	stageManifest
	stageStream
)

// stagingWriter takes either a bare manifest (JSON, first byte '{') or a
// snapshot stream (first byte 'L' of "LMQS") and stages it in dir:
// manifest.json, and for a stream the segment files. It never trusts the
// stream: every length is bounded before use, and a bad byte is an error.
type stagingWriter struct {
	fs      vfs.FS
	dir     string
	segSize int64
	names   segmentFiles
	mode    int
	json    []byte
	target  *dirTarget
	parser  *streamParser
}

func newStagingWriter(fs vfs.FS, dir string, segSize int64, names segmentFiles) *stagingWriter {
	return &stagingWriter{fs: vfs.Or(fs), dir: dir, segSize: segSize, names: names}
}

func (w *stagingWriter) streamed() bool { return w.mode == stageStream }

func (w *stagingWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.mode == stageUnknown {
		switch p[0] {
		case '{':
			w.mode = stageManifest
		case byte(streamMagic >> 24):
			w.mode = stageStream
			w.target = &dirTarget{fs: w.fs, dir: w.dir, segSize: w.segSize, names: w.names}
			w.parser = newStreamParser(w.target)
		default:
			return 0, fmt.Errorf("%w: snapshot starts with %#x", ErrBadSnapshot, p[0])
		}
	}
	if w.mode == stageManifest {
		if len(w.json)+len(p) > maxManifestSize {
			return 0, fmt.Errorf("%w: manifest over %d bytes", ErrBadSnapshot, maxManifestSize)
		}
		w.json = append(w.json, p...)
		return len(p), nil
	}
	return w.parser.Write(p)
}

// finish checks that what was written is complete and returns its
// manifest; the manifest (and for a stream every segment) is durable in
// dir afterwards.
func (w *stagingWriter) finish() (manifest, error) {
	switch w.mode {
	case stageManifest:
		m, err := decodeManifest(w.json)
		if err != nil {
			return m, err
		}
		return m, writeFileSync(w.fs, filepath.Join(w.dir, manifestFileName), w.json)
	case stageStream:
		if err := w.parser.finish(); err != nil {
			return manifest{}, err
		}
		t := w.target
		if len(t.segs) > 0 && w.parser.end != t.m.CommitLogMax {
			return manifest{}, fmt.Errorf("%w: segments end at %d, the manifest at %d", ErrBadSnapshot, w.parser.end, t.m.CommitLogMax)
		}
		return t.m, nil
	}
	return manifest{}, fmt.Errorf("%w: empty snapshot", ErrBadSnapshot)
}

func (w *stagingWriter) abort() {
	if w.target != nil {
		w.target.abort()
	}
}

// dirTarget writes a parsed stream into a directory: manifest.json, then
// each segment as a file named by its start offset, SegmentSize long, the
// streamed bytes followed by zeros (pre-allocated like the CommitLog's own
// files), fsynced when complete.
type dirTarget struct {
	fs       vfs.FS
	dir      string
	segSize  int64 // this node's segment size; the stream must match it
	names    segmentFiles
	segments int
	m        manifest
	f        vfs.File
	buf      *bufio.Writer
	segs     []int64
}

func (t *dirTarget) header(segSize int64, segments int) error {
	if segSize != t.segSize {
		return fmt.Errorf("%w: stream segment size %d, this node's is %d", ErrBadSnapshot, segSize, t.segSize)
	}
	t.segments = segments
	return nil
}

func (t *dirTarget) manifest(b []byte) error {
	m, err := decodeManifest(b)
	if err != nil {
		return err
	}
	// Segments run contiguously and end at CommitLogMax: no more of them
	// than that range can hold.
	if int64(t.segments) > (m.CommitLogMax+t.segSize-1)/t.segSize {
		return fmt.Errorf("%w: %d segments for data ending at %d", ErrBadSnapshot, t.segments, m.CommitLogMax)
	}
	t.m = m
	return writeFileSync(t.fs, filepath.Join(t.dir, manifestFileName), b)
}

func (t *dirTarget) beginSegment(start, n int64) error {
	if start+n > t.m.CommitLogMax {
		return fmt.Errorf("%w: segment at %d with %d bytes passes the manifest's end %d", ErrBadSnapshot, start, n, t.m.CommitLogMax)
	}
	f, err := t.fs.OpenFile(filepath.Join(t.dir, t.names.SegmentFileName(start)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	t.f = f
	// The seam's File writes at offsets; the segment is written from its
	// start on.
	w := io.NewOffsetWriter(f, 0)
	if t.buf == nil {
		t.buf = bufio.NewWriterSize(w, 1<<20)
	} else {
		t.buf.Reset(w)
	}
	t.segs = append(t.segs, start)
	return nil
}

func (t *dirTarget) segmentData(p []byte) error {
	_, err := t.buf.Write(p)
	return err
}

func (t *dirTarget) endSegment() error {
	f := t.f
	t.f = nil
	err := t.buf.Flush()
	if err == nil {
		err = t.fs.Allocate(f, 0, 0, t.segSize)
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = f.Truncate(t.segSize)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *dirTarget) abort() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

// writeFileSync creates path with b and fsyncs it (the directory is
// synced by the caller).
func writeFileSync(fs vfs.FS, path string, b []byte) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
