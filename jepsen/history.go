package jepsen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event types of the history (doc.go describes every field).
const (
	EvSend   = "send"   // a producer's send: invoke, complete, outcome
	EvRecv   = "recv"   // a consumer's delivery
	EvRead   = "read"   // one record of a replica's final read
	EvFault  = "fault"  // a nemesis operation starting or ending
	EvStatus = "status" // a node's raft role or term changed
	EvOffset = "offset" // the consumer group's committed offset of a queue, as polled
	EvPhase  = "phase"  // a run phase began: load, heal, drain, final-read
	EvPop    = "pop"    // the POP workload: kind start, recv, ack, change (workload_pop.go)
)

// Outcomes of a send.
const (
	OK      = "ok"
	Failed  = "failed"
	Unknown = "unknown"
)

// Event is one line of history.jsonl. Times are milliseconds since the
// run began, from the monotonic clock.
type Event struct {
	Type string  `json:"type"`
	T    float64 `json:"t"` // when it happened (a send: when it completed)

	Process string `json:"process,omitempty"` // p0…, c0…, nemesis
	Value   string `json:"value,omitempty"`   // a message's unique payload p<producer>-<seq>
	Seq     int64  `json:"seq,omitempty"`     // the payload's sequence number

	Invoke  float64 `json:"invoke,omitempty"` // a send's invocation time
	Outcome string  `json:"outcome,omitempty"`
	Queue   int32   `json:"queue"` // -1 when not known
	Offset  int64   `json:"offset"`
	Node    string  `json:"node,omitempty"` // the node that acknowledged, delivered or was read
	// Group is the broker group of the event's queue, node or fault (runs
	// of two or more groups only).
	Group    string `json:"group,omitempty"`
	MsgID    string `json:"msgid,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	MaybeDup bool   `json:"maybe_dup,omitempty"` // client.SendResult.MaybeDuplicated: an unknown earlier attempt no window covered
	Error    string `json:"error,omitempty"`
	Redeliv  int32  `json:"reconsume,omitempty"`
	// Receipt is a POP delivery's receipt handle (the one an ack or a
	// change of the invisible duration used).
	Receipt string `json:"receipt,omitempty"`

	Kind    string   `json:"kind,omitempty"`  // fault kind; phase name
	Phase   string   `json:"phase,omitempty"` // fault: start or end
	Targets []string `json:"targets,omitempty"`
	Leader  string   `json:"leader,omitempty"` // the leader when a fault started
	Detail  string   `json:"detail,omitempty"`

	Role string `json:"role,omitempty"`
	Term uint64 `json:"term,omitempty"`
}

// History records events in memory, in the order they were recorded,
// and appends each to a JSON-lines file.
type History struct {
	start time.Time
	mu    sync.Mutex
	evs   []Event
	f     *os.File
	w     *bufio.Writer
	err   error
}

// NewHistory writes to path (created or truncated); "" keeps it in
// memory only.
func NewHistory(path string) (*History, error) {
	h := &History{start: time.Now()}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("jepsen: history: %w", err)
		}
		h.f, h.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	return h, nil
}

// Now is the current time of the history's clock.
func (h *History) Now() float64 { return h.At(time.Now()) }

// At converts a time taken during the run to the history's clock.
func (h *History) At(t time.Time) float64 {
	return float64(t.Sub(h.start).Microseconds()) / 1000
}

// Add records e (T is set to now when zero).
func (h *History) Add(e Event) {
	if e.T == 0 {
		e.T = h.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evs = append(h.evs, e)
	if h.w != nil && h.err == nil {
		data, err := json.Marshal(e)
		if err == nil {
			data = append(data, '\n')
			_, err = h.w.Write(data)
		}
		h.err = err
	}
}

// Events is a copy of everything recorded so far.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.evs...)
}

// Close flushes and closes the file.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return h.err
	}
	err := errors.Join(h.err, h.w.Flush(), h.f.Close())
	h.f, h.w = nil, nil
	return err
}

// maxEventLine bounds one line of a history file read back.
const maxEventLine = 1 << 20

// ReadHistory reads a history.jsonl back (for `check`, and other tools).
func ReadHistory(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var out []Event
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("jepsen: history line %d: %w", line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("jepsen: history: %w", err)
	}
	return out, nil
}
