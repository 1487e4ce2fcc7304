package client

import (
	"strings"
	"testing"
	"time"
)

// traceRecord joins fields as RocketMQ's TraceDataEncoder does.
func traceRecord(fields ...string) string { return strings.Join(fields, "\x01") + "\x02" }

func TestDecodeTraceData(t *testing.T) {
	id := "7F00000100002A9F0000000000000001"
	data := traceRecord("Pub", "1700000000000", "DefaultRegion", "PG", "T", id, "TagA", "k1", "127.0.0.1:10911", "5", "3", "0", "OFFSETID", "true", "127.0.0.1") +
		traceRecord("SubBefore", "1700000000100", "DefaultRegion", "CG", "req1", id, "0", "k1") +
		traceRecord("SubAfter", "req1", id, "7", "false", "k1", "0", "1700000000200", "CG") +
		traceRecord("SubAfter", "req2", "OTHER", "7", "true", "k1") + // another message's
		traceRecord("Pub", "notanumber", "r", "g", "t", id, "", "", "", "0", "0", "0", "true") + // unreadable
		traceRecord("Pub", "1") + // short
		"garbage"
	evs := decodeTraceData(data, id)
	if len(evs) != 3 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	pub, before, after := evs[0], evs[1], evs[2]
	if pub.Type != "Pub" || pub.Group != "PG" || pub.Topic != "T" || pub.Tags != "TagA" || pub.CostMs != 3 || pub.Status != "success" ||
		pub.OffsetMsgID != "OFFSETID" || !pub.Time.Equal(time.UnixMilli(1700000000000)) {
		t.Errorf("pub %+v", pub)
	}
	if before.Type != "SubBefore" || before.Group != "CG" || before.Keys != "k1" {
		t.Errorf("sub before %+v", before)
	}
	if after.Type != "SubAfter" || after.Group != "CG" || after.Status != "failed" || after.CostMs != 7 || !after.Time.Equal(time.UnixMilli(1700000000200)) {
		t.Errorf("sub after %+v", after)
	}
	if all := decodeTraceData(data, ""); len(all) != 4 {
		t.Errorf("every message's events: %d", len(all))
	}
}

func FuzzDecodeTraceData(f *testing.F) {
	f.Add(traceRecord("Pub", "1", "r", "g", "t", "id", "", "", "", "0", "0", "0", "x", "true"))
	f.Add(traceRecord("SubAfter", "r", "id", "1", "true", "k", "0", "2", "g"))
	f.Add(traceRecord("EndTransaction", "1", "r", "g", "t", "id", "", "", "", "0", "tx", "COMMIT_MESSAGE", "false"))
	f.Fuzz(func(t *testing.T, data string) {
		for _, ev := range decodeTraceData(data, "") {
			if ev.Type == "" {
				t.Fatalf("event without a type from %q", data)
			}
		}
	})
}
