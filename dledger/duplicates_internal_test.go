package dledger

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dedup"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// TestAppendSentPairsIDsWithMessages: the sends an entry records carry
// each new keyed message's own id and lookup miss with its own store,
// whether every new message has a key (the ids are taken in order) or
// some have none (keyless ones skipped), and skip the duplicates.
func TestAppendSentPairsIDsWithMessages(t *testing.T) {
	keyedMsg := func(q int32, key string) *message.Ext {
		m := testMsg("T", q, "b")
		if key != "" {
			m.SetProperty(message.PropertyUniqKey, key)
		}
		return m
	}
	// Each id's miss is a real one of its key (they differ by hash).
	win := dedup.New(dedup.Config{})
	idOf := func(key string) newID {
		_, _, miss := win.LookupMiss("T", key, 1_700_000_000_000, time.Minute)
		return newID{dupID{"T", key}, miss}
	}
	results := func(n int) []store.PutResult {
		r := make([]store.PutResult, n)
		for i := range r {
			r[i].QueueOffset = int64(100 + i)
		}
		return r
	}
	type want struct {
		key    string
		offset int64
	}
	for _, tc := range []struct {
		name string
		pr   *proposal
		from []store.PutResult
		want []want
	}{{
		name: "every new message keyed",
		pr: &proposal{msgs: []*message.Ext{keyedMsg(0, "A"), keyedMsg(1, "B")},
			ids: []newID{idOf("A"), idOf("B")}},
		from: results(2),
		want: []want{{"A", 100}, {"B", 101}},
	}, {
		name: "a keyless message between",
		pr: &proposal{msgs: []*message.Ext{keyedMsg(0, "A"), keyedMsg(1, ""), keyedMsg(2, "C")},
			ids: []newID{idOf("A"), idOf("C")}},
		from: results(3),
		want: []want{{"A", 100}, {"C", 102}},
	}, {
		name: "a duplicate between",
		pr: &proposal{msgs: []*message.Ext{keyedMsg(0, "A"), keyedMsg(1, "A"), keyedMsg(2, "C")},
			dups: &dupState{kinds: []dupKind{dupNew, dupPending, dupNew}, results: make([]store.PutResult, 3)},
			ids:  []newID{idOf("A"), idOf("C")}},
		from: results(2),
		want: []want{{"A", 100}, {"C", 101}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pr.window = time.Minute
			sent := tc.pr.appendSent(nil, tc.from)
			if len(sent) != len(tc.want) {
				t.Fatalf("%d sends, want %d: %+v", len(sent), len(tc.want), sent)
			}
			for i, s := range sent {
				if s.Topic != "T" || s.Key != tc.want[i].key || s.Result.QueueOffset != tc.want[i].offset {
					t.Fatalf("send %d = %s/%s at %d, want %s at %d", i, s.Topic, s.Key, s.Result.QueueOffset, tc.want[i].key, tc.want[i].offset)
				}
				if s.Miss != idOf(s.Key).miss {
					t.Fatalf("send %d (%s) carries another key's miss", i, s.Key)
				}
			}
		})
	}
}
