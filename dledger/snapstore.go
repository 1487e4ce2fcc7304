package dledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Files and directories of the snapshot store (doc.go has the layout).
const (
	snapshotsDirName = "snapshots"
	snapshotsRetain  = 2
	metaFileName     = "meta.json"
	manifestFileName = "manifest.json"
	// legacyStateName is the manifest of a snapshot written by raft's
	// FileSnapshotStore, which earlier versions used; such snapshots are
	// read as manifest-only snapshots.
	legacyStateName = "state.bin"
	tmpSuffix       = ".tmp"
	snapshotFormat  = 1
)

// snapshotMetaFile is meta.json: raft's metadata (field names as raft's
// FileSnapshotStore writes them) and how to read the directory.
type snapshotMetaFile struct {
	raft.SnapshotMeta
	Format int `json:"format"`
	// SegmentSize of the pinned or staged CommitLog segments (0: none).
	SegmentSize int64 `json:"segmentSize"`
	// Received is true for a snapshot staged from a leader's stream, false
	// for one taken locally.
	Received bool `json:"received"`
}

// snapSegment is one CommitLog segment a snapshot carries: the file holds
// SegmentSize bytes, of which the first n are the snapshot's.
type snapSegment struct {
	start int64
	n     int64
	path  string
}

// snapshot is a finalised snapshot directory.
type snapshot struct {
	meta        raft.SnapshotMeta // Size is the stream length
	dir         string
	manifest    string // path of the manifest file
	manifestLen int
	m           manifest
	segSize     int64
	segs        []snapSegment
	created     int64 // unix milliseconds, from the id
}

// SnapshotStats counts this node's snapshot activity since it started.
type SnapshotStats struct {
	// Taken: local snapshots finalised (their segments pinned).
	Taken uint64
	// Received: snapshots streamed from a leader and staged.
	Received uint64
	// Opened: snapshots opened for reading (streams to followers and
	// restores).
	Opened uint64
	// Restored: restores that replaced the store's data with a
	// snapshot's segments.
	Restored uint64
}

// snapshotStore is the group's raft.SnapshotStore. A local snapshot is the
// FSM's manifest plus hard links to the CommitLog segments it covers; a
// snapshot from a leader is the manifest plus the streamed segment bytes.
// Open streams either kind as manifest + segments with its exact length,
// so the transport deadline scales with it. It keeps the newest
// snapshotsRetain snapshots and reaps older ones (not while open).
//
// Concurrency: raft calls Create from its main goroutine (InstallSnapshot)
// and its snapshot goroutine (local snapshots), List from several, Open
// from the replication goroutines (sending) and the FSM goroutine
// (restoring). All methods are safe for concurrent use; a sink or a reader
// is used by one goroutine at a time.
type snapshotStore struct {
	dir string
	fsm *fsm
	fs  vfs.FS
	log hclog.Logger

	mu     sync.Mutex
	snaps  []*snapshot // newest first
	inUse  map[string]int
	lastMS int64 // last id timestamp handed out

	taken, received, opened, restored atomic.Uint64
}

var _ raft.SnapshotStore = (*snapshotStore)(nil)

