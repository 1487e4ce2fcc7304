package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// connIDs numbers every connection of the process, server and client side.
var connIDs atomic.Uint64

// errClosedLocally is the close reason of Conn.Close.
var errClosedLocally = fmt.Errorf("%w: closed locally", ErrConnClosed)

const (
	// maxQueuedWrite is how many bytes may wait for the flushing writer
	// before further writers block.
	maxQueuedWrite = 4 << 20
	// maxKeptBuffer is the largest buffer kept for reuse.
	maxKeptBuffer = 256 << 10
)

// connConfig is what a Server or Client tells each of its connections.
type connConfig struct {
	maxFrame     int
	idleTimeout  time.Duration // 0: none
	writeTimeout time.Duration // 0: none
	logger       hclog.Logger
	// header bounds the headers the connection decodes (zero fields:
	// defaults).
	header HeaderLimits
	// budget, if set, is the owner's read budget: every frame is counted
	// against it from its length prefix on (see Limits.ReadBudget).
	budget *budget
	// inflight, if set, is the owner's count of requests in flight over
	// all its connections; finish decrements it with the connection's own.
	inflight *atomic.Int64
	// dispatch receives every request the connection reads, on its read
	// goroutine, with the budget bytes it holds (0 without a budget); it
	// must not block, and it owns those bytes: it releases them at once or
	// hands them to a task that releases them through finish.
	dispatch func(c *Conn, req *Command, held int64)
	// onClose runs once, on the read goroutine, after the connection has
	// closed and its pending calls have failed.
	onClose func(*Conn)
}

// Conn is one TCP connection carrying multiplexed frames in both
// directions: on a Server, the server side of a client's connection; in a
// Client, the pooled connection to one address.
//
// Each Conn has one read goroutine, owned by its Server or Client, which
// decodes frames, completes pending calls with responses and hands
// requests to the owner's worker pools. Writes come from any goroutine and
// are serialized (see write); a failed or timed-out write closes the
// connection, because the peer's stream may hold half a frame. All methods
// are safe for concurrent use. Lock order: wmu before mu.
type Conn struct {
	id  uint64
	nc  net.Conn
	cfg connConfig

	ctx    context.Context
	cancel context.CancelFunc

	// Write side: frames queue in wqueue; one writer at a time (flushing)
	// writes the queue to nc. wcond (on wmu) wakes writers held back by a
	// full queue.
	wmu      sync.Mutex
	wcond    sync.Cond
	wqueue   []byte
	wspare   []byte
	flushing bool

	// inflight counts this connection's requests queued or being handled.
	// Only the read goroutine adds to it, so checking it against a limit
	// and adding needs no lock.
	inflight atomic.Int64

	mu         sync.Mutex
	closed     bool
	closeErr   error
	pending    map[int32]*call
	nextOpaque int32
}

// call is a request waiting for its response.
type call struct {
	opaque int32
	// done receives the outcome exactly once; it must not block.
	done func(*Command, error)
}

func newConn(nc net.Conn, cfg connConfig) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		id:      connIDs.Add(1),
		nc:      nc,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		pending: make(map[int32]*call),
	}
	c.wcond.L = &c.wmu
	return c
}

// ID is a number unique among the connections of this process.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr is this side's address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Context is cancelled when the connection closes. Handlers that answer
// later (long polling) watch it to drop work for a departed peer.
func (c *Conn) Context() context.Context { return c.ctx }

// Closed reports whether the connection has closed.
func (c *Conn) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close closes the connection. Pending calls fail with ErrConnClosed and
// the owner's close hook runs on the read goroutine. Closing twice is a
// no-op.
func (c *Conn) Close() error {
	c.closeWith(errClosedLocally)
	return nil
}

// WriteCommand writes cmd as it is (its own opaque and flag). It is how a
// handler that returned nil answers later: WriteCommand(NewResponse(req,
// …)). It returns once the frame is queued behind the frames written
// before it; an error means the frame will not be sent (encoding failed,
// it exceeds MaxFrameSize, or the connection is closed). Safe for
// concurrent use.
func (c *Conn) WriteCommand(cmd *Command) error {
	return c.write(cmd, cmd.Opaque, cmd.Flag)
}

// Oneway writes cmd as a one-way request (FlagOneway set, a fresh opaque),
// returning once it is queued as WriteCommand does. cmd is not modified.
func (c *Conn) Oneway(cmd *Command) error {
	return c.write(cmd, c.allocOpaque(), (cmd.Flag|FlagOneway)&^FlagResponse)
}

// Request sends cmd as a request with a fresh opaque and waits for the
// response with that opaque, until ctx is done (ErrTimeout on a deadline)
// or the connection dies (ErrConnClosed). A server handler uses it for
// server-to-client calls. cmd is not modified.
func (c *Conn) Request(ctx context.Context, cmd *Command) (*Command, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx, c.describe(cmd))
	}
	type result struct {
		resp *Command
		err  error
	}
	ch := make(chan result, 1)
	cl, err := c.start(cmd, func(resp *Command, err error) { ch <- result{resp, err} })
	if err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		return res.resp, res.err
	case <-ctx.Done():
		if c.forget(cl) {
			return nil, contextError(ctx, c.describe(cmd))
		}
		res := <-ch // completed while the deadline passed
		return res.resp, res.err
	}
}

