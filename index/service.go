package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Service is the set of index files of one store directory. See doc.go for
// the concurrency contract; in short, every method is safe for concurrent
// use, Put and the file-set changes are serialised by a write lock, and
// queries share a read lock.
type Service struct {
	cfg  Config
	g    geometry
	log  hclog.Logger
	lock *vfs.DirLock

	mu       sync.RWMutex
	closed   bool
	files    []*indexFile // usable files, oldest first; the last one takes puts
	corrupt  []string     // paths of files whose header or size is bad
	lastName fileName     // largest name seen or created
	hasName  bool
	retired  []mapping // mappings detached by Put, released by Flush or Close

	// inflight counts Flush, DeleteBefore, TruncateAfter and Reset calls that
	// work outside mu; Close waits for them.
	inflight sync.WaitGroup
}

// mapping is a file's mapping detached from readers.
type mapping struct {
	f    *indexFile
	data []byte
}

// FileInfo describes one usable index file.
type FileInfo struct {
	Path   string
	Header Header
}

// Open opens (creating if needed) the index in cfg.Dir and takes the
// directory's lock. Files are ordered by name, which is creation order. A
// file whose size or header is bad is logged, listed by Corrupt and never
// read; the other files keep serving. The newest cfg.MaxFiles usable files
// are mapped, and the newest one takes further puts until it is full.
func Open(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.FS.MkdirAll(cfg.Dir); err != nil {
		return nil, err
	}
	lock, err := vfs.Lock(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, g: cfg.geometry(), log: cfg.Logger, lock: lock}
	if err := s.load(); err != nil {
		for _, f := range s.files {
			if f.data != nil {
				_ = cfg.FS.Unmap(f.data)
			}
		}
		_ = lock.Release()
		return nil, err
	}
	return s, nil
}

