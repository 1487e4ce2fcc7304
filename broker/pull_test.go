package broker

import (
	"net/netip"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

func TestRecordMatches(t *testing.T) {
	rec := func(tag string) []byte {
		m := &message.Ext{BornHost: netip.MustParseAddrPort("10.0.0.1:1"), StoreHost: netip.MustParseAddrPort("10.0.0.2:2")}
		m.Topic = "T"
		m.Body = []byte("x")
		m.Properties = map[string]string{}
		if tag != "" {
			m.Properties[message.PropertyTags] = tag
		}
		b, err := message.AppendRecord(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		expr, tag string
		want      bool
	}{
		{"*", "", true},
		{"", "A", true},
		{"A", "A", true},
		{"A || B", "B", true},
		{"A", "", false},
		{"Aa", "BB", false},
		{"A", "AB", false},
	} {
		if got := recordMatches(rec(tt.tag), store.NewTagFilter(tt.expr)); got != tt.want {
			t.Errorf("expr %q tag %q: %v", tt.expr, tt.tag, got)
		}
	}
	if recordMatches([]byte{1, 2, 3}, store.NewTagFilter("A")) {
		t.Error("garbage matched")
	}
}

func FuzzParsePullHeader(f *testing.F) {
	f.Add("cg1", "TestTopic", "1", "0", "32", "3", "12", "20000", "", "0", "TAG")
	f.Add("", "", "", "", "", "", "", "", "", "", "")
	f.Add("g", "T", "-1", "9223372036854775807", "99999999999", "x", "1", "-5", "A || B", "1795975709349293848", "SQL92")
	f.Fuzz(func(t *testing.T, group, topic, qid, off, maxN, flag, commit, suspend, sub, subVer, exprType string) {
		ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": qid, "queueOffset": off,
			"maxMsgNums": maxN, "sysFlag": flag, "commitOffset": commit, "suspendTimeoutMillis": suspend,
			"subscription": sub, "subVersion": subVer, "expressionType": exprType}
		h, err := parsePullHeader(ext)
		if err != nil {
			return
		}
		h2, err := parsePullHeader(h.Encode())
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if h2 != h {
			t.Fatalf("round trip: %+v != %+v", h2, h)
		}
		_ = store.NewTagFilter(h.Subscription)
	})
}

func FuzzRecordMatches(f *testing.F) {
	m := &message.Ext{BornHost: netip.MustParseAddrPort("10.0.0.1:1"), StoreHost: netip.MustParseAddrPort("10.0.0.2:2")}
	m.Topic = "T"
	m.Properties = map[string]string{message.PropertyTags: "A"}
	good, err := message.AppendRecord(nil, m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "A")
	f.Add(good[:40], "A || B")
	f.Add([]byte{}, "*")
	f.Fuzz(func(t *testing.T, rec []byte, expr string) {
		f := store.NewTagFilter(expr)
		got := recordMatches(rec, f)
		if len(f.Tags) == 0 && !got {
			t.Fatal(`"*" rejected a record`)
		}
	})
}

func BenchmarkOnDispatchNothingHeld(b *testing.B) {
	h := newPullHolder(pullDeps{})
	for b.Loop() {
		h.notify(pullKey{"T", 0}, 10)
	}
}