func (c *Conn) describe(cmd *Command) string {
	return fmt.Sprintf("%s to %s", RequestCodeName(cmd.Code), c.nc.RemoteAddr())
}

// allocOpaque returns the next opaque of this connection (not registered).
func (c *Conn) allocOpaque() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextOpaque++
	return c.nextOpaque
}

// start registers a pending call for cmd and writes it. If start returns an
// error, done is never called; otherwise done is called exactly once, with
// the response or with the error that ended the call.
func (c *Conn) start(cmd *Command, done func(*Command, error)) (*call, error) {
	c.mu.Lock()
	if c.closed {
		err := connClosedError(c.closeErr)
		c.mu.Unlock()
		return nil, err
	}
	for {
		c.nextOpaque++
		if _, busy := c.pending[c.nextOpaque]; !busy {
			break
		}
	}
	cl := &call{opaque: c.nextOpaque, done: done}
	c.pending[cl.opaque] = cl
	c.mu.Unlock()

	if err := c.write(cmd, cl.opaque, cmd.Flag&^(FlagResponse|FlagOneway)); err != nil {
		if c.forget(cl) {
			return nil, err
		}
		// The write error closed the connection, which already failed the
		// call through done.
	}
	return cl, nil
}

// forget removes a pending call. It reports whether the call was still
// pending, in which case the caller now owns its completion.
func (c *Conn) forget(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[cl.opaque] == cl {
		delete(c.pending, cl.opaque)
		return true
	}
	return false
}

// complete hands a response to the call waiting for its opaque. A response
// nobody waits for (late, after a timeout) is dropped.
func (c *Conn) complete(resp *Command) {
	c.mu.Lock()
	cl := c.pending[resp.Opaque]
	if cl != nil {
		delete(c.pending, resp.Opaque)
	}
	c.mu.Unlock()
	if cl == nil {
		c.cfg.logger.Debug("dropping response without a pending request",
			"peer", c.nc.RemoteAddr(), "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	cl.done(resp, nil)
}

// reply writes the response to req: the request's opaque, FlagResponse
// set. Errors only mean the connection is gone; they are logged.
func (c *Conn) reply(req, resp *Command) {
	if err := c.write(resp, req.Opaque, resp.Flag|FlagResponse); err != nil {
		c.cfg.logger.Debug("cannot send response", "peer", c.nc.RemoteAddr(),
			"request", RequestCodeName(req.Code), "opaque", req.Opaque, "error", err)
	}
}

var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// write encodes cmd with the given opaque and flag and queues the frame on
// the connection. Writers combine: the first one to find no write in
// progress becomes the flusher, yields the processor once, and writes
// everything queued, in one syscall per round, until the queue is empty; the others return as soon
// as their frame is queued. So a nil error means the frame is queued in
// order, not that the peer has it; if the flush fails the connection
// closes and every pending call fails with ErrConnClosed. A writer blocks
// while maxQueuedWrite bytes are already waiting (back-pressure from a
// peer that does not read).
func (c *Conn) write(cmd *Command, opaque, flag int32) error {
	bp := frameBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxKeptBuffer {
			frameBuffers.Put(bp)
		}
	}()
	frame, err := appendFrame((*bp)[:0], cmd, opaque, flag)
	if err != nil {
		return err
	}
	*bp = frame[:0]
	if len(frame) > c.cfg.maxFrame {
		return fmt.Errorf("%w: %d-byte frame, limit %d", ErrFrameTooLarge, len(frame), c.cfg.maxFrame)
	}

	c.wmu.Lock()
	for c.flushing && len(c.wqueue) >= maxQueuedWrite && !c.Closed() {
		c.wcond.Wait()
	}
	if c.Closed() {
		c.wmu.Unlock()
		return c.closedError()
	}
	c.wqueue = append(c.wqueue, frame...)
	if c.flushing {
		c.wmu.Unlock()
		return nil
	}
	c.flushing = true
	// The flusher yields once before its first write: the frames of the
	// goroutines that are runnable now (typically the other handlers of
	// one raft entry, all answered at once) join this write instead of
	// each costing a syscall on both ends. A broker under load writes
	// about a quarter as many times per response; alone on its
	// connection a writer only pays the yield.
	c.wmu.Unlock()
	runtime.Gosched()
	c.wmu.Lock()
	for len(c.wqueue) > 0 && err == nil {
		out := c.wqueue
		c.wqueue = c.wspare[:0]
		c.wmu.Unlock()
		if c.cfg.writeTimeout > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.cfg.writeTimeout))
		}
		_, err = c.nc.Write(out)
		c.wmu.Lock()
		c.wspare = nil
		if cap(out) <= maxKeptBuffer {
			c.wspare = out[:0]
		}
		c.wcond.Broadcast()
	}
	c.flushing = false
	if err != nil {
		c.wqueue = nil
	}
	c.wcond.Broadcast()
	c.wmu.Unlock()
	if err != nil {
		c.closeWith(fmt.Errorf("write: %w", err))
		return fmt.Errorf("%w: write to %s: %w", ErrConnClosed, c.nc.RemoteAddr(), err)
	}
	return nil
}

