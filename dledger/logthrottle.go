package dledger

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// throttledLogger is the logger raft writes through. It
//
//   - counts instead of printing a warning or an error repeated for the
//     same peer within the interval: a peer that is down makes raft log
//     "failed to heartbeat" and "failed to appendEntries" several times a
//     second. The first line of each (message, peer) in an interval is
//     printed; when the interval has passed, the next one carries
//     "repeated", the number held back;
//   - logs at Debug a warning or an error about a peer this node has never
//     reached, during the first peerStartGrace after it started: while the
//     members of a group start one after another, their vote requests and
//     heartbeats to each other fail with "connection refused", which is how
//     a group starts, not a fault. Once the peer was reached, or after the
//     grace, raft's level applies (throttled as above);
//   - adds the fields fields returns (the node's raft role and term, read
//     when the line is written), which raft's own lines lack, except those
//     the line carries itself (raft's "term" is the one the line is about);
//   - renames a key of raft's that the wrapped logger already binds (raft's
//     "node" beside the group's "node"), so no line carries a key twice.
type throttledLogger struct {
	hclog.Logger
	t      *throttle
	fields func() []interface{}
}

type throttle struct {
	every time.Duration
	now   func() time.Time
	// reached reports whether this node has reached the peer at a raft
	// address at least once (nil: every peer has been).
	reached func(addr string) bool
	start   time.Time

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

// peerStartGrace is how long after start failures to reach a peer that has
// never been reached are logged at Debug.
const peerStartGrace = 30 * time.Second

// renamedKeyPrefix is put before a key of raft's that the wrapped logger
// already binds.
const renamedKeyPrefix = "raft-"

func newThrottledLogger(l hclog.Logger, every time.Duration, now func() time.Time, fields func() []interface{}) *throttledLogger {
	if fields == nil {
		fields = func() []interface{} { return nil }
	}
	return &throttledLogger{Logger: l, fields: fields,
		t: &throttle{every: every, now: now, start: now(), seen: map[throttleKey]*throttleState{}}}
}

// peerOf returns the peer a line is about, and whether it is a raft
// address (raft names peers by raft.Server, address or id).
func peerOf(args []interface{}) (string, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok {
			continue
		}
		switch k {
		case "peer", "target", "id", "address", "server-id":
		default:
			continue
		}
		switch v := args[i+1].(type) {
		case raft.Server:
			return string(v.Address), true
		case *raft.Server:
			return string(v.Address), true
		case raft.ServerAddress:
			return string(v), true
		case raft.ServerID:
			return string(v), false
		case string:
			return v, k != "id" && k != "server-id"
		default:
			return fmt.Sprint(v), false
		}
	}
	return "", false
}

// starting reports whether a line is about a peer this node has not
// reached yet, within the start grace.
func (t *throttle) starting(args []interface{}) bool {
	if t.reached == nil {
		return false
	}
	peer, isAddr := peerOf(args)
	return isAddr && !t.reached(peer) && t.now().Sub(t.start) < peerStartGrace
}

// admit reports whether a line is printed and how many were held back
// before it.
func (t *throttle) admit(msg string, args []interface{}) (bool, int) {
	peer, _ := peerOf(args)
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
	if l.t.starting(args) {
		// Not counted against the peer's interval either: the first
		// failure once the peer was reached, or after the grace, is
		// printed.
		l.print(hclog.Debug, msg, args)
		return
	}
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
	if level < l.Logger.GetLevel() {
		return
	}
	l.Logger.Log(level, msg, l.merge(args)...)
}

// merge returns args with keys the wrapped logger binds renamed and the
// extra fields the line lacks added.
func (l *throttledLogger) merge(args []interface{}) []interface{} {
	bound := l.Logger.ImpliedArgs()
	extra := l.fields()
	out := make([]interface{}, 0, len(args)+len(extra))
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) { // a value without a key, keyed as hclog does
			out = append(out, hclog.MissingKey, args[i])
			break
		}
		k := args[i]
		if s, ok := k.(string); ok && hasKey(bound, s) {
			k = renamedKeyPrefix + s
		}
		out = append(out, k, args[i+1])
	}
	n := len(out)
	for i := 0; i+1 < len(extra); i += 2 {
		if s, ok := extra[i].(string); ok && (hasKey(out[:n], s) || hasKey(bound, s)) {
			continue
		}
		out = append(out, extra[i], extra[i+1])
	}
	return out
}

// hasKey reports whether the key/value list kv has key k.
func hasKey(kv []interface{}, k string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if s, ok := kv[i].(string); ok && s == k {
			return true
		}
	}
	return false
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

// With binds args on the wrapped logger, renaming keys it already binds as
// a line's keys are.
func (l *throttledLogger) With(args ...interface{}) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.With(l.merge0(args)...), t: l.t, fields: l.fields}
}

// merge0 is merge without the extra fields.
func (l *throttledLogger) merge0(args []interface{}) []interface{} {
	bound := l.Logger.ImpliedArgs()
	out := append([]interface{}(nil), args...)
	for i := 0; i+1 < len(out); i += 2 {
		if s, ok := out[i].(string); ok && hasKey(bound, s) {
			out[i] = renamedKeyPrefix + s
		}
	}
	return out
}

func (l *throttledLogger) Named(name string) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.Named(name), t: l.t, fields: l.fields}
}

func (l *throttledLogger) ResetNamed(name string) hclog.Logger {
	return &throttledLogger{Logger: l.Logger.ResetNamed(name), t: l.t, fields: l.fields}
}
