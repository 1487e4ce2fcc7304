package auth

import (
	"fmt"
	"strconv"
	"sync"
	"time"
)

const (
	// DefaultWindow is how far a SignTime may be from the checker's clock,
	// either way.
	DefaultWindow = 5 * time.Minute
	// MaxRemembered bounds the signatures a Guard remembers.
	MaxRemembered = 1 << 16
)

// Guard refuses signed requests that are stale or replayed (doc.go,
// Freshness). The zero value is not usable; call NewGuard. Safe for
// concurrent use.
type Guard struct {
	window time.Duration

	mu   sync.Mutex
	seen map[string]time.Time // signature → its SignTime
	fifo []seenEntry          // in arrival order, for expiry and the bound
	head int
}

type seenEntry struct {
	sig string
	at  time.Time
}

// NewGuard returns a Guard with the given window (≤ 0: DefaultWindow).
func NewGuard(window time.Duration) *Guard {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Guard{window: window, seen: make(map[string]time.Time)}
}

// Window is the guard's window.
func (g *Guard) Window() time.Duration { return g.window }

// Check accepts a verified request once: its SignTime must be within the
// window of now and its Signature not accepted before. Call it only after
// Verify succeeded, so that only genuine requests are remembered.
func (g *Guard) Check(ext map[string]string, now time.Time) error {
	raw, ok := ext[FieldSignTime]
	if !ok {
		return fmt.Errorf("%w: no %s", ErrStale, FieldSignTime)
	}
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q", ErrStale, FieldSignTime, raw)
	}
	at := time.UnixMilli(ms)
	if d := now.Sub(at); d > g.window || d < -g.window {
		return fmt.Errorf("%w: signed at %s, %v from this clock (window ±%v)", ErrStale, at.UTC().Format(time.RFC3339Nano), d.Round(time.Millisecond), g.window)
	}
	sig := ext[FieldSignature]
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(now)
	if _, dup := g.seen[sig]; dup {
		return fmt.Errorf("%w: signed at %s", ErrReplayed, at.UTC().Format(time.RFC3339Nano))
	}
	g.seen[sig] = at
	g.fifo = append(g.fifo, seenEntry{sig: sig, at: at})
	for len(g.seen) > MaxRemembered {
		g.pop()
	}
	return nil
}

// expire forgets signatures whose time is out of the window: they are
// refused as stale anyway. Entries arrive roughly in time order; one that
// is out of order waits behind the head, which only delays its removal.
func (g *Guard) expire(now time.Time) {
	for g.head < len(g.fifo) && now.Sub(g.fifo[g.head].at) > g.window {
		g.pop()
	}
}

// pop forgets the oldest entry and compacts the queue now and then.
func (g *Guard) pop() {
	e := g.fifo[g.head]
	g.fifo[g.head] = seenEntry{}
	g.head++
	if at, ok := g.seen[e.sig]; ok && at.Equal(e.at) {
		delete(g.seen, e.sig)
	}
	if g.head > 1024 && g.head*2 > len(g.fifo) {
		g.fifo = append(g.fifo[:0], g.fifo[g.head:]...)
		g.head = 0
	}
}

// Remembered is how many signatures the guard holds (for tests).
func (g *Guard) Remembered() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}
