package routing

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// logEvery is how often each kind of refusal is logged at most: an
// attacker repeating a refused request must not fill the log.
const logEvery = 10 * time.Second

// logLimiter logs each kind of event at most once per interval and counts
// what it left out; the next line of that kind says how many. Kinds are a
// few fixed strings, so its map stays small. Safe for concurrent use.
type logLimiter struct {
	clock Clock
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*limited
}

type limited struct {
	last       time.Time
	suppressed int
}

func newLogLimiter(clock Clock, every time.Duration) *logLimiter {
	return &logLimiter{clock: clock, every: every, kinds: make(map[string]*limited)}
}

// Warn logs msg with fields unless a line of this kind was logged within
// the interval.
func (l *logLimiter) Warn(log hclog.Logger, kind, msg string, fields ...any) {
	now := l.clock.Now()
	l.mu.Lock()
	e := l.kinds[kind]
	if e == nil {
		e = &limited{}
		l.kinds[kind] = e
	}
	if !e.last.IsZero() && now.Sub(e.last) < l.every {
		e.suppressed++
		l.mu.Unlock()
		return
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		fields = append(fields, "suppressed_since_last", n)
	}
	log.Warn(msg, fields...)
}