// load scans the directory, validates headers and maps the newest files.
func (s *Service) load() error {
	ents, err := s.cfg.FS.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("index: read dir %s: %w", s.cfg.Dir, err)
	}
	var names []fileName
	removedTmp := false
	for _, ent := range ents {
		base := ent.Name()
		if trimmed, ok := strings.CutSuffix(base, tmpSuffix); ok {
			if _, ok := parseFileName(trimmed); ok {
				if err := s.cfg.FS.Remove(filepath.Join(s.cfg.Dir, base)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("index: remove %s: %w", base, err)
				}
				removedTmp = true
			}
			continue
		}
		if n, ok := parseFileName(base); ok && ent.Type().IsRegular() {
			names = append(names, n)
		}
	}
	if removedTmp {
		if err := s.cfg.FS.SyncDir(s.cfg.Dir); err != nil {
			return fmt.Errorf("index: %w", err)
		}
	}
	slices.SortFunc(names, func(a, b fileName) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	for _, n := range names {
		s.noteName(n)
		path := filepath.Join(s.cfg.Dir, n.String())
		h, err := readHeader(s.cfg.FS, path, s.g)
		if errors.Is(err, ErrBadHeader) {
			s.log.Error("unusable index file; it is not served until the index is rebuilt", "path", path, "error", err)
			s.corrupt = append(s.corrupt, path)
			continue
		}
		if err != nil {
			return err
		}
		s.files = append(s.files, &indexFile{fs: s.cfg.FS, name: n, path: path, hdr: h})
	}
	for _, f := range s.files[max(0, len(s.files)-s.cfg.MaxFiles):] {
		if f.data, err = mapFile(s.cfg.FS, f.path, s.g); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) noteName(n fileName) {
	if !s.hasName || s.lastName.less(n) {
		s.lastName, s.hasName = n, true
	}
}

// nextName names a file whose first entry has store time ts. Names never go
// backwards: if ts is not after the newest existing name (a clock step back),
// the newest stamp is reused with the next sequence number.
func (s *Service) nextName(ts int64) fileName {
	n := fileName{stamp: stampOf(ts)}
	if s.hasName && !s.lastName.less(n) {
		n = fileName{stamp: s.lastName.stamp, seq: s.lastName.seq + 1}
	}
	for {
		if _, err := s.cfg.FS.Stat(filepath.Join(s.cfg.Dir, n.String())); errors.Is(err, os.ErrNotExist) {
			return n
		}
		n.seq++
	}
}

func checkKey(key string) error {
	return checkKeyLen(len(key))
}

func checkKeyLen(n int) error {
	if n == 0 || n > MaxKeyLen {
		return fmt.Errorf("%w: length %d, want 1..%d bytes", ErrBadKey, n, MaxKeyLen)
	}
	return nil
}

// Key is one key for PutKeys: the key indexed is Topic + "#" + Name when
// Topic is not empty (a message's KEYS value under its topic, without the
// caller building that string), Name alone when Topic is empty.
type Key struct {
	Topic          string
	Name           string
	PhyOffset      int64 // commitlog offset of the message
	StoreTimestamp int64 // store time of the message (ms)
}

// String returns the key indexed.
func (k Key) String() string {
	if k.Topic == "" {
		return k.Name
	}
	return k.Topic + "#" + k.Name
}

// Put indexes key → phyOffset for a message stored at storeTimestamp (ms).
// It rolls to a new file, named after storeTimestamp, when the newest file is
// full or there is none. It returns ErrBadKey for an empty key or one longer
// than MaxKeyLen bytes, ErrBadOffset for a negative offset, and ErrClosed
// after Close.
//
// Put is meant for one goroutine (the store's dispatcher) but is safe to
// call concurrently with every other method; it holds the write lock.
func (s *Service) Put(key string, phyOffset int64, storeTimestamp int64) error {
	_, err := s.PutKeys([]Key{{Name: key, PhyOffset: phyOffset, StoreTimestamp: storeTimestamp}})
	return err
}

// PutKeys indexes keys in order, as a Put of each would, and returns how
// many it indexed: on an error (one of Put's), keys[:n] are indexed and
// keys[n] is the one that failed. It holds the write lock for the whole
// call, so a query sees none of the keys or all that were indexed, and
// rewrites each file's header once, not once a key.
func (s *Service) PutKeys(keys []Key) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		kh     keyHasher
		f      *indexFile // the file taking keys, nil before the first
		wrote  bool       // f took a key in this call
		backed int64      // f's entry pages below this have storage
	)
	defer func() {
		if wrote {
			f.endPuts()
		}
	}()
	for i := range keys {
		k := &keys[i]
		hash, err := kh.hash(k)
		if err != nil {
			return i, err
		}
		if k.PhyOffset < 0 {
			return i, fmt.Errorf("%w: %d", ErrBadOffset, k.PhyOffset)
		}
		if f == nil || f.full(s.g) {
			if s.closed {
				return i, ErrClosed
			}
			if wrote {
				// Before roll, which may detach f's mapping.
				f.endPuts()
				wrote = false
			}
			if f = s.writable(); f == nil {
				if f, err = s.roll(k.StoreTimestamp); err != nil {
					return i, err
				}
			}
			if err := f.beginPuts(s.g); err != nil {
				f = nil
				return i, err
			}
			backed = 0
		}
		if err := f.putEntry(s.g, hash, k.PhyOffset, k.StoreTimestamp, &backed); err != nil {
			return i, err
		}
		wrote = true
	}
	return len(keys), nil
}

// keyHasher hashes the keys of one PutKeys call, remembering the hash of
// the last topic prefix ("topic#"): a message's keys, and a batch's
// messages, share their topic.
type keyHasher struct {
	topic  string
	prefix int32 // JavaStringHash(topic + "#") when ok
	ok     bool
}

// hash checks k's length and returns keyHash of the key it stands for.
// Topic and Name are hashed in place while they are ASCII (Java's hash of
// a concatenation continues the hash of its first part); otherwise the
// key is built and hashed whole.
func (kh *keyHasher) hash(k *Key) (int32, error) {
	if k.Topic == "" {
		if err := checkKey(k.Name); err != nil {
			return 0, err
		}
		if h, ascii := asciiHash(0, k.Name); ascii {
			return nonNegative(h), nil
		}
		return keyHash(k.Name), nil
	}
	if err := checkKeyLen(len(k.Topic) + 1 + len(k.Name)); err != nil {
		return 0, err
	}
	if !kh.ok || kh.topic != k.Topic {
		h, ascii := asciiHash(0, k.Topic)
		if !ascii {
			return keyHash(k.String()), nil
		}
		kh.topic, kh.prefix, kh.ok = k.Topic, 31*h+'#', true
	}
	h, ascii := asciiHash(kh.prefix, k.Name)
	if !ascii {
		return keyHash(k.String()), nil
	}
	return nonNegative(h), nil
}

// writable returns the file that takes the next put, or nil if a new one is
// needed. Called with mu held.
func (s *Service) writable() *indexFile {
	if len(s.files) == 0 {
		return nil
	}
	f := s.files[len(s.files)-1]
	if f.data == nil || f.full(s.g) {
		return nil
	}
	return f
}

