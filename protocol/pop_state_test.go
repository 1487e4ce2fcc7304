package protocol

import (
	"reflect"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

func TestPopStateHeader(t *testing.T) {
	req := PopStateHeader{Group: "cg", Topic: "T", Limit: 7}.Request()
	if req.Code != remoting.ListPopState {
		t.Fatalf("code %d", req.Code)
	}
	if h, err := DecodePopStateHeader(req.ExtFields); err != nil || h != (PopStateHeader{Group: "cg", Topic: "T", Limit: 7}) {
		t.Fatalf("round trip: %+v %v", h, err)
	}
	if h, err := DecodePopStateHeader(PopStateHeader{}.Request().ExtFields); err != nil || h != (PopStateHeader{Limit: DefaultPendingList}) {
		t.Fatalf("no fields: %+v %v", h, err)
	}
	for _, l := range []string{"0", "1001", "x"} {
		if h, err := DecodePopStateHeader(map[string]string{"limit": l}); err == nil {
			t.Errorf("limit %q accepted: %+v", l, h)
		}
	}
}

func TestPopStateBodyRoundTrip(t *testing.T) {
	p := PopState{Count: 3, Rows: []PopStateRow{{Group: "cg", Topic: "T", Inflight: 2, Due: 1, OldestInvisibleUntil: 99}}}
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePopState(b); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{
		`[]`, `{"count":-1}`, `{"count":0,"rows":[{}]}`,
		`{"count":1,"rows":[{"inflight":-1}]}`, `{"count":1,"rows":[{"inflight":1,"due":2}]}`,
	} {
		if got, err := DecodePopState([]byte(bad)); err == nil {
			t.Errorf("%s accepted: %+v", bad, got)
		}
	}
}

// FuzzPopStateDecoders: no header or body makes the decoders panic, and
// what they accept stays within the bounds.
func FuzzPopStateDecoders(f *testing.F) {
	f.Add("cg", "5", []byte(`{"count":1,"rows":[{"group":"cg","topic":"T","inflight":1}]}`))
	f.Add("", "x", []byte(`{"count":-1}`))
	f.Add("g", "", []byte(`{"rows":[{"due":3}]}`))
	f.Fuzz(func(t *testing.T, group, limit string, body []byte) {
		if h, err := DecodePopStateHeader(map[string]string{"group": group, "limit": limit}); err == nil &&
			(h.Limit < 1 || h.Limit > MaxPendingList || h.Group != group) {
			t.Fatalf("header %+v accepted", h)
		}
		p, err := DecodePopState(body)
		if err != nil {
			return
		}
		if len(p.Rows) > MaxPendingList || p.Count < int64(len(p.Rows)) {
			t.Fatalf("accepted %+v", p)
		}
		for _, r := range p.Rows {
			if r.Inflight < 0 || r.Due < 0 || r.Due > r.Inflight || r.OldestInvisibleUntil < 0 {
				t.Fatalf("accepted row %+v", r)
			}
		}
	})
}
