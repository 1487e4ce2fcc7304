package remoting

import (
	"bufio"
	"io"
	"sync"
	"sync/atomic"
)

// A connection reads through a buffer of SmallReadBuffer bytes; while its
// peer keeps it full (a producer pipelining sends writes 50 of them, some
// 55 KB, at once), it reads through one of LargeReadBuffer bytes instead,
// taken from its server's set, so that each read takes what the socket
// holds rather than a slice of it. Reads return to the small buffer once
// the large one is empty and the last two reads each brought less than
// half the small one: a lightly used connection holds SmallReadBuffer
// bytes. One that falls silent right after a burst keeps its large buffer
// while it waits (a blocked read cannot be told from a slow one), so the
// server lends at most Limits.MaxLargeReadBuffers at once whatever its
// connections do; a busy connection that finds none lent reads through
// its small buffer.
const (
	// SmallReadBuffer is every connection's own read buffer.
	SmallReadBuffer = 32 << 10
	// LargeReadBuffer is the read buffer a busy connection borrows.
	LargeReadBuffer = 256 << 10
	// DefaultMaxLargeReadBuffers bounds the large read buffers a server
	// lends at once (16 MiB).
	DefaultMaxLargeReadBuffers = 64
)

// readBuffers is a server's set of large read buffers: at most max lent at
// once, kept for reuse when returned.
type readBuffers struct {
	max  int64
	lent atomic.Int64
	// grown counts the loans, for tests and statistics.
	grown atomic.Int64
	pool  sync.Pool
}

func newReadBuffers(max int) *readBuffers {
	return &readBuffers{max: int64(max)}
}

// take lends a large reader reading from r, or returns nil when max are
// lent.
func (b *readBuffers) take(r io.Reader) *bufio.Reader {
	if b == nil || b.lent.Add(1) > b.max {
		if b != nil {
			b.lent.Add(-1)
		}
		return nil
	}
	b.grown.Add(1)
	if br, ok := b.pool.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, LargeReadBuffer)
}

// give returns a large reader; what it holds unread is dropped.
func (b *readBuffers) give(br *bufio.Reader) {
	br.Reset(nil)
	b.pool.Put(br)
	b.lent.Add(-1)
}

// connReader is a connection's read side: the buffered reader its read
// loop uses (cur), which is its own small one or a large one borrowed
// from bufs. It is the buffered readers' source: it records what each
// read asked for and got, and first hands out the bytes carried over from
// the small reader when the connection switched to a large one.
type connReader struct {
	src   io.Reader
	small *bufio.Reader
	cur   *bufio.Reader
	bufs  *readBuffers // nil: never grows
	// carry is the unread bytes of the small reader at the switch to a
	// large one: a view of the small reader's buffer, which is not used
	// again before carry is drained (the switch back happens only with
	// the large reader and carry empty).
	carry []byte
	// asked and got are the last read's request and result; light
	// counts the reads in a row that brought less than half the small
	// buffer.
	asked, got, light int
}

func newConnReader(src io.Reader, bufs *readBuffers) *connReader {
	r := &connReader{src: src, bufs: bufs}
	r.small = bufio.NewReaderSize(r, SmallReadBuffer)
	r.cur = r.small
	return r
}

// Read implements io.Reader for the buffered readers.
func (r *connReader) Read(p []byte) (int, error) {
	if len(r.carry) > 0 {
		n := copy(p, r.carry)
		r.carry = r.carry[n:]
		return n, nil
	}
	n, err := r.src.Read(p)
	r.asked, r.got = len(p), n
	if n < SmallReadBuffer/2 {
		r.light++
	} else {
		r.light = 0
	}
	return n, err
}

// adapt switches the read buffer, between frames: to a large one when the
// last read filled what it asked of at least half the small buffer (more
// is waiting in the socket), back to the small one when the large one is
// empty and the last two reads each brought less than half the small
// buffer. It returns the reader to use for the next frame.
func (r *connReader) adapt() *bufio.Reader {
	const half = SmallReadBuffer / 2
	switch {
	case r.cur == r.small:
		if r.bufs != nil && r.asked >= half && r.got == r.asked {
			if br := r.bufs.take(r); br != nil {
				p, _ := r.small.Peek(r.small.Buffered())
				r.carry = p
				r.asked, r.got, r.light = 0, 0, 0
				r.cur = br
			}
		}
	case r.light >= 2 && r.cur.Buffered() == 0 && len(r.carry) == 0:
		r.bufs.give(r.cur)
		r.small.Reset(r)
		r.asked, r.got, r.light = 0, 0, 0
		r.cur = r.small
	}
	return r.cur
}

// release returns a borrowed buffer (the connection is done reading).
func (r *connReader) release() {
	if r.cur != r.small {
		r.carry = nil
		r.bufs.give(r.cur)
		r.cur = r.small
	}
}