// roll creates the next file and, if more than MaxFiles files are now
// mapped, detaches the oldest mapping (released by the next Flush or Close).
// Called with mu held for writing.
func (s *Service) roll(ts int64) (*indexFile, error) {
	n := s.nextName(ts)
	f, err := createFile(s.cfg.FS, s.cfg.Dir, n, s.g)
	if err != nil {
		return nil, err
	}
	s.noteName(n)
	s.files = append(s.files, f)
	s.log.Debug("created index file", "path", f.path)
	mapped := 0
	for _, x := range s.files {
		if x.data != nil {
			mapped++
		}
	}
	for _, x := range s.files {
		if mapped <= s.cfg.MaxFiles {
			break
		}
		if x.data != nil {
			s.retired = append(s.retired, mapping{f: x, data: x.data})
			x.data = nil
			mapped--
		}
	}
	return f, nil
}

// Query returns up to maxResults commitlog offsets indexed under a key whose hash
// equals key's and whose store time may lie in [begin, end] (ms, inclusive),
// newest first: files are walked from newest to oldest, skipping those whose
// [BeginTimestamp, EndTimestamp] misses the range, and each file's chain from
// its newest entry. Offsets are de-duplicated.
//
// Keys are compared by hash only and store times are kept to the second, so
// the result is a superset: the caller confirms each message's key (and, if
// it needs millisecond precision, its store time) by reading it. Nothing
// indexed under key with a store time in range is left out.
//
// Query is safe concurrently with every method; it holds the read lock, so
// it waits for a Put in progress and holds back the next one.
func (s *Service) Query(key string, begin, end int64, maxResults int) ([]int64, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	hash := keyHash(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if maxResults <= 0 || begin > end {
		return nil, nil
	}
	var out []int64
	seen := make(map[int64]struct{})
	emit := func(off int64) bool {
		if _, dup := seen[off]; !dup {
			seen[off] = struct{}{}
			out = append(out, off)
		}
		return len(out) < maxResults
	}
	for i := len(s.files) - 1; i >= 0; i-- {
		f := s.files[i]
		h := f.hdr
		if h.entries() == 0 || h.BeginTimestamp > end || h.EndTimestamp < begin {
			continue
		}
		err := s.walkFile(f, hash, begin, end, emit)
		if errors.Is(err, errStop) {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// walkFile walks one file through its mapping or, for a cold file, pread.
func (s *Service) walkFile(f *indexFile, hash int32, begin, end int64, emit func(int64) bool) error {
	limit := f.limit(s.g)
	var src source
	if f.data != nil {
		src = memSource(f.data)
	} else {
		fd, err := s.cfg.FS.OpenFile(f.path, os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("index: open %s: %w", f.path, err)
		}
		defer fd.Close()
		src = &fileSource{f: fd}
	}
	if f.slots != nil {
		src = shadowSource{src: src, slots: f.slots}
	}
	return walk(src, s.g, f.hdr, limit, hash, begin, end, emit)
}

// Flush writes the changed pages of the shadow slot tables into their
// files, msyncs every mapped file changed since the previous Flush and
// releases mappings Put detached. The shadow pages are written under the
// lock (puts wait); the msync runs outside it, so Put and Query go on
// meanwhile. Safe for concurrent use; typically called by the store's flush
// goroutine.
func (s *Service) Flush() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	retired := s.retired
	s.retired = nil
	var pinned []mapping
	var syncs []*indexFile
	var errs []error
	for _, f := range s.files {
		msync := f.data != nil && f.dirty.Swap(false)
		if msync {
			f.pins.Add(1)
			pinned = append(pinned, mapping{f: f, data: f.data})
		}
		if f.slots == nil {
			continue
		}
		wrote, err := f.writeShadow()
		if err != nil {
			errs = append(errs, err)
		}
		if wrote && !msync {
			f.pins.Add(1)
			syncs = append(syncs, f)
		}
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	errs = append(errs, s.syncShadows(syncs)...)
	for _, p := range pinned {
		if err := s.cfg.FS.SyncMapped(p.f.path, p.data); err != nil {
			p.f.dirty.Store(true) // retry on the next Flush
			errs = append(errs, fmt.Errorf("index: msync %s: %w", p.f.path, err))
		}
		p.f.pins.Done()
	}
	errs = append(errs, release(retired))
	s.dropShadows()
	return errors.Join(errs...)
}

// dropShadows frees the shadow of every file that no longer takes puts
// once the file holds all of it.
func (s *Service) dropShadows() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	w := s.writable()
	for _, f := range s.files {
		if f.slots != nil && f != w && !f.slotsChanged() {
			f.slots, f.slotDirty = nil, nil
		}
	}
}

// release waits for flushes still using each mapping, then msyncs it if it
// is dirty and unmaps it.
func release(ms []mapping) error {
	var errs []error
	for _, m := range ms {
		m.f.pins.Wait()
		errs = append(errs, unmap(m.f.fs, m.f.path, m.data, m.f.dirty.Swap(false)))
	}
	return errors.Join(errs...)
}

// DeleteBefore removes every file, except the newest, whose EndPhyOffset is
// below phyMinOffset: the commitlog no longer holds any message it points to.
// The directory is fsynced. Safe for concurrent use; typically called by the
// store's retention goroutine.
func (s *Service) DeleteBefore(phyMinOffset int64) error {
	return s.remove(func(i int, f *indexFile) bool {
		return i < len(s.files)-1 && f.hdr.EndPhyOffset < phyMinOffset
	}, false)
}

// Reset removes every index file, including the ones Corrupt lists, so the
// owner can rebuild the index from the commitlog. Safe for concurrent use.
func (s *Service) Reset() error {
	return s.remove(func(int, *indexFile) bool { return true }, true)
}

// remove drops the files drop selects (and the corrupt ones if withCorrupt)
// from the set under the write lock, then unmaps and deletes them outside it.
func (s *Service) remove(drop func(i int, f *indexFile) bool, withCorrupt bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var keep []*indexFile
	var gone []mapping
	for i, f := range s.files {
		if drop(i, f) {
			gone = append(gone, mapping{f: f, data: f.data})
			f.data = nil
		} else {
			keep = append(keep, f)
		}
	}
	var paths []string
	if withCorrupt {
		paths, s.corrupt = s.corrupt, nil
	}
	s.files = keep
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	if len(gone) == 0 && len(paths) == 0 {
		return nil
	}
	var errs []error
	for _, m := range gone {
		m.f.pins.Wait()
		if m.data != nil {
			if err := s.cfg.FS.Unmap(m.data); err != nil {
				errs = append(errs, fmt.Errorf("index: munmap %s: %w", m.f.path, err))
			}
		}
		paths = append(paths, m.f.path)
	}
	for _, p := range paths {
		if err := s.cfg.FS.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("index: remove %s: %w", p, err))
			continue
		}
		s.log.Info("removed index file", "path", p)
	}
	if err := s.cfg.FS.SyncDir(s.cfg.Dir); err != nil {
		errs = append(errs, fmt.Errorf("index: %w", err))
	}
	return errors.Join(errs...)
}

// MaxPhyOffset returns the largest EndPhyOffset of the files holding at least
// one entry, or -1 if there is none (or the service is closed). Recovery
// re-dispatches the commitlog from there. Safe for concurrent use.
func (s *Service) MaxPhyOffset() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	best := int64(-1)
	if s.closed {
		return best
	}
	for _, f := range s.files {
		if f.hdr.entries() > 0 {
			best = max(best, f.hdr.EndPhyOffset)
		}
	}
	return best
}

