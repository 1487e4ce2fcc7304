package consumequeue

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// trashPrefix starts the name a topic directory is renamed to before it is
// removed. It contains "..", so it never names a topic, and Open removes
// what a crash left behind.
const trashPrefix = "..deleted-"

// QueueID names one queue.
type QueueID struct {
	Topic   string
	QueueID int32
}

// Store holds the ConsumeQueues of one broker: a directory per topic, a
// directory per queue, and a bounded cache of open files shared by all
// queues. Queues are loaded lazily, so opening a Store costs the same with
// one queue or a hundred thousand.
//
// All methods are safe for concurrent use. Lock order: Store.mu, then
// Queue.mu, then the file cache's lock.
type Store struct {
	cfg   Config
	upf   int64 // units per file
	limit int64 // first queue offset that cannot be stored
	log   hclog.Logger
	cache *fileCache

	closed atomic.Bool
	buf    buffered // the queues' write buffers (tail.go)

	mu     sync.RWMutex
	topics map[string]*topicQueues
}

// topicQueues holds the handles of one topic; name is shared by them.
type topicQueues struct {
	name   string
	queues map[int32]*Queue
}

// Open opens (creating if needed) the store in cfg.Dir. It reads no queue:
// each is loaded on first use. The caller owns the directory: it must keep
// other processes out (the broker's store holds a lock on its parent).
func Open(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.FS.MkdirAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("consumequeue: open: %w", err)
	}
	s := &Store{
		cfg:    cfg,
		upf:    int64(cfg.UnitsPerFile),
		limit:  maxQueueOffset(int64(cfg.UnitsPerFile)),
		log:    cfg.Logger,
		cache:  newFileCache(cfg.FS, cfg.Dir, cfg.MaxOpenFiles, cfg.Logger, cfg.SyncReport),
		topics: make(map[string]*topicQueues),
	}
	if err := s.removeTrash(); err != nil {
		return nil, err
	}
	return s, nil
}

// removeTrash finishes topic deletions a crash interrupted.
func (s *Store) removeTrash() error {
	ents, err := s.cfg.FS.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("consumequeue: open: %w", err)
	}
	removed := false
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), trashPrefix) {
			if err := s.cfg.FS.RemoveAll(filepath.Join(s.cfg.Dir, e.Name())); err != nil {
				return fmt.Errorf("consumequeue: open: remove %s: %w", e.Name(), err)
			}
			removed = true
		}
	}
	if removed {
		return s.cfg.FS.SyncDir(s.cfg.Dir)
	}
	return nil
}

// Queue returns the handle of topic/queueID, creating it if needed. No file
// is read or opened until the queue is used; a handle costs about a hundred
// bytes and no descriptor while idle. The same handle is returned for the
// same queue until its topic is deleted.
func (s *Store) Queue(topic string, queueID int32) (*Queue, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	if queueID < 0 {
		return nil, fmt.Errorf("%w: %d", ErrBadQueueID, queueID)
	}
	s.mu.RLock()
	var q *Queue
	if t := s.topics[topic]; t != nil {
		q = t.queues[queueID]
	}
	s.mu.RUnlock()
	if q != nil {
		return q, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	t := s.topics[topic]
	if t == nil {
		t = &topicQueues{name: topic, queues: make(map[int32]*Queue)}
		s.topics[topic] = t
	}
	if q = t.queues[queueID]; q == nil {
		q = &Queue{s: s, topic: t.name, id: queueID}
		t.queues[queueID] = q
	}
	return q, nil
}

// Queues lists every queue that has a directory on disk or a handle in
// memory, sorted by topic then queue id.
func (s *Store) Queues() ([]QueueID, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := make(map[QueueID]struct{})
	topics, err := s.diskTopics()
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		ents, err := s.cfg.FS.ReadDir(filepath.Join(s.cfg.Dir, t))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("consumequeue: list queues of %s: %w", t, err)
		}
		for _, e := range ents {
			if id, ok := parseQueueID(e.Name()); ok && e.IsDir() {
				seen[QueueID{t, id}] = struct{}{}
			}
		}
	}
	for _, t := range s.topics {
		for id := range t.queues {
			seen[QueueID{t.name, id}] = struct{}{}
		}
	}
	out := make([]QueueID, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b QueueID) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.QueueID) - int(b.QueueID)
	})
	return out, nil
}

// Topics lists every topic that has a directory on disk or a handle in
// memory, sorted.
func (s *Store) Topics() ([]string, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	topics, err := s.diskTopics()
	if err != nil {
		return nil, err
	}
	for name := range s.topics {
		topics = append(topics, name)
	}
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

// diskTopics returns the topic directories in Dir, sorted.
func (s *Store) diskTopics() ([]string, error) {
	ents, err := s.cfg.FS.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: list topics: %w", err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && ValidTopic(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// DeleteTopic removes every queue of topic: it retires the topic's handles
// (their methods return ErrClosed from then on; Queue hands out fresh ones),
// closes their files, and removes the topic directory. The directory is
// first renamed to a trash name and the rename made durable, so a crash
// never leaves half a topic behind. Deleting a topic that does not exist
// is not an error.
func (s *Store) DeleteTopic(topic string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkTopic(topic); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.topics[topic]; t != nil {
		for _, q := range t.queues {
			q.retire()
		}
		delete(s.topics, topic)
	}
	dir := filepath.Join(s.cfg.Dir, topic)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(topic))
	trash := filepath.Join(s.cfg.Dir, trashPrefix+strconv.FormatUint(h.Sum64(), 16))
	if err := s.cfg.FS.RemoveAll(trash); err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	if err := s.cfg.FS.Rename(dir, trash); err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	if err := s.cfg.FS.SyncDir(s.cfg.Dir); err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	if err := s.cfg.FS.RemoveAll(trash); err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	return s.cfg.FS.SyncDir(s.cfg.Dir)
}

// Flush makes every unit put before the call durable: it writes the units
// queues hold in memory (tail.go), fdatasyncs each open file written since
// the last Flush, syncs files that were
// closed (evicted from the cache) while dirty, and syncs directories that
// gained a file or sub-directory. When many closed files and directories
// are pending it syncs the file system once instead (syncfs). Safe to call
// from any goroutine, concurrently with writers; writes made during the
// call may or may not be covered.
func (s *Store) Flush() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.spillAll(); err != nil {
		return err
	}
	return s.cache.flush()
}

// OpenFiles returns the number of file descriptors the store holds open
// (never more than Config.MaxOpenFiles).
func (s *Store) OpenFiles() int { return s.cache.openCount() }

// Close writes the units queues hold in memory, flushes and closes every
// file. It waits for in-flight reads and writes to finish; later calls on
// the store or its queues return ErrClosed. Closing twice is not an error.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := s.spillAll()
	return errors.Join(err, s.cache.close())
}

// CloseUnclean is Close for crash tests of the layers above: the units
// queues hold in memory are lost, as a killed process loses them; what
// was written is kept.
func (s *Store) CloseUnclean() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.dropAll()
	return s.cache.close()
}

// parseQueueID parses a queue directory name: a canonical non-negative
// decimal int32.
func parseQueueID(name string) (int32, bool) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
		return 0, false
	}
	return int32(id), true
}
