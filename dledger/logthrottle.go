package dledger

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// throttledLogger passes raft's log lines on, except that a warning or an
// error repeated for the same peer within the interval is counted instead
// of printed: a peer that is down makes raft log "failed to heartbeat"
// and "failed to appendEntries" several times a second. The first line of
// each (message, peer) in an interval is printed; when the interval has
// passed, the next one carries "repeated", the number held back.
//
// Every line also carries the fields fields returns (the node's raft role
// and term as the group last saw them), which raft's own lines lack.
type throttledLogger struct {
	hclog.Logger
	t      *throttle
	fields func() []interface{}
}

type throttle struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[throttleKey]*throttleState
}

type throttleKey struct{ msg, peer string }

type throttleState struct {
	last    time.Time
	dropped int
}

// maxThrottleKeys bounds the table; it is cleared when full (peers are few,
// messages fixed, so this only guards against a stream of distinct values).
const maxThrottleKeys = 1024

func newThrottledLogger(l hclog.Logger, every time.Duration, now func() time.Time, fields func() []interface{}) hclog.Logger {
	if fields == nil {
		fields = func() []interface{} { return nil }
	}
	return &throttledLogger{Logger: l, t: &throttle{every: every, now: now, seen: map[throttleKey]*throttleState{}}, fields: fields}
}

// admit reports whether a line is printed and how many were held back
// before it.
func (t *throttle) admit(msg string, args []interface{}) (bool, int) {
	peer := ""
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && (k == "peer" || k == "id" || k == "address") {
			peer = fmt.Sprint(args[i+1]) // raft passes raft.ServerAddress
			break
		}
	}
	key := throttleKey{msg, peer}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.seen[key]
	if st == nil {
		if len(t.seen) >= maxThrottleKeys {
			clear(t.seen)
		}
		t.seen[key] = &throttleState{last: now}
		return true, 0
	}
	if now.Sub(st.last) < t.every {
		st.dropped++
		return false, 0
	}
	n := st.dropped
	st.last, st.dropped = now, 0
	return true, n
}

func (l *throttledLogger) emit(level hclog.Level, msg string, args []interface{}) {
	ok, n := l.t.admit(msg, args)
	if !ok {
		return
	}
	if n > 0 {
		args = append(append([]interface{}(nil), args...), "repeated", n)
	}
	l.print(level, msg, args)
}

// print logs one line with the extra fields.
func (l *throttledLogger) print(level hclog.Level, msg string, args []interface{}) {
	if extra := l.fields(); len(extra) > 0 {
		args = append(append([]interface{}(nil), args...), extra...)
	}
	l.Logger.Log(level, msg, args...)
}

func (l *throttledLogger) Log(level hclog.Level, msg string, args ...interface{}) {
	if level >= hclog.Warn {
		l.emit(level, msg, args)
		return
	}
	l.print(level, msg, args)
}

func (l *throttledLogger) Trace(msg string, args ...interface{}) { l.Log(hclog.Trace, msg, args...) }
func (l *throttledLogger) Debug(msg string, args ...interface{}) { l.Log(hclog.Debug, msg, args...) }
func (l *throttledLogger) Info(msg string, args ...interface{})  { l.Log(hclog.Info, msg, args...) }
func (l *throttledLogger) Warn(msg string, args ...interface{})  { l.emit(hclog.Warn, msg, args) }
func (l *throttledLogger) Error(msg string, args ...interface{}) { l.emit(hclog.Error, msg, args) }

func (l *throttledLogger) With(args ...interface{}) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.With(args...), t: l.t, fields: l.fields}
}

func (l *throttledLogger) Named(name string) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.Named(name), t: l.t, fields: l.fields}
}

func (l *throttledLogger) ResetNamed(name string) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.ResetNamed(name), t: l.t, fields: l.fields}
}
