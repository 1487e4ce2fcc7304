package bench

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Outcome of one operation, as the client classifies a send.
type Outcome int

// Outcomes.
const (
	OK Outcome = iota
	Failed
	Unknown
)

// Histogram bounds: 1 µs to 1 h at 3 significant digits.
const (
	histMinMicros = 1
	histMaxMicros = int64(time.Hour / time.Microsecond)
	histSigFigs   = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// Recorder collects operations: counts, latencies and the longest gap
// between acknowledgements. Safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	start    time.Time
	all      *hdrhistogram.Histogram
	interval *hdrhistogram.Histogram
	counts   [3]int64
	iCounts  [3]int64
	bytes    int64
	lastAck  time.Time
	maxGap   time.Duration
	end      time.Time
}

// NewRecorder starts recording at start.
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{start: start, all: newHist(), interval: newHist(), lastAck: start}
}

// Record adds one operation of size bytes that was due at due and answered
// at done with outcome o.
func (r *Recorder) Record(due, done time.Time, o Outcome, size int) {
	lat := done.Sub(due).Microseconds()
	lat = min(max(lat, histMinMicros), histMaxMicros)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[o]++
	r.iCounts[o]++
	if o != OK {
		return
	}
	_ = r.all.RecordValue(lat) // in range by the clamp above
	_ = r.interval.RecordValue(lat)
	r.bytes += int64(size)
	if done.After(r.lastAck) {
		r.maxGap = max(r.maxGap, done.Sub(r.lastAck))
		r.lastAck = done
	}
}

// Interval is one report interval's figures.
type Interval struct {
	Elapsed  time.Duration
	Acked    int64
	Errors   int64 // failed and unknown
	PerSec   float64
	P99      time.Duration
	Interval time.Duration
}

// String is the progress line of the interval.
func (iv Interval) String() string {
	return fmt.Sprintf("%6.1fs  acked/s=%-8.0f errors=%-6d p99=%s", iv.Elapsed.Seconds(), iv.PerSec, iv.Errors, fmtMs(iv.P99))
}

// TakeInterval returns the figures since the previous call (or the start)
// and starts a new interval. now is the interval's end; since its start.
func (r *Recorder) TakeInterval(since, now time.Time) Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	iv := Interval{Elapsed: now.Sub(r.start), Acked: r.iCounts[OK], Errors: r.iCounts[Failed] + r.iCounts[Unknown],
		P99: time.Duration(r.interval.ValueAtQuantile(99)) * time.Microsecond, Interval: now.Sub(since)}
	if iv.Interval > 0 {
		iv.PerSec = float64(iv.Acked) / iv.Interval.Seconds()
	}
	r.interval.Reset()
	r.iCounts = [3]int64{}
	return iv
}

// Summary is a run's result.
type Summary struct {
	Sent        int64   `json:"sent"`
	Acked       int64   `json:"acked"`
	Failed      int64   `json:"failed"`
	Unknown     int64   `json:"unknown"`
	MsgsPerSec  float64 `json:"msgs_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	P50Ms       float64 `json:"p50_ms"`
	P90Ms       float64 `json:"p90_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P999Ms      float64 `json:"p999_ms"`
	MaxMs       float64 `json:"max_ms"`
	MaxGapMs    int64   `json:"max_gap_ms"`
	DurationSec float64 `json:"duration_sec"`
	// Mode is "consume" for a consume run, whose summary adds its checks:
	// offsets missing between the first and last seen of a queue (Gaps)
	// and offsets delivered more than once (Duplicates). In consume mode
	// sent counts the messages received and latencies run from each
	// message's store time to its delivery.
	Mode       string `json:"mode,omitempty"`
	Gaps       int64  `json:"gaps"`
	Duplicates int64  `json:"duplicates"`
}

// Finish ends the run at end and returns its summary. The gap from the
// last acknowledgement to end counts: a run that ends in a stall shows it.
func (r *Recorder) Finish(end time.Time) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end = end
	gap := r.maxGap
	if end.After(r.lastAck) {
		gap = max(gap, end.Sub(r.lastAck))
	}
	d := end.Sub(r.start)
	ms := func(q float64) float64 { return float64(r.all.ValueAtQuantile(q)) / 1000 }
	s := Summary{
		Sent: r.counts[OK] + r.counts[Failed] + r.counts[Unknown], Acked: r.counts[OK], Failed: r.counts[Failed], Unknown: r.counts[Unknown],
		P50Ms: ms(50), P90Ms: ms(90), P99Ms: ms(99), P999Ms: ms(99.9), MaxMs: float64(r.all.Max()) / 1000,
		MaxGapMs: gap.Milliseconds(), DurationSec: d.Seconds(),
	}
	if d > 0 {
		s.MsgsPerSec = float64(s.Acked) / d.Seconds()
		s.MBPerSec = float64(r.bytes) / d.Seconds() / 1e6
	}
	return s
}

// String is the summary line, exactly:
//
//	summary: sent=N acked=N failed=N unknown=N msgs/s=X MB/s=Y p50=Xms p90=Xms p99=Xms p999=Xms max=Xms max-gap-ms=N
//
// with " gaps=N duplicates=N" after it in consume mode.
func (s Summary) String() string {
	line := fmt.Sprintf("summary: sent=%d acked=%d failed=%d unknown=%d msgs/s=%.0f MB/s=%.2f p50=%.3fms p90=%.3fms p99=%.3fms p999=%.3fms max=%.3fms max-gap-ms=%d",
		s.Sent, s.Acked, s.Failed, s.Unknown, s.MsgsPerSec, s.MBPerSec, s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs, s.MaxGapMs)
	if s.Mode == "consume" {
		line += fmt.Sprintf(" gaps=%d duplicates=%d", s.Gaps, s.Duplicates)
	}
	return line
}

// JSON is the summary as one JSON object.
func (s Summary) JSON() ([]byte, error) { return json.Marshal(s) }

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d.Microseconds())/1000) }