// newSnapshotStore opens the snapshot store in raftDir/snapshots, removes
// what interrupted snapshots left behind, and registers itself with f.
//
// If the store holds less than the newest snapshot (a crash or a failure
// interrupted an install, or the store's files were lost), raft would
// start from that snapshot's index and apply later entries onto a store
// that lacks the snapshot's data. So before raft starts, a newest snapshot
// that carries segments is restored into the store (and its metadata
// adopted when newer), and one that carries none (it can only be a
// received manifest whose restore never succeeded, so raft's log was not
// compacted for it) is removed.
func newSnapshotStore(raftDir string, f *fsm, fs vfs.FS, log hclog.Logger) (*snapshotStore, error) {
	s := &snapshotStore{dir: filepath.Join(raftDir, snapshotsDirName), fsm: f, fs: vfs.Or(fs), log: log, inUse: map[string]int{}}
	if err := s.fs.MkdirAll(s.dir); err != nil {
		return nil, fmt.Errorf("dledger: snapshots: %w", err)
	}
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("dledger: snapshots: %w", err)
	}
	for _, e := range ents {
		path := filepath.Join(s.dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			s.log.Info("removing an unfinished snapshot", "dir", path)
			if err := s.fs.RemoveAll(path); err != nil {
				return nil, fmt.Errorf("dledger: snapshots: %w", err)
			}
			continue
		}
		if _, err := s.fs.Stat(filepath.Join(path, metaFileName)); errors.Is(err, os.ErrNotExist) {
			// A reap that a crash interrupted (meta.json goes first).
			s.log.Info("removing a snapshot without metadata", "dir", path)
			if err := s.fs.RemoveAll(path); err != nil {
				return nil, fmt.Errorf("dledger: snapshots: %w", err)
			}
			continue
		}
		snap, err := s.load(path)
		if err != nil {
			s.log.Error("ignoring unreadable snapshot", "dir", path, "error", err)
			continue
		}
		s.snaps = append(s.snaps, snap)
	}
	sortSnapshots(s.snaps)
	if err := s.fs.SyncDir(s.dir); err != nil {
		return nil, err
	}
	f.snaps = s
	if err := s.catchUpStore(); err != nil {
		return nil, err
	}
	return s, nil
}

// catchUpStore brings the store and the metadata up to the newest
// snapshot (see newSnapshotStore). Runs before raft starts.
func (s *snapshotStore) catchUpStore() error {
	for len(s.snaps) > 0 {
		newest := s.snaps[0]
		have := s.fsm.store.LastSeq()
		if have < newest.m.StoreSeq && len(newest.segs) == 0 {
			s.log.Warn("removing a snapshot ahead of the store that carries no data", "id", newest.meta.ID,
				"store_seq", have, "snapshot_seq", newest.m.StoreSeq)
			s.snaps = s.snaps[1:]
			if err := removeSnapshotDir(s.fs, newest.dir); err != nil {
				return err
			}
			continue
		}
		if have < newest.m.StoreSeq {
			s.log.Info("store is behind the newest snapshot; restoring it", "id", newest.meta.ID,
				"store_seq", have, "snapshot_seq", newest.m.StoreSeq)
		}
		return s.fsm.install(newest.dir, newest.m, newest.meta.Index)
	}
	return nil
}

// sortSnapshots orders newest first: by index, then term, then creation.
func sortSnapshots(snaps []*snapshot) {
	sort.Slice(snaps, func(i, j int) bool {
		a, b := snaps[i], snaps[j]
		if a.meta.Index != b.meta.Index {
			return a.meta.Index > b.meta.Index
		}
		if a.meta.Term != b.meta.Term {
			return a.meta.Term > b.meta.Term
		}
		return a.created > b.created
	})
}

// load reads a finalised snapshot directory and checks that every file
// the stream needs is there.
func (s *snapshotStore) load(dir string) (*snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaFileName))
	if err != nil {
		return nil, err
	}
	var mf snapshotMetaFile
	if err := json.Unmarshal(b, &mf); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadSnapshot, metaFileName, err)
	}
	if mf.ID != filepath.Base(dir) || mf.Format > snapshotFormat {
		return nil, fmt.Errorf("%w: %s: id %q, format %d", ErrBadSnapshot, metaFileName, mf.ID, mf.Format)
	}
	snap := &snapshot{meta: mf.SnapshotMeta, dir: dir, segSize: mf.SegmentSize}
	if parts := strings.Split(mf.ID, "-"); len(parts) == 3 {
		snap.created, _ = strconv.ParseInt(parts[2], 10, 64)
	}
	snap.manifest = stagedManifestPath(dir)
	raw, err := readManifestFile(snap.manifest)
	if err != nil {
		return nil, err
	}
	if snap.m, err = decodeManifest(raw); err != nil {
		return nil, err
	}
	snap.manifestLen = len(raw)
	if snap.segSize == 0 {
		snap.segSize = s.fsm.store.SegmentSize()
	}
	if snap.segs, err = segmentsIn(s.fsm.store, dir, snap.segSize, snap.m.CommitLogMax); err != nil {
		return nil, err
	}
	counts := make([]int64, len(snap.segs))
	for i, sg := range snap.segs {
		counts[i] = sg.n
	}
	snap.meta.Size = streamSize(snap.manifestLen, counts)
	return snap, nil
}