// Files lists the usable files, oldest first, with their current headers.
// Safe for concurrent use.
func (s *Service) Files() []FileInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]FileInfo, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, FileInfo{Path: f.path, Header: f.hdr})
	}
	return out
}

// Corrupt lists the files Open found unusable (bad size or header). They are
// never read; Reset deletes them. Safe for concurrent use.
func (s *Service) Corrupt() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.corrupt)
}

// Close waits for Flush and removal calls in progress, msyncs and unmaps
// every file and releases the directory lock. Later calls of any method
// return ErrClosed (or a zero value).
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	ms := s.retired
	s.retired = nil
	var syncs []*indexFile
	var errs []error
	for _, f := range s.files {
		if f.slots != nil {
			wrote, err := f.writeShadow()
			if err != nil {
				errs = append(errs, err)
			}
			switch {
			case wrote && f.data != nil:
				f.dirty.Store(true) // release msyncs what was written
			case wrote:
				f.pins.Add(1)
				syncs = append(syncs, f)
			}
		}
		if f.data != nil {
			ms = append(ms, mapping{f: f, data: f.data})
			f.data = nil
		}
	}
	s.mu.Unlock()

	s.inflight.Wait()
	errs = append(errs, s.syncShadows(syncs)...)
	errs = append(errs, release(ms), s.lock.Release())
	return errors.Join(errs...)
}
