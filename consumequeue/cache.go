package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// syncfsThreshold is the number of closed-while-dirty files and created
// directories above which Flush syncs the whole file system once (syncfs)
// instead of reopening and syncing each of them.
const syncfsThreshold = 128

// fileKey names one queue file in the cache: its queue handle and the queue
// offset of the file's first unit.
type fileKey struct {
	q     *Queue
	start int64
}

func (k fileKey) path() string { return k.q.filePath(k.start) }

// cachedFile is an open queue file. f is set before the entry is handed to
// anyone and never changes; every other field is guarded by fileCache.mu.
type cachedFile struct {
	key     fileKey
	f       vfs.File
	refs    int  // holders; the entry is idle (evictable) at 0
	dirty   bool // written since last synced
	opening bool // being opened by the goroutine that inserted it
	doomed  bool // forgotten while held: the last release closes it
	// prev and next link the entry into fileCache.idle while refs == 0
	// (nil otherwise): the list runs through the entries themselves, so a
	// release, once per read or write, allocates nothing.
	prev, next *cachedFile
}

// idleList is the LRU of idle entries, most recently released first, a
// ring through root.
type idleList struct {
	root cachedFile
}

func (l *idleList) init() { l.root.next, l.root.prev = &l.root, &l.root }

// back returns the least recently released entry, nil if there is none.
func (l *idleList) back() *cachedFile {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

func (l *idleList) pushFront(cf *cachedFile) {
	cf.prev, cf.next = &l.root, l.root.next
	l.root.next.prev = cf
	l.root.next = cf
}

// remove unlinks cf; an entry not in the list is left as it is.
func (l *idleList) remove(cf *cachedFile) {
	if cf.next == nil {
		return
	}
	cf.prev.next, cf.next.prev = cf.next, cf.prev
	cf.prev, cf.next = nil, nil
}

// fileCache is the Store's bounded set of open queue files, shared by all
// queues: an LRU of idle handles, reference-counted while in use, with the
// bookkeeping Flush needs (dirty open files, dirty files closed before they
// were synced, directories that gained entries).
//
// A holder keeps a handle only for one read, write or truncate and never
// waits for another handle while holding one, so waiting for a free slot
// cannot deadlock. Lock order: Queue.mu before fileCache.mu; no disk I/O
// other than open and close happens under fileCache.mu.
type fileCache struct {
	max  int
	root string
	// fs is the file system the files are opened and synced through
	// (Config.FS).
	fs  vfs.FS
	log hclog.Logger
	// syncs records the files' syncs (Config.SyncReport; nil: off).
	syncs *syncreport.Report

	mu      sync.Mutex
	cond    *sync.Cond // broadcast when a slot frees up or an open finishes
	files   map[fileKey]*cachedFile
	idle    idleList // idle entries, most recently released first
	open    int      // descriptors open or being opened, incl. Flush's
	inUse   int      // entries with refs > 0
	waiters int      // goroutines in cond.Wait
	pending map[fileKey]struct{}
	dirs    map[string]struct{}
	closed  bool
}

func newFileCache(fsys vfs.FS, root string, max int, log hclog.Logger, syncs *syncreport.Report) *fileCache {
	c := &fileCache{
		fs:      fsys,
		max:     max,
		root:    root,
		log:     log,
		syncs:   syncs,
		files:   make(map[fileKey]*cachedFile),
		pending: make(map[fileKey]struct{}),
		dirs:    make(map[string]struct{}),
	}
	c.cond = sync.NewCond(&c.mu)
	c.idle.init()
	return c
}

func (c *fileCache) wait() {
	c.waiters++
	c.cond.Wait()
	c.waiters--
}

func (c *fileCache) wake() {
	if c.waiters > 0 {
		c.cond.Broadcast()
	}
}

// acquire returns the open handle of k, opening it (read-write, created if
// create is set) when it is not cached; the caller must release it. When
// MaxOpenFiles handles are open it closes the least recently used idle one,
// or waits for one to become idle. A missing file is reported wrapping
// fs.ErrNotExist, and also ErrMissingFile unless create was set.
func (c *fileCache) acquire(k fileKey, create bool) (*cachedFile, error) {
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if cf, ok := c.files[k]; ok {
			if cf.opening {
				c.wait()
				continue
			}
			c.refLocked(cf)
			c.mu.Unlock()
			return cf, nil
		}
		if c.makeRoomLocked() {
			break
		}
		c.wait()
	}
	cf := &cachedFile{key: k, opening: true, refs: 1}
	c.files[k] = cf
	c.open++
	c.inUse++
	c.mu.Unlock()

	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	path := k.path()
	f, err := c.fs.OpenFile(path, flags, 0o644)

	c.mu.Lock()
	defer c.mu.Unlock()
	cf.opening = false
	defer c.wake()
	if err != nil {
		if c.files[k] == cf {
			delete(c.files, k)
		}
		c.open--
		c.inUse--
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrMissingFile, path, err)
		}
		return nil, fmt.Errorf("consumequeue: open %s: %w", path, err)
	}
	cf.f = f
	if create && c.syncs.Enabled() {
		if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
			c.syncs.Created(path, 0)
		}
	}
	return cf, nil
}