func (c *Conn) closedError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return connClosedError(c.closeErr)
}

// connClosedError is the error calls on a connection closed for reason get.
func connClosedError(reason error) error {
	if reason == nil || errors.Is(reason, ErrConnClosed) {
		return ErrConnClosed
	}
	return fmt.Errorf("%w: %w", ErrConnClosed, reason)
}

// closeWith closes the connection for reason (first caller wins), cancels
// its context and fails every pending call.
func (c *Conn) closeWith(reason error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.closeErr = reason
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()

	c.cancel()
	_ = c.nc.Close()
	c.wmu.Lock()
	c.wcond.Broadcast() // writers held back by a full queue give up
	c.wmu.Unlock()
	err := connClosedError(reason)
	for _, cl := range pending {
		cl.done(nil, err)
	}
}

// readLoop is the connection's read goroutine. It returns when the
// connection closes, after running the close hook.
func (c *Conn) readLoop() {
	defer func() {
		c.closeWith(errClosedLocally)
		if c.cfg.onClose != nil {
			c.cfg.onClose(c)
		}
	}()
	br := bufio.NewReaderSize(c.nc, 32<<10)
	for {
		if c.cfg.idleTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.cfg.idleTimeout))
		}
		frame, held, err := c.readFrame(br)
		if err != nil {
			c.readFailed(err)
			return
		}
		cmd, err := DecodeLimited(frame, c.cfg.header)
		if err != nil {
			c.release(held)
			c.cfg.logger.Warn("closing connection after an undecodable frame",
				"peer", c.nc.RemoteAddr(), "conn", c.id, "error", err)
			c.closeWith(err)
			return
		}
		if cmd.IsResponse() {
			c.complete(cmd)
			c.release(held)
			continue
		}
		c.cfg.dispatch(c, cmd, held)
	}
}

// readFrame reads the next frame. With a budget, the frame's announced
// length is taken from it before the body is read (waiting, with the read
// deadline stopped, while it is used up), and the body is read into one
// buffer of that length: the budget, not the arrival of bytes, bounds
// what peers can make the server allocate. It returns the bytes held.
func (c *Conn) readFrame(br *bufio.Reader) ([]byte, int64, error) {
	b := c.cfg.budget
	if b == nil {
		frame, err := readFrameBuffered(br, c.cfg.maxFrame)
		return frame, 0, err
	}
	n, err := readLengthBuffered(br, c.cfg.maxFrame)
	if err != nil {
		return nil, 0, err
	}
	waited, err := b.acquire(c.ctx, int64(n))
	if err != nil {
		return nil, 0, err
	}
	if waited && c.cfg.idleTimeout > 0 {
		// The time spent waiting for the budget is the server's, not the
		// peer's idleness.
		_ = c.nc.SetReadDeadline(time.Now().Add(c.cfg.idleTimeout))
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(br, frame); err != nil {
		b.release(int64(n))
		return nil, 0, unexpectedEOF(err)
	}
	return frame, int64(n), nil
}

// release returns held bytes to the budget.
func (c *Conn) release(held int64) {
	if c.cfg.budget != nil {
		c.cfg.budget.release(held)
	}
}

// finish ends a request dispatched to a worker: its handler has returned.
func (c *Conn) finish(held int64) {
	c.inflight.Add(-1)
	if c.cfg.inflight != nil {
		c.cfg.inflight.Add(-1)
	}
	c.release(held)
}

// readFailed logs why reading stopped and closes the connection.
func (c *Conn) readFailed(err error) {
	if c.Closed() {
		return // closed by this side; the read error is the consequence
	}
	peer := c.nc.RemoteAddr()
	switch {
	case errors.Is(err, io.EOF):
		c.cfg.logger.Debug("peer closed the connection", "peer", peer, "conn", c.id)
		err = fmt.Errorf("peer closed: %w", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.cfg.logger.Info("closing idle connection", "peer", peer, "conn", c.id, "idle", c.cfg.idleTimeout)
		err = fmt.Errorf("idle for %s: %w", c.cfg.idleTimeout, err)
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadFrame), errors.Is(err, io.ErrUnexpectedEOF):
		c.cfg.logger.Warn("closing connection after a bad frame", "peer", peer, "conn", c.id, "error", err)
	default:
		c.cfg.logger.Debug("read failed", "peer", peer, "conn", c.id, "error", err)
	}
	c.closeWith(err)
}
