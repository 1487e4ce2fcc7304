package broker

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/metadata"
)

func TestLockTable(t *testing.T) {
	now := time.Unix(1000, 0)
	tbl := newLockTable(func() time.Time { return now }, time.Minute)
	q := func(id int32) mqJSON { return mqJSON{Topic: "T", BrokerName: "broker-a", QueueID: id} }
	qs := []mqJSON{q(0), q(1), q(2)}

	lock := func(term uint64, group, client string, mqs []mqJSON) []mqJSON {
		t.Helper()
		got, capped := tbl.lock(term, group, client, mqs)
		if capped != 0 {
			t.Fatalf("%d refused for the caps", capped)
		}
		return got
	}
	if got := lock(5, "g", "c1", qs); !reflect.DeepEqual(got, qs) {
		t.Fatalf("first lock: %v", got)
	}
	if got := lock(5, "g", "c2", []mqJSON{q(1), q(3)}); !reflect.DeepEqual(got, []mqJSON{q(3)}) {
		t.Fatalf("c2 got %v, want only queue 3", got)
	}
	if got := lock(5, "other", "c2", []mqJSON{q(1)}); len(got) != 1 {
		t.Fatalf("another group's lock: %v", got)
	}
	// Renewal by the holder keeps the lease alive past the first grant's expiry.
	now = now.Add(50 * time.Second)
	if got := lock(5, "g", "c1", []mqJSON{q(0)}); len(got) != 1 {
		t.Fatalf("renewal: %v", got)
	}
	now = now.Add(20 * time.Second)
	if got := lock(5, "g", "c2", []mqJSON{q(0), q(1)}); !reflect.DeepEqual(got, []mqJSON{q(1)}) {
		t.Fatalf("after 70 s c2 got %v, want queue 1 (expired) but not 0 (renewed)", got)
	}
	if h, ok := tbl.holder("g", q(2)); ok {
		t.Fatalf("queue 2 held by %s after its lease ended", h)
	}
	// Unlock releases only the caller's own leases.
	tbl.unlock(5, "g", "c2", []mqJSON{q(0), q(1)})
	if h, _ := tbl.holder("g", q(0)); h != "c1" {
		t.Fatalf("queue 0 holder %q after c2's unlock, want c1", h)
	}
	if _, ok := tbl.holder("g", q(1)); ok {
		t.Fatal("queue 1 still held after its holder unlocked it")
	}
	// A new term forgets every lease.
	if got := lock(6, "g", "c3", []mqJSON{q(0)}); len(got) != 1 {
		t.Fatalf("new term: %v", got)
	}
	if _, ok := tbl.holder("other", q(1)); ok {
		t.Fatal("a lease of the old term survived")
	}
}

