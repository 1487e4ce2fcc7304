package bench

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

func TestRecorder(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := NewRecorder(t0)
	// 100 sends of 1 KiB, one every 10 ms, each 1 ms..100 ms late; then a
	// 700 ms stall; one failure and one unknown outcome.
	at := t0
	for i := 1; i <= 100; i++ {
		at = t0.Add(time.Duration(i) * 10 * time.Millisecond)
		r.Record(at.Add(-time.Duration(i)*time.Millisecond), at, OK, 1024)
	}
	r.Record(at, at.Add(time.Millisecond), Failed, 1024)
	r.Record(at, at.Add(2*time.Millisecond), Unknown, 1024)
	iv := r.TakeInterval(t0, t0.Add(time.Second))
	if iv.Acked != 100 || iv.Errors != 2 || iv.PerSec != 100 {
		t.Fatalf("interval %+v", iv)
	}
	if iv.P99 < 98*time.Millisecond || iv.P99 > 100*time.Millisecond {
		t.Fatalf("interval p99 %v", iv.P99)
	}
	stallEnd := at.Add(700 * time.Millisecond)
	r.Record(stallEnd, stallEnd.Add(time.Millisecond), OK, 1024)
	if iv := r.TakeInterval(t0.Add(time.Second), t0.Add(2*time.Second)); iv.Acked != 1 || iv.Errors != 0 {
		t.Fatalf("second interval %+v", iv)
	}
	end := stallEnd.Add(50 * time.Millisecond)
	s := r.Finish(end)
	if s.Sent != 103 || s.Acked != 101 || s.Failed != 1 || s.Unknown != 1 {
		t.Fatalf("counts %+v", s)
	}
	if s.MaxGapMs != 701 {
		t.Fatalf("max gap %d ms, want 701", s.MaxGapMs)
	}
	if s.P50Ms < 50 || s.P50Ms > 52 || s.MaxMs < 99.9 || s.MaxMs > 100.1 {
		t.Fatalf("percentiles %+v", s)
	}
	line := s.String()
	shape := regexp.MustCompile(`^summary: sent=\d+ acked=\d+ failed=\d+ unknown=\d+ msgs/s=\d+ MB/s=[\d.]+ p50=[\d.]+ms p90=[\d.]+ms p99=[\d.]+ms p999=[\d.]+ms max=[\d.]+ms max-gap-ms=\d+$`)
	if !shape.MatchString(line) {
		t.Fatalf("summary line %q is not in the documented shape", line)
	}
	js, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(js, &back); err != nil || back != s {
		t.Fatalf("JSON round trip: %+v %v", back, err)
	}
}

func TestRecorderTailGap(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := NewRecorder(t0)
	r.Record(t0, t0.Add(5*time.Millisecond), OK, 1)
	// Nothing acknowledged for the rest of the run: the stall counts.
	if s := r.Finish(t0.Add(3 * time.Second)); s.MaxGapMs != 2995 {
		t.Fatalf("tail gap %d ms", s.MaxGapMs)
	}
	// Latencies beyond the histogram's range are clamped, not dropped.
	r2 := NewRecorder(t0)
	r2.Record(t0, t0.Add(2*time.Hour), OK, 1)
	r2.Record(t0, t0.Add(-time.Second), OK, 1)
	if s := r2.Finish(t0.Add(time.Second)); s.Acked != 2 || s.MaxMs < 3.5e6 {
		t.Fatalf("clamped: %+v", s)
	}
}
