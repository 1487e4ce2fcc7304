package protocol

import (
	"reflect"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

func TestPendingListHeader(t *testing.T) {
	for _, c := range []struct {
		ext  map[string]string
		want int
		ok   bool
	}{
		{map[string]string{}, DefaultPendingList, true},
		{map[string]string{"limit": "5"}, 5, true},
		{map[string]string{"limit": "0"}, 0, false},
		{map[string]string{"limit": "1001"}, 0, false},
		{map[string]string{"limit": "x"}, 0, false},
	} {
		h, err := DecodePendingListHeader(c.ext)
		if (err == nil) != c.ok || (c.ok && h.Limit != c.want) {
			t.Errorf("%v: %+v %v", c.ext, h, err)
		}
	}
	req := PendingListHeader{Limit: 7}.Request(remoting.ListPendingTimers)
	if h, err := DecodePendingListHeader(req.ExtFields); err != nil || h.Limit != 7 || req.Code != remoting.ListPendingTimers {
		t.Fatalf("round trip: %+v %v", h, err)
	}
}

func TestPendingBodiesRoundTrip(t *testing.T) {
	p := PendingTimers{Count: 3, NextDueMs: 9, MaxDelayMs: 100, Timers: []PendingTimer{{Topic: "T", QueueID: 1, DueMs: 9, MsgID: "M", ParkedOffset: 4}}}
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePendingTimers(b); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("%+v %v", got, err)
	}
	x := PendingTransactions{Count: 1, Transactions: []PendingTransaction{{MsgID: "M", ProducerGroup: "pg", AgeMs: 5, CheckTimes: 2}}}
	b, err = x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePendingTransactions(b); err != nil || !reflect.DeepEqual(got, x) {
		t.Fatalf("%+v %v", got, err)
	}
}

// FuzzPendingDecoders: no header or body makes the decoders panic, and
// what they accept stays within the bounds.
func FuzzPendingDecoders(f *testing.F) {
	f.Add("5", []byte(`{"count":1,"timers":[{"topic":"T"}]}`))
	f.Add("x", []byte(`{"count":-1}`))
	f.Add("", []byte(`{"transactions":[{}]}`))
	f.Fuzz(func(t *testing.T, limit string, body []byte) {
		if h, err := DecodePendingListHeader(map[string]string{"limit": limit}); err == nil && (h.Limit < 1 || h.Limit > MaxPendingList) {
			t.Fatalf("limit %d accepted", h.Limit)
		}
		if p, err := DecodePendingTimers(body); err == nil && (len(p.Timers) > MaxPendingList || p.Count < 0) {
			t.Fatalf("accepted %+v", p)
		}
		if p, err := DecodePendingTransactions(body); err == nil && (len(p.Transactions) > MaxPendingList || p.Count < 0) {
			t.Fatalf("accepted %+v", p)
		}
	})
}