// makeRoomLocked reports whether another descriptor may be opened, closing
// the least recently used idle handle if that is what it takes.
func (c *fileCache) makeRoomLocked() bool {
	if c.open < c.max {
		return true
	}
	cf := c.idle.back()
	if cf == nil {
		return false
	}
	c.evictLocked(cf)
	return true
}

// evictLocked closes the idle handle cf. A dirty file is closed without a
// sync and remembered, so the next Flush syncs it: syncing here would put
// an fdatasync on the write path of every queue once more queues are busy
// than there are handles.
func (c *fileCache) evictLocked(cf *cachedFile) {
	c.idle.remove(cf)
	delete(c.files, cf.key)
	if cf.dirty {
		c.pending[cf.key] = struct{}{}
	}
	c.closeLocked(cf)
}

func (c *fileCache) closeLocked(cf *cachedFile) {
	if err := cf.f.Close(); err != nil {
		c.log.Warn("closing queue file", "path", cf.key.path(), "error", err)
	}
	c.open--
	c.wake()
}

func (c *fileCache) refLocked(cf *cachedFile) {
	if cf.refs == 0 {
		c.idle.remove(cf)
		c.inUse++
	}
	cf.refs++
}

// release gives back a handle from acquire; wrote marks the file dirty.
func (c *fileCache) release(cf *cachedFile, wrote bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wrote && !cf.doomed {
		cf.dirty = true
	}
	cf.refs--
	if cf.refs > 0 {
		return
	}
	c.inUse--
	if cf.doomed {
		c.closeLocked(cf)
		return
	}
	c.idle.pushFront(cf)
	c.wake()
}

// forget drops k from the cache because its file was removed: the handle is
// closed without a sync (now, or by its last holder) and any pending sync
// is cancelled. The caller holds k.q.mu for writing, so no queue operation
// holds the handle.
func (c *fileCache) forget(k fileKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(k)
}

func (c *fileCache) forgetLocked(k fileKey) {
	delete(c.pending, k)
	cf, ok := c.files[k]
	if !ok {
		return
	}
	delete(c.files, k)
	cf.dirty = false
	if cf.refs > 0 {
		cf.doomed = true
		return
	}
	c.idle.remove(cf)
	c.closeLocked(cf)
}

// forgetQueue forgets every file of q (its topic was deleted).
func (c *fileCache) forgetQueue(q *Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.files {
		if k.q == q {
			c.forgetLocked(k)
		}
	}
	for k := range c.pending {
		if k.q == q {
			delete(c.pending, k)
		}
	}
}

// dirCreated records that dir gained an entry, for Flush to sync.
func (c *fileCache) dirCreated(dir string) {
	c.mu.Lock()
	c.dirs[dir] = struct{}{}
	c.mu.Unlock()
}