// segmentsIn lists the segment files of a snapshot directory (named as the
// store names them) and the bytes
// of each that belong to a snapshot ending at end. They must be
// contiguous, end at end, and hold at least those bytes.
func segmentsIn(names segmentFiles, dir string, segSize, end int64) ([]snapSegment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []snapSegment
	for _, e := range ents {
		start, ok := names.ParseSegmentFileName(e.Name())
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		n := min(start+segSize, end) - start
		if start%segSize != 0 || n <= 0 || fi.Size() < n {
			return nil, fmt.Errorf("%w: segment %s (size %d) for data ending at %d", ErrBadSnapshot, e.Name(), fi.Size(), end)
		}
		segs = append(segs, snapSegment{start: start, n: n, path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].start < segs[j].start })
	for i := 1; i < len(segs); i++ {
		if segs[i].start != segs[i-1].start+segSize {
			return nil, fmt.Errorf("%w: segment %d does not follow %d", ErrBadSnapshot, segs[i].start, segs[i-1].start)
		}
	}
	if k := len(segs); k > 0 && segs[k-1].start+segs[k-1].n != end {
		return nil, fmt.Errorf("%w: segments end at %d, the manifest at %d", ErrBadSnapshot, segs[k-1].start+segs[k-1].n, end)
	}
	return segs, nil
}

func readManifestFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifestSize {
		return nil, fmt.Errorf("%w: manifest over %d bytes", ErrBadSnapshot, maxManifestSize)
	}
	return b, nil
}

// decodeManifest parses and checks a manifest.
func decodeManifest(b []byte) (manifest, error) {
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrBadSnapshot, err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("%w: manifest version %d", ErrBadSnapshot, m.Version)
	}
	if m.CommitLogMin < 0 || m.CommitLogMax < m.CommitLogMin || m.CommitLogMax > 1<<62 {
		return m, fmt.Errorf("%w: manifest commitlog range [%d, %d)", ErrBadSnapshot, m.CommitLogMin, m.CommitLogMax)
	}
	return m, nil
}

// newID returns a fresh snapshot id, term-index-unixmillis, unique in this
// store (also across restarts with a clock that went back). Called with mu
// held.
func (s *snapshotStore) newID(term, index uint64) string {
	ms := max(time.Now().UnixMilli(), s.lastMS+1)
	for {
		id := fmt.Sprintf("%d-%d-%d", term, index, ms)
		_, err1 := s.fs.Stat(filepath.Join(s.dir, id))
		_, err2 := s.fs.Stat(filepath.Join(s.dir, id+tmpSuffix))
		if errors.Is(err1, os.ErrNotExist) && errors.Is(err2, os.ErrNotExist) {
			s.lastMS = ms
			return id
		}
		ms++
	}
}

// Create starts a snapshot. raft writes either the FSM's manifest JSON
// (a local snapshot: Persist) or a leader's stream (InstallSnapshot) into
// the sink; the sink tells them apart by the first byte.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("%w: unsupported snapshot version %d", ErrBadSnapshot, version)
	}
	s.mu.Lock()
	id := s.newID(term, index)
	s.mu.Unlock()
	tmp := filepath.Join(s.dir, id+tmpSuffix)
	if err := s.fs.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("dledger: create snapshot: %w", err)
	}
	return &snapshotSink{
		s:   s,
		tmp: tmp,
		meta: raft.SnapshotMeta{Version: version, ID: id, Index: index, Term: term,
			Configuration: configuration, ConfigurationIndex: configurationIndex},
		w: newStagingWriter(s.fs, tmp, s.fsm.store.SegmentSize(), s.fsm.store),
	}, nil
}

