package store

import (
	"fmt"
	"math"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// TestDispatchManyQueuesInterleaved: a batch over more queues than
// dispatch scans for runs, with messages of a queue far apart and
// prepared transaction messages (no queue slot) among them, gives every
// message its queue slot and its index keys.
func TestDispatchManyQueuesInterleaved(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.IndexSlots = 1024
	cfg.IndexEntries = 4096
	s := mustOpen(t, cfg)
	defer s.Close()
	const queues = 3 * scanRuns
	next := 0
	for batch := 0; batch < 3; batch++ {
		var msgs []*message.Ext
		for i := 0; i < 5*queues; i++ {
			q := int32((i*7 + batch) % queues)
			if i%11 == 10 {
				q = int32(i % 3) // a queue seen long before in the batch
			}
			m := testMsg("T", q, next, 16)
			m.SetProperty(message.PropertyKeys, fmt.Sprintf("key-%d", next))
			if next%9 == 4 {
				m.SysFlag = message.SysFlagTransactionPrepared
			}
			msgs = append(msgs, m)
			next++
		}
		res, err := s.Put(s.LastSeq()+1, msgs)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			r := res[i]
			if m.SysFlag == message.SysFlagTransactionPrepared {
				continue
			}
			got, err := s.Get("T", m.QueueID, r.QueueOffset, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Records) != 1 || got.Records[0].PhysicalOffset != r.PhysicalOffset || got.Records[0].QueueOffset != r.QueueOffset {
				t.Fatalf("message %d in queue %d@%d: got %+v; want the record at %d",
					i, m.QueueID, r.QueueOffset, got.Records, r.PhysicalOffset)
			}
			got.Release()
			key := m.Keys()[0]
			found, err := s.QueryByKey("T", key, 10, 0, math.MaxInt64)
			if err != nil || len(found) != 1 || found[0].PhysicalOffset != r.PhysicalOffset {
				t.Fatalf("query %s: %v, %v", key, found, err)
			}
		}
	}
}
