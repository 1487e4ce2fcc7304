package store

import (
	"bytes"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

func TestStorePutGetRoundTrip(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	n := 0
	batches := putBatches(t, s, "T", 4, 20, 8, 300, &n)
	for _, b := range batches {
		for i, r := range b.results {
			m := b.msgs[i]
			if r.MsgID != message.OffsetMsgID(testStoreHost, r.PhysicalOffset) {
				t.Fatalf("msgId %s does not name offset %d", r.MsgID, r.PhysicalOffset)
			}
			got, err := s.MessageByID(r.MsgID)
			if err != nil {
				t.Fatalf("MessageByID: %v", err)
			}
			if !bytes.Equal(got.Body, m.Body) || got.QueueOffset != r.QueueOffset || got.Tags() != m.Tags() {
				t.Fatalf("message %s read back differs", r.MsgID)
			}
		}
	}
	// Every queue reads back in order, queue offsets dense from 0.
	for q := int32(0); q < 4; q++ {
		off, seen := int64(0), 0
		for {
			res, err := s.Get("T", q, off, 7, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				m, _, err := message.DecodeRecord(r.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				if m.QueueOffset != off || m.QueueID != q {
					t.Fatalf("queue %d: got offset %d queue %d, want %d", q, m.QueueOffset, m.QueueID, off)
				}
				off++
				seen++
			}
			res.Release()
			if res.Status != Found {
				if res.Status != OffsetOverflowOne {
					t.Fatalf("queue %d ended with %v", q, res.Status)
				}
				break
			}
			if res.NextBeginOffset != off {
				t.Fatalf("next begin %d, want %d", res.NextBeginOffset, off)
			}
		}
		if seen != 40 {
			t.Fatalf("queue %d: read %d, want 40", q, seen)
		}
	}
	verifyConsistent(t, s, nil)
}

func TestStoreGetStatuses(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	res, err := s.Get("Empty", 0, 0, 10, nil)
	if err != nil || res.Status != NoMessageInQueue || res.NextBeginOffset != 0 {
		t.Fatalf("empty queue: %v %+v", err, res)
	}
	n := 0
	putBatches(t, s, "T", 1, 1, 12, 100, &n) // tags cycle A,B,C
	cases := []struct {
		name   string
		offset int64
		filter Filter
		status GetStatus
		count  int
		next   int64
	}{
		{"all", 0, nil, Found, 12, 12},
		{"caught up", 12, nil, OffsetOverflowOne, 0, 12},
		{"past the end", 20, nil, OffsetOverflowBadly, 0, 12},
		{"TagB only", 0, NewTagFilter("TagB"), Found, 4, 12},
		{"TagA || TagC", 0, NewTagFilter("TagA || TagC"), Found, 8, 12},
		{"star", 3, NewTagFilter("*"), Found, 9, 12},
		{"nothing matches, next offset still moves", 0, NewTagFilter("TagZ"), NoMatchedMessage, 0, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Get("T", 0, c.offset, 32, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Release()
			if res.Status != c.status || len(res.Records) != c.count || res.NextBeginOffset != c.next {
				t.Fatalf("got %v, %d records, next %d; want %v, %d, %d",
					res.Status, len(res.Records), res.NextBeginOffset, c.status, c.count, c.next)
			}
		})
	}
	// A max smaller than what matches stops early and says where to go on.
	res, err = s.Get("T", 0, 0, 2, NewTagFilter("TagC"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Records) != 2 || res.NextBeginOffset != 6 {
		t.Fatalf("got %d records next %d, want 2 next 6", len(res.Records), res.NextBeginOffset)
	}
}

func TestStoreSeqSkipsReplayedBatches(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, testConfig(dir))
	n := 0
	putBatches(t, s, "T", 2, 5, 3, 64, &n)
	if s.LastSeq() != 5 {
		t.Fatalf("LastSeq %d, want 5", s.LastSeq())
	}
	if _, err := s.Put(5, []*message.Ext{testMsg("T", 0, 99, 10)}); !errors.Is(err, ErrSeqApplied) {
		t.Fatalf("re-applied seq: got %v, want ErrSeqApplied", err)
	}
	if _, err := s.Put(3, []*message.Ext{testMsg("T", 0, 99, 10)}); !errors.Is(err, ErrSeqApplied) {
		t.Fatalf("old seq: got %v, want ErrSeqApplied", err)
	}
	// Gaps in seq are allowed (raft entries that are not batches).
	if _, err := s.Put(9, []*message.Ext{testMsg("T", 0, 99, 10)}); err != nil {
		t.Fatal(err)
	}
	// An empty batch records a seq without messages.
	if _, err := s.Put(12, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, testConfig(dir))
	defer s.Close()
	if s.LastSeq() != 12 {
		t.Fatalf("LastSeq after reopen %d, want 12", s.LastSeq())
	}
	verifyConsistent(t, s, nil)
}

func TestStoreRejectsBadMessages(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'x'
	}
	cases := map[string]*message.Ext{
		"empty topic":  testMsg("", 0, 1, 10),
		"long topic":   testMsg(string(long), 0, 1, 10),
		"negative qid": testMsg("T", -1, 1, 10),
		"body too big": testMsg("T", 0, 1, 17<<10),
		"key too long": func() *message.Ext {
			m := testMsg("T", 0, 1, 10)
			m.SetProperty(message.PropertyKeys, string(long)+string(long)+string(long)+string(long)+string(long)+string(long))
			return m
		}(),
		"no store host": func() *message.Ext { m := testMsg("T", 0, 1, 10); m.StoreHost = netip.AddrPort{}; return m }(),
	}
	for name, m := range cases {
		if _, err := s.Put(0, []*message.Ext{m}); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: got %v, want ErrBadMessage", name, err)
		}
	}
	if s.LastSeq() != 0 {
		t.Fatalf("rejected batches advanced LastSeq to %d", s.LastSeq())
	}
}

func TestStoreConcurrentPutAndGet(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	const writers, perWriter = 4, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if _, err := s.Put(0, []*message.Ext{testMsg("T", int32(w), w*1000+i, 200)}); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	for r := 0; r < 2; r++ {
		rg.Add(1)
		go func(q int32) {
			defer rg.Done()
			off := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := s.Get("T", q, off, 16, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, rec := range res.Records {
					if _, _, err := message.DecodeRecord(rec.Bytes); err != nil {
						t.Error(err)
					}
				}
				off = res.NextBeginOffset
				res.Release()
			}
		}(int32(r))
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	if s.LastSeq() != writers*perWriter {
		t.Fatalf("LastSeq %d, want %d", s.LastSeq(), writers*perWriter)
	}
	verifyConsistent(t, s, nil)
}