// List returns the snapshots, newest first.
func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*raft.SnapshotMeta, 0, len(s.snaps))
	for _, snap := range s.snaps {
		m := snap.meta
		out = append(out, &m)
	}
	return out, nil
}

// Open returns a snapshot's metadata, whose Size is exactly the length of
// the stream the reader produces, and the reader. The snapshot is not
// reaped until the reader is closed.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.mu.Lock()
	var snap *snapshot
	for _, sn := range s.snaps {
		if sn.meta.ID == id {
			snap = sn
		}
	}
	if snap == nil {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %s", ErrSnapshotNotFound, id)
	}
	s.inUse[id]++
	s.mu.Unlock()
	r, err := openSnapshotReader(s, snap)
	if err != nil {
		s.release(id)
		return nil, nil, err
	}
	s.opened.Add(1)
	meta := snap.meta
	return &meta, r, nil
}

// release ends one use of a snapshot and reaps what is due.
func (s *snapshotStore) release(id string) {
	s.mu.Lock()
	if s.inUse[id]--; s.inUse[id] <= 0 {
		delete(s.inUse, id)
	}
	s.mu.Unlock()
	s.reap()
}

// add publishes a finalised snapshot and reaps the ones it makes
// redundant.
func (s *snapshotStore) add(snap *snapshot) {
	s.mu.Lock()
	s.snaps = append(s.snaps, snap)
	sortSnapshots(s.snaps)
	s.mu.Unlock()
	s.reap()
}

// reap removes snapshots beyond the newest snapshotsRetain that nobody is
// reading. Their hard links go with them; a CommitLog segment that
// retention already deleted is freed then.
func (s *snapshotStore) reap() {
	s.mu.Lock()
	var victims []*snapshot
	keep := make([]*snapshot, 0, len(s.snaps))
	for i, snap := range s.snaps {
		if i >= snapshotsRetain && s.inUse[snap.meta.ID] == 0 {
			victims = append(victims, snap)
			continue
		}
		keep = append(keep, snap)
	}
	s.snaps = keep
	s.mu.Unlock()
	for _, v := range victims {
		if err := removeSnapshotDir(s.fs, v.dir); err != nil {
			s.log.Error("cannot remove an old snapshot", "dir", v.dir, "error", err)
		} else {
			s.log.Debug("reaped snapshot", "id", v.meta.ID)
		}
	}
}

// removeSnapshotDir deletes a snapshot: meta.json first (durably), so a
// crash part-way leaves a directory that open recognises as garbage.
func removeSnapshotDir(fs vfs.FS, dir string) error {
	if err := vfs.RemoveFile(fs, filepath.Join(dir, metaFileName)); err != nil {
		return err
	}
	if err := fs.RemoveAll(dir); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(dir))
}

// stagingDir makes a directory next to the snapshots for staging a stream
// that does not come from this store (open removes it if a crash leaves
// it behind).
func (s *snapshotStore) stagingDir() (string, error) {
	for n := time.Now().UnixNano(); ; n++ {
		dir := filepath.Join(s.dir, fmt.Sprintf("restore-%d%s", n, tmpSuffix))
		if err := s.fs.Mkdir(dir, 0o755); !errors.Is(err, os.ErrExist) {
			return dir, err
		}
	}
}

// SnapshotStats reports this node's snapshot activity since it started.
func (g *Group) SnapshotStats() SnapshotStats {
	s := g.fsm.snaps
	if s == nil {
		return SnapshotStats{}
	}
	return SnapshotStats{Taken: s.taken.Load(), Received: s.received.Load(), Opened: s.opened.Load(), Restored: s.restored.Load()}
}

// stagedManifestPath is the manifest file of a snapshot directory.
func stagedManifestPath(dir string) string {
	p := filepath.Join(dir, manifestFileName)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return filepath.Join(dir, legacyStateName)
	}
	return p
}
