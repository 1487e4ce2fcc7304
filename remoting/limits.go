package remoting

import (
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

	// SmallFrameSize is the largest frame, length prefix included, that
	// is read whole and may use the budget's reserve: every request
	// header with a small body fits. A larger frame's header is read and
	// decoded first, and its body is admitted on its own (see Limits).
	SmallFrameSize = 64 << 10
	// DefaultFrameTimeout is the base of the time a frame may take to
	// arrive once its length prefix has: the bound is FrameTimeout plus
	// the frame's length at MinReadRate.
	DefaultFrameTimeout = 10 * time.Second
	// DefaultMinReadRate is the slowest rate, in bytes per second, at
	// which a frame's bytes may arrive (beyond the FrameTimeout).
	DefaultMinReadRate = 512 << 10
	// DefaultStallGrace is how long a frame may go without a byte while
	// readers wait for the budget before its connection is closed.
	DefaultStallGrace = 2 * time.Second
	// DefaultStarvedAfter is how long small frames may wait for the
	// budget, without a break, before the server reports that it cannot
	// read new requests (Server.ReadHealth).
	DefaultStarvedAfter = 5 * time.Second

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
	// returns (a frame above SmallFrameSize: its header from when its
	// header-length word has arrived, its body once the header is
	// decoded). When the budget is used up, a connection that starts a
	// frame waits before reading it: the peer meets TCP back-pressure,
	// and nothing queues without limit. Waiting readers are served in
	// arrival order, small frames before large ones. DefaultReadBudget.
	ReadBudget int64
	// ReadReserve is the part of the budget only small frames (at most
	// SmallFrameSize) may use: large frames, complete or not, hold at most
	// ReadBudget − ReadReserve, so ordinary requests are read whatever
	// large frames hold or wait for. Default ReadBudget/8; the budget is
	// raised to MaxFrameSize + ReadReserve when lower.
	ReadReserve int64
	// MaxConnShare bounds what one connection may hold of the budget when
	// it starts a large frame's body: beyond it the body waits until the
	// connection's own requests finish. Default a quarter of the large
	// part of the budget, at least MaxFrameSize.
	MaxConnShare int64
	// FrameTimeout and MinReadRate bound the time a frame may take to
	// arrive once its length prefix has: FrameTimeout plus its length at
	// MinReadRate bytes per second (time spent waiting for the budget
	// excluded). A frame that does not arrive in time closes its
	// connection. Defaults DefaultFrameTimeout, DefaultMinReadRate.
	FrameTimeout time.Duration
	MinReadRate  int64
	// StallGrace: while readers wait for the budget, a connection whose
	// incomplete frame holds budget and has received no byte for this
	// long is closed, the longest silent first, until the waiters' need
	// is covered. DefaultStallGrace.
	StallGrace time.Duration
	// StarvedAfter is how long small frames may wait for the budget
	// without a break before Server.ReadHealth reports the server cannot
	// read new requests. DefaultStarvedAfter.
	StarvedAfter time.Duration
	// MaxConns bounds the open connections; one accepted beyond it is
	// closed at once (logged at most once per LogEvery). DefaultMaxConns.
	MaxConns int
	// MaxInFlightPerConn bounds the requests of one connection that are
	// queued or being handled; one more is answered SystemBusy at once, as
	// a full worker queue is. DefaultMaxInFlightPerConn.
	MaxInFlightPerConn int
	// MaxLargeReadBuffers bounds the large read buffers (LargeReadBuffer
	// bytes each) the server lends its busy connections at once; less
	// than 0: none, every connection reads through its SmallReadBuffer.
	// DefaultMaxLargeReadBuffers.
	MaxLargeReadBuffers int
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
	if l.ReadReserve <= 0 {
		l.ReadReserve = max(l.ReadBudget/8, 2*SmallFrameSize)
	}
	l.ReadBudget = max(l.ReadBudget, int64(maxFrame)+l.ReadReserve)
	if l.MaxConnShare <= 0 {
		l.MaxConnShare = (l.ReadBudget - l.ReadReserve) / 4
	}
	l.MaxConnShare = max(l.MaxConnShare, int64(maxFrame))
	if l.FrameTimeout <= 0 {
		l.FrameTimeout = DefaultFrameTimeout
	}
	if l.MinReadRate <= 0 {
		l.MinReadRate = DefaultMinReadRate
	}
	if l.StallGrace <= 0 {
		l.StallGrace = DefaultStallGrace
	}
	if l.StarvedAfter <= 0 {
		l.StarvedAfter = DefaultStarvedAfter
	}
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
	switch {
	case l.MaxLargeReadBuffers == 0:
		l.MaxLargeReadBuffers = DefaultMaxLargeReadBuffers
	case l.MaxLargeReadBuffers < 0:
		l.MaxLargeReadBuffers = 0
	}
	l.Header = l.Header.withDefaults()
	return l
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
