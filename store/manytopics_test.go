package store

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

// procStatus returns a field of /proc/self/status in KiB (VmRSS, VmHWM).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line[len(field)+1:])
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return -1
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestManyTopics writes 10 000 topics × 8 queues, reads every queue back,
// reopens the store and reads again, and logs resident memory, open files
// and reopen time. With -short or under the race detector it uses 1 000
// topics (make test runs the full size in a separate pass without the race
// detector). Set LEDGERMQ_MANY_TOPICS to change the topic count.
func TestManyTopics(t *testing.T) {
	topics := 10000
	if testing.Short() || raceEnabled {
		topics = 1000
	}
	if v, err := strconv.Atoi(os.Getenv("LEDGERMQ_MANY_TOPICS")); err == nil && v > 0 {
		topics = v
	}
	const queues = 8
	cfg := testConfig(t.TempDir())
	cfg.SegmentSize = 64 << 20
	cfg.UnitsPerQueueFile = 300000
	cfg.MaxOpenQueueFiles = 256
	cfg.IndexSlots = 1 << 16
	cfg.IndexEntries = 1 << 20
	s := mustOpen(t, cfg)
	fdBase := openFDs()
	runtime.GC()
	rssBefore := procStatus("VmRSS")

	start := time.Now()
	batch := make([]*message.Ext, 0, 64)
	n := 0
	for tp := 0; tp < topics; tp++ {
		for q := 0; q < queues; q++ {
			batch = append(batch, testMsg(fmt.Sprintf("topic-%05d", tp), int32(q), n, 64))
			n++
			if len(batch) == cap(batch) {
				if _, err := s.Put(0, batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	if len(batch) > 0 {
		if _, err := s.Put(0, batch); err != nil {
			t.Fatal(err)
		}
	}
	writeTook := time.Since(start)
	readAll := func(s *Store) {
		for tp := 0; tp < topics; tp++ {
			topic := fmt.Sprintf("topic-%05d", tp)
			for q := int32(0); q < queues; q++ {
				res, err := s.Get(topic, q, 0, 4, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Records) != 1 {
					t.Fatalf("%s/%d: %d records, status %v", topic, q, len(res.Records), res.Status)
				}
				res.Release()
			}
		}
	}
	readAll(s)
	maxFDs := openFDs() - fdBase
	if got := s.cq.OpenFiles(); got > cfg.MaxOpenQueueFiles {
		t.Fatalf("%d queue files open, bound is %d", got, cfg.MaxOpenQueueFiles)
	}
	runtime.GC()
	rssAfter := procStatus("VmRSS")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	start = time.Now()
	s = mustOpen(t, cfg)
	reopenTook := time.Since(start)
	defer s.Close()
	readAll(s)
	if s.Recovery().RebuiltQueues != 0 || s.Recovery().Replayed != 0 {
		t.Fatalf("clean reopen rebuilt or replayed: %+v", s.Recovery())
	}
	nq := topics * queues
	t.Logf("%d topics x %d queues: write %v, RSS growth %d KiB (%.2f KiB/queue, includes page cache of mapped files), "+
		"open fds above baseline %d (queue-file bound %d), clean reopen %v",
		topics, queues, writeTook.Round(time.Millisecond), rssAfter-rssBefore,
		float64(rssAfter-rssBefore)/float64(nq), maxFDs, cfg.MaxOpenQueueFiles, reopenTook.Round(time.Millisecond))
}