func TestParseLockBody(t *testing.T) {
	good := `{"consumerGroup":"g","clientId":"127.0.0.1@1","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":3}]}`
	req, err := parseLockBody([]byte(good))
	if err != nil || len(req.MQSet) != 1 || req.MQSet[0].QueueID != 3 {
		t.Fatalf("%+v %v", req, err)
	}
	for _, bad := range []string{``, `{`, `{"consumerGroup":"g"}`, `{"clientId":"c"}`, `{"consumerGroup":"g","clientId":"c","mqSet":[{"queueId":"x"}]}`} {
		if _, err := parseLockBody([]byte(bad)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseLockBody(f *testing.F) {
	f.Add([]byte(`{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":1}]}`))
	f.Add([]byte(`{"mqSet":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseLockBody(body)
		if err == nil && (req.ConsumerGroup == "" || req.ClientID == "") {
			t.Fatalf("accepted %q", body)
		}
	})
}

// lockableQueues keeps only queues of this broker's existing topics with a
// queue id in range, and takes their strings from the broker.
func TestLockableQueues(t *testing.T) {
	topics := map[string]metadata.TopicConfig{
		"T":    {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 2},
		"Wide": {TopicName: "Wide", ReadQueueNums: 1, WriteQueueNums: 8},
	}
	lookup := func(name string) (metadata.TopicConfig, bool) { tc, ok := topics[name]; return tc, ok }
	in := []mqJSON{
		{Topic: "T", BrokerName: "broker-a", QueueID: 0}, {Topic: "T", BrokerName: "broker-a", QueueID: 3}, {Topic: "Wide", BrokerName: "broker-a", QueueID: 7},
		{Topic: "T", BrokerName: "broker-a", QueueID: 4}, {Topic: "T", BrokerName: "broker-a", QueueID: -1}, {Topic: "../x", BrokerName: "broker-a", QueueID: 0},
		{Topic: "Nope", BrokerName: "broker-a", QueueID: 0}, {Topic: "T", BrokerName: "broker-b", QueueID: 0}, {Topic: "", BrokerName: "", QueueID: 0},
	}
	got := lockableQueues(in, "broker-a", lookup)
	want := []mqJSON{{Topic: "T", BrokerName: "broker-a", QueueID: 0}, {Topic: "T", BrokerName: "broker-a", QueueID: 3}, {Topic: "Wide", BrokerName: "broker-a", QueueID: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// The table holds at most perGroup leases per group and total in all; at
// the cap, renewals of held leases still succeed.
func TestLockTableCaps(t *testing.T) {
	now := time.Unix(1000, 0)
	tbl := newLockTable(func() time.Time { return now }, time.Minute)
	tbl.perGroup, tbl.total = 3, 5
	q := func(id int32) mqJSON { return mqJSON{Topic: "T", BrokerName: "broker-a", QueueID: id} }
	if got, capped := tbl.lock(1, "g1", "c", []mqJSON{q(0), q(1), q(2), q(3)}); len(got) != 3 || capped != 1 {
		t.Fatalf("g1: %v, %d capped", got, capped)
	}
	if got, capped := tbl.lock(1, "g1", "c", []mqJSON{q(0), q(1), q(2)}); len(got) != 3 || capped != 0 {
		t.Fatalf("renewal at the cap: %v, %d capped", got, capped)
	}
	if got, capped := tbl.lock(1, "g2", "c", []mqJSON{q(0), q(1), q(2)}); len(got) != 2 || capped != 1 {
		t.Fatalf("g2 at the total cap: %v, %d capped", got, capped)
	}
	if got, capped := tbl.lock(1, "g3", "c", []mqJSON{q(0)}); len(got) != 0 || capped != 1 {
		t.Fatalf("g3: %v, %d capped", got, capped)
	}
	if leases, groups := tbl.size(); leases != 5 || groups != 2 {
		t.Fatalf("%d leases in %d groups", leases, groups)
	}
	// Unlocking and expiry make room again.
	tbl.unlock(1, "g2", "c", []mqJSON{q(0)})
	if got, _ := tbl.lock(1, "g3", "c", []mqJSON{q(0)}); len(got) != 1 {
		t.Fatalf("after an unlock: %v", got)
	}
	now = now.Add(time.Minute)
	if got, _ := tbl.lock(1, "g1", "d", []mqJSON{q(5), q(6), q(7)}); len(got) != 3 {
		t.Fatalf("after g1's leases expired: %v", got)
	}
	if tbl.capped != 3 {
		t.Fatalf("capped counter %d", tbl.capped)
	}
}

// Expired leases used to stay in the table for good (634 MiB minutes
// after the flood). The sweeper drops them, and the groups left empty,
// while it runs; stop ends it.
func TestLockSweeper(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tbl := newLockTable(clock, time.Minute)
	for g := range 10 {
		if got, _ := tbl.lock(1, fmt.Sprint("g", g), "c", []mqJSON{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 1}}); len(got) != 2 {
			t.Fatal(got)
		}
	}
	tbl.Start(time.Millisecond)
	defer tbl.Stop()
	mu.Lock()
	now = now.Add(30 * time.Second)
	mu.Unlock()
	if got, _ := tbl.lock(1, "g0", "c", []mqJSON{{Topic: "T", BrokerName: "b", QueueID: 0}}); len(got) != 1 {
		t.Fatal(got)
	}
	mu.Lock()
	now = now.Add(40 * time.Second) // g0's queue 0 renewed 40 s ago, all else 70 s
	mu.Unlock()
	waitFor(t, "expired leases swept", func() bool { l, g := tbl.size(); return l == 1 && g == 1 })
	if h, ok := tbl.holder("g0", mqJSON{Topic: "T", BrokerName: "b", QueueID: 0}); !ok || h != "c" {
		t.Fatalf("the renewed lease went: %q %v", h, ok)
	}
	tbl.Stop()
	tbl.Stop() // a second stop is a no-op
}