// openCount returns the number of open descriptors.
func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// flush makes durable every write made before it was called: dirty open
// files, files closed while dirty, and directory entries created.
func (c *fileCache) flush() error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return c.syncAll()
}

func (c *fileCache) syncAll() error {
	c.mu.Lock()
	var open []*cachedFile
	for _, cf := range c.files {
		if cf.dirty && !cf.opening {
			cf.dirty = false
			c.refLocked(cf)
			open = append(open, cf)
		}
	}
	pending, dirs := c.pending, c.dirs
	c.pending = make(map[fileKey]struct{})
	c.dirs = make(map[string]struct{})
	c.mu.Unlock()

	if len(pending)+len(dirs) > syncfsThreshold {
		sizes := c.sizesBefore(open, pending)
		err := c.fs.SyncFS(c.root)
		if err == nil {
			for p, n := range sizes {
				c.syncs.Synced(p, n)
			}
			for _, cf := range open {
				c.release(cf, false)
			}
			return nil
		}
		c.restore(open, pending, dirs)
		return fmt.Errorf("consumequeue: syncfs %s: %w", c.root, err)
	}

	var errs []error
	for _, cf := range open {
		err := c.syncs.SyncFile(cf.f, func() error { return c.fs.SyncData(cf.f) })
		if err != nil {
			errs = append(errs, fmt.Errorf("consumequeue: sync %s: %w", cf.key.path(), err))
		}
		c.release(cf, err != nil)
	}
	for k := range pending {
		if err := c.syncClosed(k); err != nil {
			errs = append(errs, err)
			c.restore(nil, map[fileKey]struct{}{k: {}}, nil)
		}
	}
	for d := range dirs {
		if err := c.fs.SyncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			c.restore(nil, nil, map[string]struct{}{d: {}})
		}
	}
	return errors.Join(errs...)
}

// restore puts back sync work that failed, so the next Flush retries it.
func (c *fileCache) restore(open []*cachedFile, pending map[fileKey]struct{}, dirs map[string]struct{}) {
	for _, cf := range open {
		c.release(cf, true)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range pending {
		c.pending[k] = struct{}{}
	}
	for d := range dirs {
		c.dirs[d] = struct{}{}
	}
}

// syncClosed reopens a file closed while dirty and syncs it, within the
// descriptor bound. A file removed since is not an error.
func (c *fileCache) syncClosed(k fileKey) error {
	c.mu.Lock()
	for !c.makeRoomLocked() {
		c.wait()
	}
	c.open++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.open--
		c.wake()
		c.mu.Unlock()
	}()

	path := k.path()
	f, err := c.fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumequeue: open %s for sync: %w", path, err)
	}
	err = c.syncs.SyncFile(f, func() error { return c.fs.SyncData(f) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("consumequeue: sync %s: %w", path, err)
	}
	return nil
}

// close waits for every handle to be released, syncs what is dirty and
// closes every descriptor. Later acquires fail with ErrClosed.
func (c *fileCache) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	for c.inUse > 0 {
		c.wait()
	}
	c.mu.Unlock()

	err := c.syncAll()

	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cf := range c.files {
		delete(c.files, k)
		c.closeLocked(cf)
	}
	c.idle.init()
	return err
}

// sizesBefore is, when the durable-length report is on, the size of every
// file a syncfs is about to make durable (nil when it is off).
func (c *fileCache) sizesBefore(open []*cachedFile, pending map[fileKey]struct{}) map[string]int64 {
	if !c.syncs.Enabled() {
		return nil
	}
	sizes := make(map[string]int64, len(open)+len(pending))
	for _, cf := range open {
		if fi, err := cf.f.Stat(); err == nil {
			sizes[cf.f.Name()] = fi.Size()
		}
	}
	for k := range pending {
		if fi, err := c.fs.Stat(k.path()); err == nil {
			sizes[k.path()] = fi.Size()
		}
	}
	return sizes
}
