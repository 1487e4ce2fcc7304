package routing

import (
	"sync"
	"time"
)

// Clock is the name server's source of time: the heartbeat timestamps of
// registrations and the period of the expiry scan. Tests inject a
// ManualClock and advance it instead of sleeping.
type Clock interface {
	// Now returns the current time. Called from request handlers and the
	// scan goroutine, concurrently.
	Now() time.Time
	// NewTicker returns a ticker that fires every d (d > 0). Its owner
	// stops it.
	NewTicker(d time.Duration) Ticker
}

// Ticker delivers ticks like time.Ticker: C has room for one tick and
// ticks that find it full are dropped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock returns the wall clock (time.Now and time.NewTicker).
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTicker(d time.Duration) Ticker {
	return systemTicker{time.NewTicker(d)}
}

type systemTicker struct{ t *time.Ticker }

func (s systemTicker) C() <-chan time.Time { return s.t.C }
func (s systemTicker) Stop()               { s.t.Stop() }

// ManualClock is a Clock that moves only when told to: Advance moves its
// time forward and fires, synchronously, every ticker whose period has
// elapsed. It is safe for concurrent use. Tests of expiry use it so that
// "120 s later" takes no time and no sleep.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[*manualTicker]struct{}
}

// NewManualClock returns a clock stopped at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, tickers: make(map[*manualTicker]struct{})}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker whose first tick is due d after the current
// time. A non-positive d never fires.
func (c *ManualClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{clock: c, period: d, next: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.tickers[t] = struct{}{}
	return t
}

// Advance moves the clock forward by d (a negative d is ignored) and
// delivers the ticks that became due: one per ticker that has at least
// one period due, and none to a ticker whose channel is still full, as
// time.Ticker drops ticks for a slow receiver. It returns once the ticks are in the tickers' channels; what
// their receivers do with them happens afterwards.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	for t := range c.tickers {
		if t.period <= 0 {
			continue
		}
		if t.next.After(c.now) {
			continue
		}
		select {
		case t.ch <- c.now:
		default:
		}
		missed := c.now.Sub(t.next) / t.period
		t.next = t.next.Add((missed + 1) * t.period)
	}
}

// Tickers is the number of tickers created and not yet stopped. Tests use
// it to wait until a component has set up its timer before advancing.
func (c *ManualClock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

type manualTicker struct {
	clock  *ManualClock
	period time.Duration
	next   time.Time // guarded by clock.mu
	ch     chan time.Time
}

func (t *manualTicker) C() <-chan time.Time { return t.ch }

func (t *manualTicker) Stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	delete(t.clock.tickers, t)
}
