package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMessageByIDErrorText: a look-up that fails before any broker
// answered says why without a formatting artefact, and keeps its
// sentinel.
func TestMessageByIDErrorText(t *testing.T) {
	a, err := NewAdmin(WithAdminNameServers("127.0.0.1:1"), WithAdminRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		topic, id string
		want      string
		is        error
	}{
		// Not an offset msgId, no topic: nothing was asked.
		{"", "C0A8000100002A9F0000000000000000FF", "give the topic (-t)", ErrNoSuchMessage},
		{"", "nothex", "give the topic (-t)", ErrNoSuchMessage},
		// Not an offset msgId, a topic: only the name server was asked.
		{"T", "nothex", "no name server answered", nil},
		// An offset msgId whose broker does not answer: its error is kept.
		{"", "7F0000010000000100000000000000FF", "offset msgId look-up", ErrNoSuchMessage},
	} {
		_, err := a.MessageByID(ctx, tt.topic, tt.id)
		if err == nil {
			t.Fatalf("%s %s: found", tt.topic, tt.id)
		}
		if msg := err.Error(); strings.Contains(msg, "%!") || !strings.Contains(msg, tt.want) {
			t.Errorf("%s %s: %q, want it to say %q", tt.topic, tt.id, msg, tt.want)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s %s: %v is not %v", tt.topic, tt.id, err, tt.is)
		}
	}
}

// TestAdminJSONZeroTimes: a queue never written and a group that has
// consumed nothing have no time; their JSON leaves it out rather than
// print year 1.
func TestAdminJSONZeroTimes(t *testing.T) {
	for _, v := range []any{QueueStatus{BrokerName: "b", MaxOffset: 0}, QueueProgress{Topic: "T"}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "0001-01-01") || strings.Contains(s, "lastUpdate") || strings.Contains(s, "lastConsumed") {
			t.Errorf("%T: %s", v, s)
		}
	}
	b, _ := json.Marshal(QueueStatus{LastUpdate: time.UnixMilli(1700000000000)})
	if !strings.Contains(string(b), `"lastUpdate":"2023-11-14`) {
		t.Errorf("a set time: %s", b)
	}
}
