package broker

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestLockTable(t *testing.T) {
	now := time.Unix(1000, 0)
	tbl := newLockTable(func() time.Time { return now }, time.Minute)
	q := func(id int32) mqJSON { return mqJSON{Topic: "T", BrokerName: "broker-a", QueueID: id} }
	qs := []mqJSON{q(0), q(1), q(2)}

	if got := tbl.lock(5, "g", "c1", qs); !reflect.DeepEqual(got, qs) {
		t.Fatalf("first lock: %v", got)
	}
	if got := tbl.lock(5, "g", "c2", []mqJSON{q(1), q(3)}); !reflect.DeepEqual(got, []mqJSON{q(3)}) {
		t.Fatalf("c2 got %v, want only queue 3", got)
	}
	if got := tbl.lock(5, "other", "c2", []mqJSON{q(1)}); len(got) != 1 {
		t.Fatalf("another group's lock: %v", got)
	}
	// Renewal by the holder keeps the lease alive past the first grant's expiry.
	now = now.Add(50 * time.Second)
	if got := tbl.lock(5, "g", "c1", []mqJSON{q(0)}); len(got) != 1 {
		t.Fatalf("renewal: %v", got)
	}
	now = now.Add(20 * time.Second)
	if got := tbl.lock(5, "g", "c2", []mqJSON{q(0), q(1)}); !reflect.DeepEqual(got, []mqJSON{q(1)}) {
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
	if got := tbl.lock(6, "g", "c3", []mqJSON{q(0)}); len(got) != 1 {
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
