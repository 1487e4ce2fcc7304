package remoting

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Limits and HeaderLimits.
const (
	// DefaultReadBudget bounds the request bytes a server holds at once.
	// It is far above what normal traffic holds (a few hundred KiB to a
	// few tens of MiB) and far below what a flood would take unbounded.
	DefaultReadBudget = 256 << 20
	// DefaultMaxConns bounds the open connections of a server. Each one
	// costs about 40 KiB (its read buffer and goroutine stacks) outside the
	// read budget.
	DefaultMaxConns = 4096
	// DefaultMaxInFlightPerConn bounds the requests of one connection that
	// are queued or being handled: well above what a pipelining client
	// keeps outstanding (the Go client's async sends, 4 × 128 in the
	// benchmark), well below a worker queue.
	DefaultMaxInFlightPerConn = 1024

	// DefaultMaxHeaderBytes bounds a frame's header. Real headers are a
	// few hundred bytes; a send's properties, the largest part, are
	// limited to 32 KiB by the broker.
	DefaultMaxHeaderBytes = 1 << 20
	// DefaultMaxExtFields bounds the ext fields of one header (real ones
	// carry up to about 30).
	DefaultMaxExtFields = 1024
	// DefaultMaxHeaderDepth bounds the nesting of a JSON header: the
	// header object and its extFields are two levels; unknown fields may
	// nest up to this depth in all.
	DefaultMaxHeaderDepth = 32
)

// Limits bound what the peers of a Server can make it hold. Zero values
// take the defaults; a negative MaxConns or MaxInFlightPerConn disables
// that limit.
type Limits struct {
	// ReadBudget bounds the bytes of requests read but not yet handled,
	// server-wide: a frame counts at its announced length from the moment
	// its length prefix has arrived (before its buffer is allocated), while
	// it is read, queued for a worker and handled, until the handler
	// returns. When the budget is used up, a connection that starts a
	// frame waits before reading its body: the peer meets TCP
	// back-pressure, and nothing queues without limit. Waiting readers are
	// served in arrival order. DefaultReadBudget; raised to MaxFrameSize
	// when lower, so that every legal frame fits.
	ReadBudget int64
	// MaxConns bounds the open connections; one accepted beyond it is
	// closed at once (logged at most once per LogEvery). DefaultMaxConns.
	MaxConns int
	// MaxInFlightPerConn bounds the requests of one connection that are
	// queued or being handled; one more is answered SystemBusy at once, as
	// a full worker queue is. DefaultMaxInFlightPerConn.
	MaxInFlightPerConn int
	// Header bounds every header the server decodes.
	Header HeaderLimits
}

// HeaderLimits bound one header, so that decoding it costs at most a small
// multiple of its size. Zero values take the defaults. A header beyond a
// limit is ErrBadHeader (the connection that sent it is closed).
type HeaderLimits struct {
	// MaxBytes bounds the header's length (DefaultMaxHeaderBytes).
	MaxBytes int
	// MaxExtFields bounds the ext entries of the header, duplicates
	// included (DefaultMaxExtFields).
	MaxExtFields int
	// MaxDepth bounds the nesting of arrays and objects in a JSON header,
	// the header object included (DefaultMaxHeaderDepth).
	MaxDepth int
}

// DefaultHeaderLimits are the limits Decode applies.
var DefaultHeaderLimits = HeaderLimits{
	MaxBytes:     DefaultMaxHeaderBytes,
	MaxExtFields: DefaultMaxExtFields,
	MaxDepth:     DefaultMaxHeaderDepth,
}

func (h HeaderLimits) withDefaults() HeaderLimits {
	if h.MaxBytes <= 0 {
		h.MaxBytes = DefaultMaxHeaderBytes
	}
	if h.MaxExtFields <= 0 {
		h.MaxExtFields = DefaultMaxExtFields
	}
	if h.MaxDepth <= 0 {
		h.MaxDepth = DefaultMaxHeaderDepth
	}
	return h
}

// withDefaults fills the zero fields; maxFrame is the server's frame limit.
func (l Limits) withDefaults(maxFrame int) Limits {
	if l.ReadBudget <= 0 {
		l.ReadBudget = DefaultReadBudget
	}
	l.ReadBudget = max(l.ReadBudget, int64(maxFrame))
	switch {
	case l.MaxConns == 0:
		l.MaxConns = DefaultMaxConns
	case l.MaxConns < 0:
		l.MaxConns = 0
	}
	switch {
	case l.MaxInFlightPerConn == 0:
		l.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	case l.MaxInFlightPerConn < 0:
		l.MaxInFlightPerConn = 0
	}
	l.Header = l.Header.withDefaults()
	return l
}

// budget is a server's read budget: a counting semaphore of bytes whose
// waiters are served first come, first served. Every grant is released
// exactly once: when the frame fails to arrive, when its answer is decided
// without a handler, or when its handler returns.
type budget struct {
	limit int64

	mu      sync.Mutex
	held    int64
	waiters []*budgetWaiter // in arrival order
	waits   uint64          // acquisitions that had to wait
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when granted
}

func newBudget(limit int64) *budget { return &budget{limit: limit} }

// acquire takes n bytes, waiting while they are not free or an earlier
// waiter is still waiting. It reports whether it waited; it fails only
// when ctx ends first, and then holds nothing. n is at most the limit.
func (b *budget) acquire(ctx context.Context, n int64) (waited bool, err error) {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.held+n <= b.limit {
		b.held += n
		b.mu.Unlock()
		return false, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.waits++
	b.mu.Unlock()

	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while ctx ended: give it back
		b.held -= n
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grantLocked() // the head may have changed
	return true, ctx.Err()
}

// release returns n bytes and wakes the waiters they make room for.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked grants waiters from the head while they fit.
func (b *budget) grantLocked() {
	for len(b.waiters) > 0 && b.held+b.waiters[0].n <= b.limit {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.held += w.n
		close(w.ready)
	}
}

// stats returns the bytes held, the readers waiting and the waits so far.
func (b *budget) stats() (held int64, waiting int, waits uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, len(b.waiters), b.waits
}

// LogEvery is the least interval between two log lines about refused
// connections: a connection flood produces one line per interval, with
// the count of the refusals it stands for.
const LogEvery = 10 * time.Second

// refusalLog logs refused connections, at most once per LogEvery.
type refusalLog struct {
	logger hclog.Logger
	now    func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed uint64
}

// refused records one refused connection and logs it unless a line was
// logged less than LogEvery ago.
func (r *refusalLog) refused(peer string, limit int) {
	r.mu.Lock()
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < LogEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.suppressed = 0
	r.last = now
	r.mu.Unlock()
	r.logger.Warn("connection limit reached, closing new connections", "peer", peer,
		"max_conns", limit, "refused_since_last_line", n)
}
