package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
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
	// listCodes are the request codes whose ext fields are decoded into
	// ExtList (ServerConfig.ListCodes).
	listCodes []int32
	// budget, if set, is the owner's read budget: every frame is counted
	// against it from its length prefix on (see Limits.ReadBudget).
	budget *budget
	// readBufs, if set, lends the connection a large read buffer while
	// it is busy (readbuf.go).
	readBufs *readBuffers
	// frameTimeout and minRate bound the time a frame may take once its
	// length prefix has arrived (with a budget only; see Limits).
	frameTimeout time.Duration
	minRate      int64
	// largeBody, if set, says whether a request (its header decoded) may
	// carry a body above SmallFrameSize; a request refused by it is
	// answered at once and its body discarded unread (with a budget only).
	largeBody func(req *Command) bool
	// stalls and refusedBodies, if set, count connections closed for a
	// frame that did not arrive in time and bodies refused by largeBody.
	stalls, refusedBodies *atomic.Uint64
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
	// closeSilent, set on a client's connections, stamps lastRead on
	// every read and closes the connection when a call times out with
	// nothing read since it was registered (ErrConnSilent; silent.go).
	closeSilent bool
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

	ctx context.Context
	// inlineCtx is ctx marked for InlineHandler.ServeInline (Inline).
	inlineCtx context.Context
	cancel    context.CancelFunc

	// Write side: encoded frames queue in wqueue, each in a buffer of
	// frameBuffers, wbytes their total size; one writer at a time
	// (flushing) writes the queue to nc. wcond (on wmu) wakes writers held
	// back by a full queue. wspare, wiov and wjoin are the flusher's
	// reused slices.
	wmu      sync.Mutex
	wcond    sync.Cond
	wqueue   []*[]byte
	wbytes   int
	wspare   []*[]byte
	wiov     net.Buffers
	wjoin    []byte
	flushing bool
	// wclosed is set (under wmu) when the connection closes; detached
	// flushers (replyDetached) are started only before, and the read
	// goroutine waits for them as it ends.
	wclosed  bool
	flushers sync.WaitGroup

	// share is what this connection holds of its owner's read budget.
	share budgetOwner
	// frameHeld is the budget held by the frame being read (0 between
	// frames and while waiting for the budget), lastRead the time
	// (monoNow) the connection opened or last read bytes: the server
	// closes the longest silent of these connections when the budget is
	// short; a client's connections stamp it on every read (closeSilent).
	frameHeld atomic.Int64
	lastRead  atomic.Int64

	// inflight counts this connection's requests queued or being handled.
	// Only the read goroutine adds to it, so checking it against a limit
	// and adding needs no lock.
	inflight atomic.Int64

	mu     sync.Mutex
	closed bool
	// isClosed mirrors closed for Closed, which the write path and a
	// client's every call ask without taking mu.
	isClosed   atomic.Bool
	closeErr   error
	pending    map[int32]*call
	nextOpaque int32
	// deadlines orders the pending calls that have a deadline; sweeper,
	// armed for sweepAt (zero: not armed), fails those whose deadline
	// passed (see watchDeadline).
	deadlines callDeadlines
	sweeper   *time.Timer
	sweepAt   time.Time
	// watches holds, for each context of pending InvokeFunc calls, how
	// many there are and its one cancellation hook (see watchContext);
	// hooks counts those hooks running, which start only before the
	// connection closes, and which the read goroutine waits for as it
	// ends.
	watches map[context.Context]*ctxWatch
	hooks   sync.WaitGroup
}

// call is a request waiting for its response.
type call struct {
	opaque int32
	code   int32 // the request's, for a timeout's error
	// list: the response's ext fields stay in ExtList (CallOptions).
	list bool
	// ctx, if set, is an InvokeFunc call's context, watched while the
	// call is pending: its end ends the call.
	ctx context.Context
	// deadline, if not zero, is when the sweep fails the call; index is
	// its place in the deadline heap (-1: not there).
	deadline time.Time
	index    int
	// readMark is the connection's lastRead when the call was
	// registered: if it is the same when the call times out, nothing was
	// read for the whole wait (closeSilent).
	readMark int64
	// done, if set, receives the outcome exactly once; it must not
	// block. Without it the outcome goes to resp and err and ready is
	// signalled (a synchronous request's waiter; see waitCalls).
	done  func(*Command, error)
	resp  *Command
	err   error
	ready chan struct{}
}

func newConn(nc net.Conn, cfg connConfig) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		id:        connIDs.Add(1),
		nc:        nc,
		cfg:       cfg,
		ctx:       ctx,
		inlineCtx: context.WithValue(ctx, inlineKey{}, true),
		cancel:    cancel,
		pending:   make(map[int32]*call),
	}
	c.wcond.L = &c.wmu
	c.lastRead.Store(monoNow())
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
func (c *Conn) Closed() bool { return c.isClosed.Load() }

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
	return c.write(cmd, cmd.SerializeType, cmd.Opaque, cmd.Flag, false)
}

// Oneway writes cmd as a one-way request (FlagOneway set, a fresh opaque),
// returning once it is queued as WriteCommand does. cmd is not modified.
func (c *Conn) Oneway(cmd *Command) error {
	return c.write(cmd, cmd.SerializeType, c.allocOpaque(), (cmd.Flag|FlagOneway)&^FlagResponse, false)
}

// Request sends cmd as a request with a fresh opaque and waits for the
// response with that opaque, until ctx is done (ErrTimeout on a deadline)
// or the connection dies (ErrConnClosed). A server handler uses it for
// server-to-client calls. cmd is not modified.
func (c *Conn) Request(ctx context.Context, cmd *Command) (*Command, error) {
	return c.request(ctx, cmd, CallOptions{})
}

// request is Request with options. The waiter sleeps on its recycled
// call's channel, which the read goroutine (or the sweep, or the close)
// signals: one hand-off per response, nothing allocated for it.
func (c *Conn) request(ctx context.Context, cmd *Command, o CallOptions) (*Command, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx, c.describe(cmd))
	}
	if !o.Deadline.IsZero() && !time.Now().Before(o.Deadline) {
		return nil, fmt.Errorf("%w: %s: %w", ErrTimeout, c.describe(cmd), context.DeadlineExceeded)
	}
	cl := waitCalls.Get().(*call)
	cl.deadline, cl.list = o.Deadline, o.ExtList
	if err := c.startCall(cmd, cl); err != nil {
		putWaitCall(cl)
		return nil, err
	}
	select {
	case <-cl.ready:
	case <-ctx.Done():
		if c.forget(cl) {
			c.contextTimedOut(ctx, cl)
			putWaitCall(cl)
			return nil, contextError(ctx, c.describe(cmd))
		}
		<-cl.ready // completed while the context ended
	}
	resp, err := cl.resp, cl.err
	putWaitCall(cl)
	return resp, err
}

func (c *Conn) describe(cmd *Command) string { return c.describeCode(cmd.Code) }

func (c *Conn) describeCode(code int32) string {
	return fmt.Sprintf("%s to %s", RequestCodeName(code), c.nc.RemoteAddr())
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
	cl := &call{done: done, index: -1}
	if err := c.startCall(cmd, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

// startCall is start with the call given: if it returns an error the call
// was never pending; otherwise it finishes exactly once.
func (c *Conn) startCall(cmd *Command, cl *call) error { return c.startCallMode(cmd, cl, false) }

// startCallMode is startCall; detached writes the frame as replyDetached
// does, without waiting for the queue or writing to the socket.
func (c *Conn) startCallMode(cmd *Command, cl *call, detached bool) error {
	c.mu.Lock()
	if c.closed {
		err := connClosedError(c.closeErr)
		c.mu.Unlock()
		return err
	}
	for {
		c.nextOpaque++
		if _, busy := c.pending[c.nextOpaque]; !busy {
			break
		}
	}
	cl.opaque, cl.code, cl.readMark = c.nextOpaque, cmd.Code, c.lastRead.Load()
	c.pending[cl.opaque] = cl
	if !cl.deadline.IsZero() {
		c.watchDeadline(cl)
	}
	if cl.ctx != nil {
		c.watchContext(cl)
	}
	c.mu.Unlock()

	if err := c.write(cmd, cmd.SerializeType, cl.opaque, cmd.Flag&^(FlagResponse|FlagOneway), detached); err != nil {
		if c.forget(cl) {
			return err
		}
		// The write error closed the connection, which already failed the
		// call.
	}
	return nil
}

// forget removes a pending call. It reports whether the call was still
// pending, in which case the caller now owns its completion.
func (c *Conn) forget(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[cl.opaque] == cl {
		delete(c.pending, cl.opaque)
		c.unwatchDeadline(cl)
		c.unwatchContext(cl)
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
		c.unwatchDeadline(cl)
		c.unwatchContext(cl)
	}
	c.mu.Unlock()
	if cl == nil {
		c.cfg.logger.Debug("dropping response without a pending request",
			"peer", c.nc.RemoteAddr(), "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	if !cl.list && resp.ExtFields == nil && resp.ExtList != nil {
		// Responses are decoded with their fields listed; this caller
		// reads them from the map.
		resp.ExtFields, resp.ExtList = resp.ExtMap(), nil
	}
	cl.finish(resp, nil)
}

// reply writes the response to req: the request's opaque, FlagResponse
// set. Errors only mean the connection is gone; they are logged.
func (c *Conn) reply(req, resp *Command) {
	c.replyMode(req, resp, false)
}

// replyDetached is reply for a goroutine that serves many connections
// (an asynchronous handler's completion): it neither waits for the queue
// to drain nor writes to the socket itself; a flusher goroutine of the
// connection's does. What it queues is bounded by the connection's
// requests in flight, which stay counted until their answers are queued.
func (c *Conn) replyDetached(req, resp *Command) {
	c.replyMode(req, resp, true)
}

func (c *Conn) replyMode(req, resp *Command, detached bool) {
	if err := c.write(resp, req.SerializeType, req.Opaque, resp.Flag|FlagResponse, detached); err != nil {
		c.cfg.logger.Debug("cannot send response", "peer", c.nc.RemoteAddr(),
			"request", RequestCodeName(req.Code), "opaque", req.Opaque, "error", err)
	}
}

// frameBuffers holds the buffers frames are encoded into; a frame's
// buffer returns here once the frame is written.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// putFrameBuffer returns a frame buffer to frameBuffers unless it grew too
// large to keep.
func putFrameBuffer(bp *[]byte) {
	if cap(*bp) <= maxKeptBuffer {
		*bp = (*bp)[:0]
		frameBuffers.Put(bp)
	}
}

// write encodes cmd with the given header form, opaque and flag and
// queues the frame on the connection. A header the binary form cannot
// carry (a code outside int16, an ext key over 32 767 bytes) goes as JSON,
// which carries every header and which every client reads. Writers combine: the first one to find no write in
// progress becomes the flusher, yields the processor once, and writes
// everything queued, in one syscall per round (writev on TCP, so the
// queued frames are not copied together), until the queue is empty; the
// others return as soon as their frame is queued. So a nil error means the
// frame is queued in order, not that the peer has it; if the flush fails
// the connection closes and every pending call fails with ErrConnClosed.
// A writer blocks while maxQueuedWrite bytes are already waiting
// (back-pressure from a peer that does not read). A detached writer
// (replyDetached) does neither: it queues its frame and, when no write is
// in progress, starts a flusher goroutine for the connection.
func (c *Conn) write(cmd *Command, typ byte, opaque, flag int32, detached bool) error {
	bp := frameBuffers.Get().(*[]byte)
	frame, err := appendFrame((*bp)[:0], cmd, typ, opaque, flag)
	if errors.Is(err, ErrBadHeader) && typ == SerializeRocketMQ {
		frame, err = appendFrame((*bp)[:0], cmd, SerializeJSON, opaque, flag)
	}
	*bp = frame
	if err != nil {
		putFrameBuffer(bp)
		return err
	}
	if len(frame) > c.cfg.maxFrame {
		putFrameBuffer(bp)
		return fmt.Errorf("%w: %d-byte frame, limit %d", ErrFrameTooLarge, len(frame), c.cfg.maxFrame)
	}

	c.wmu.Lock()
	for !detached && c.flushing && c.wbytes >= maxQueuedWrite && !c.Closed() {
		c.wcond.Wait()
	}
	if c.wclosed || c.Closed() {
		c.wmu.Unlock()
		putFrameBuffer(bp)
		return c.closedError()
	}
	c.wqueue = append(c.wqueue, bp)
	c.wbytes += len(frame)
	if c.flushing {
		c.wmu.Unlock()
		return nil
	}
	c.flushing = true
	if detached {
		c.flushers.Add(1)
		c.wmu.Unlock()
		go func() {
			defer c.flushers.Done()
			_ = c.flushQueued()
		}()
		return nil
	}
	c.wmu.Unlock()
	return c.flushQueued()
}

// flushQueued writes the queue until it is empty; the caller has set
// flushing.
func (c *Conn) flushQueued() error {
	var err error
	// The flusher yields once before its first write: the frames of the
	// goroutines that are runnable now (typically the other handlers of
	// one raft entry, all answered at once) join this write instead of
	// each costing a syscall on both ends. A broker under load writes
	// about a quarter as many times per response; alone on its
	// connection a writer only pays the yield.
	runtime.Gosched()
	c.wmu.Lock()
	for len(c.wqueue) > 0 && err == nil {
		batch := c.wqueue
		c.wqueue = c.wspare[:0]
		c.wbytes = 0
		c.wmu.Unlock()
		if c.cfg.writeTimeout > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.cfg.writeTimeout))
		}
		err = c.writeBatch(batch)
		for i, fb := range batch {
			putFrameBuffer(fb)
			batch[i] = nil
		}
		c.wmu.Lock()
		c.wspare = batch[:0]
		c.wcond.Broadcast()
	}
	c.flushing = false
	if err != nil {
		for _, fb := range c.wqueue {
			putFrameBuffer(fb)
		}
		c.wqueue, c.wbytes = nil, 0
	}
	c.wcond.Broadcast()
	c.wmu.Unlock()
	if err != nil {
		c.closeWith(fmt.Errorf("write: %w", err))
		return fmt.Errorf("%w: write to %s: %w", ErrConnClosed, c.nc.RemoteAddr(), err)
	}
	return nil
}

// framesWriter is a connection that writes a batch of frames itself (a
// TCP connection on Linux: internal/rawconn).
type framesWriter interface {
	WriteBuffers(frames []*[]byte) (int, error)
}

// writeBatch writes the frames of batch to the connection in one system
// call where it can: one frame as it is, several as one writev on a TCP
// connection, and otherwise (TLS, whose records would each take a
// syscall) joined into one buffer first. Only the flusher calls it.
func (c *Conn) writeBatch(batch []*[]byte) error {
	if fw, ok := c.nc.(framesWriter); ok {
		_, err := fw.WriteBuffers(batch)
		return err
	}
	if len(batch) == 1 {
		_, err := c.nc.Write(*batch[0])
		return err
	}
	if _, ok := c.nc.(*net.TCPConn); ok {
		iov := c.wiov[:0]
		for _, fb := range batch {
			iov = append(iov, *fb)
		}
		// WriteTo consumes its receiver; c.wiov keeps the backing array.
		c.wiov = iov
		_, err := iov.WriteTo(c.nc)
		clear(c.wiov[:len(batch)])
		return err
	}
	join := c.wjoin[:0]
	for _, fb := range batch {
		join = append(join, *fb...)
	}
	_, err := c.nc.Write(join)
	c.wjoin = nil
	if cap(join) <= maxKeptBuffer {
		c.wjoin = join[:0]
	}
	return err
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
// its context and fails every pending call. It reports whether it closed
// the connection (false: it was closed already).
func (c *Conn) closeWith(reason error) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.isClosed.Store(true)
	c.closeErr = reason
	pending := c.pending
	c.pending = nil
	c.stopSweeper()
	c.stopWatches()
	c.mu.Unlock()

	c.cancel()
	_ = c.nc.Close()
	c.wmu.Lock()
	c.wclosed = true
	c.wcond.Broadcast() // writers held back by a full queue give up
	c.wmu.Unlock()
	err := connClosedError(reason)
	for _, cl := range pending {
		cl.finish(nil, err)
	}
	return true
}

// readLoop is the connection's read goroutine. It returns when the
// connection closes, after running the close hook.
func (c *Conn) readLoop() {
	defer func() {
		c.closeWith(errClosedLocally)
		c.flushers.Wait()
		c.hooks.Wait()
		if c.cfg.onClose != nil {
			c.cfg.onClose(c)
		}
	}()
	var src io.Reader = c.nc
	if c.cfg.closeSilent {
		src = readStamper{c}
	}
	rd := newConnReader(src, c.cfg.readBufs)
	defer rd.release()
	for {
		br := rd.adapt()
		if c.cfg.idleTimeout > 0 && !frameBuffered(br) {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.cfg.idleTimeout))
		}
		cmd, held, err := c.readCommand(br)
		if err != nil {
			if errors.Is(err, ErrBadHeader) || errors.Is(err, errUndecodable) {
				c.cfg.logger.Warn("closing connection after an undecodable frame",
					"peer", c.nc.RemoteAddr(), "conn", c.id, "error", err)
				c.closeWith(err)
				return
			}
			c.readFailed(err)
			return
		}
		if cmd == nil {
			continue // refused and discarded
		}
		if cmd.IsResponse() {
			c.complete(cmd)
			c.release(held)
			continue
		}
		c.cfg.dispatch(c, cmd, held)
	}
}

// frameBuffered reports whether br holds the whole next frame, length
// prefix included. Reading it then makes no read on the connection, so
// the deadline that bounds such reads need not be set again: under
// pipelined load most frames arrive in the same read as the one before.
func frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	p, err := br.Peek(4)
	if err != nil {
		return false
	}
	n := int32(binary.BigEndian.Uint32(p))
	return n >= 0 && int64(br.Buffered()) >= 4+int64(n)
}

// errUndecodable marks a frame the connection cannot decode: the stream is
// no longer synchronised.
var errUndecodable = errors.New("undecodable frame")

// readCommand reads and decodes the next frame, returning the budget bytes
// it holds. Without a budget it reads the frame as ReadFrame does. With
// one, a small frame (at most SmallFrameSize) is admitted whole before it
// is read; a larger one has its header read and decoded first, and only
// then is its body admitted, as a large grant, unless its code may not
// carry a large body: then it is answered at once, its body discarded
// unread, and readCommand returns a nil Command. The read deadline covers
// the frame (frameTimeout plus its length at minRate) from its prefix on,
// the time spent waiting for the budget excluded.
func (c *Conn) readCommand(br *bufio.Reader) (*Command, int64, error) {
	b := c.cfg.budget
	if b == nil {
		if cmd, ok, err := c.decodeBuffered(br); ok {
			return cmd, 0, err
		}
		frame, err := readFrameBuffered(br, c.cfg.maxFrame)
		if err != nil {
			return nil, 0, err
		}
		return c.decode(frame, len(frame) <= inPlaceFrameSize)
	}
	n, err := readLengthBuffered(br, c.cfg.maxFrame)
	if err != nil {
		return nil, 0, err
	}
	fr := frameRead{c: c, br: br, total: n}
	if br.Buffered() < n {
		fr.setDeadline(n)
	}
	if n+4 <= SmallFrameSize {
		if err := fr.admit(int64(n), true); err != nil {
			return nil, 0, err
		}
		frame, err := fr.readAll(n)
		if err != nil {
			return nil, 0, fr.fail(err)
		}
		cmd, _, err := c.decode(frame, n <= inPlaceFrameSize)
		if err != nil {
			c.release(fr.done(0))
			return nil, 0, err
		}
		return cmd, fr.done(0), nil
	}

	// Header first: the word, then the header, admitted as small when it
	// is (headers almost always are).
	var word [4]byte
	if err := fr.read(word[:]); err != nil {
		return nil, 0, fr.fail(err)
	}
	hlen := int(binary.BigEndian.Uint32(word[:]) & maxHeaderLength)
	if hlen > n-4 {
		return nil, 0, fmt.Errorf("%w: %w: header length %d exceeds the %d bytes after it", errUndecodable, ErrBadFrame, hlen, n-4)
	}
	if lim := c.cfg.header.withDefaults().MaxBytes; hlen > lim {
		return nil, 0, fmt.Errorf("%w: header of %d bytes exceeds the limit of %d", ErrBadHeader, hlen, lim)
	}
	hn := int64(4 + hlen)
	if err := fr.admit(hn, hn <= SmallFrameSize); err != nil {
		return nil, 0, err
	}
	head := make([]byte, hn)
	copy(head, word[:])
	if err := fr.read(head[4:]); err != nil {
		return nil, 0, fr.fail(err)
	}
	cmd, _, err := c.decode(head, true)
	if err != nil {
		c.release(fr.done(0))
		return nil, 0, err
	}
	bodyLen := n - int(hn)
	if bodyLen > SmallFrameSize && !cmd.IsResponse() && c.cfg.largeBody != nil && !c.cfg.largeBody(cmd) {
		c.release(fr.done(0))
		return nil, 0, c.refuseBody(&fr, cmd, bodyLen)
	}
	if bodyLen > 0 {
		if err := fr.admit(int64(bodyLen), false); err != nil {
			return nil, 0, fr.fail(err)
		}
		body := make([]byte, bodyLen)
		if err := fr.read(body); err != nil {
			return nil, 0, fr.fail(err)
		}
		cmd.Body = body
	}
	return cmd, fr.done(0), nil
}

// decodeBuffered decodes the next frame when br holds it whole, which
// under pipelined load is most frames: a small one (inPlaceFrameSize) is
// copied out and decoded in place, one allocation for its strings and its
// body; a larger one is decoded where it lies (the decoded strings are
// copies anyway) and only its body copied. ok is false when the frame is
// not all there (or its length is out of bounds, which the read reports).
func (c *Conn) decodeBuffered(br *bufio.Reader) (cmd *Command, ok bool, err error) {
	if !frameBuffered(br) {
		return nil, false, nil
	}
	p, _ := br.Peek(4)
	n := int32(binary.BigEndian.Uint32(p))
	if checkLength(n, c.cfg.maxFrame) != nil {
		return nil, false, nil
	}
	p, err = br.Peek(4 + int(n))
	if err != nil {
		return nil, false, nil
	}
	if int(n) <= inPlaceFrameSize {
		cmd, _, err = c.decode(bytes.Clone(p[4:]), true)
	} else if cmd, _, err = c.decode(p[4:], false); err == nil && cmd.Body != nil {
		cmd.Body = bytes.Clone(cmd.Body)
	}
	_, _ = br.Discard(4 + int(n))
	return cmd, true, err
}

// inPlaceFrameSize is the largest frame (after its length prefix) a
// connection decodes in place: the command's strings are then views of
// the frame's own buffer, which spares a copy of the header per frame
// (most of a send's decoding allocations), and keep the whole frame, body
// included, alive while any of them is kept; so only small frames are
// decoded so, and a larger one's strings copy its header.
const inPlaceFrameSize = 4 << 10

// decode decodes a complete frame, in place when owned (the frame is a
// buffer of the command's own; see decodeFrameMode); an error is
// errUndecodable or ErrBadHeader.
func (c *Conn) decode(frame []byte, owned bool) (*Command, int64, error) {
	cmd, err := decodeFrameMode(frame, c.cfg.header, true, c.cfg.listCodes, owned)
	if err != nil && !errors.Is(err, ErrBadHeader) {
		err = fmt.Errorf("%w: %w", errUndecodable, err)
	}
	return cmd, 0, err
}

// refuseBody answers a request whose code may not carry a large body and
// discards the body as it arrives, holding no budget.
func (c *Conn) refuseBody(fr *frameRead, req *Command, bodyLen int) error {
	if c.cfg.refusedBodies != nil {
		c.cfg.refusedBodies.Add(1)
	}
	c.cfg.logger.Debug("refusing a large body", "peer", c.nc.RemoteAddr(), "conn", c.id,
		"request", RequestCodeName(req.Code), "body", bodyLen)
	if !req.IsOneway() {
		c.reply(req, NewResponse(req, SystemError, fmt.Sprintf(
			"request %s carries a %d-byte body; this server accepts bodies above %d bytes only for the (signed, where signing is required) requests that need them",
			RequestCodeName(req.Code), bodyLen, SmallFrameSize)))
	}
	for bodyLen > 0 {
		m, err := fr.br.Discard(bodyLen)
		bodyLen -= m
		if m > 0 {
			c.lastRead.Store(monoNow())
		}
		if err != nil {
			return fr.fail(err)
		}
	}
	return nil
}

// frameRead is the reading of one frame on a server connection: what it
// holds of the budget, and its deadline.
type frameRead struct {
	c     *Conn
	br    *bufio.Reader
	total int // the frame's announced length
	got   int // bytes read after the prefix
	held  int64
}

// setDeadline gives the rest bytes still to come their time, at most the
// idle timeout.
func (fr *frameRead) setDeadline(rest int) {
	c := fr.c
	d := c.cfg.frameTimeout
	if c.cfg.minRate > 0 {
		d += time.Duration(float64(rest) / float64(c.cfg.minRate) * float64(time.Second))
	}
	if idle := c.cfg.idleTimeout; idle > 0 && (d <= 0 || idle < d) {
		d = idle
	}
	if d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	}
}

// admit takes n bytes of the budget, in the small or the large class. The
// time spent waiting is the server's: the deadline starts again after it.
func (fr *frameRead) admit(n int64, small bool) error {
	c := fr.c
	c.frameHeld.Store(0) // not silent: waiting for us
	waited, err := c.cfg.budget.acquire(c.ctx, &c.share, n, small)
	if err != nil {
		return err
	}
	fr.held += n
	c.lastRead.Store(monoNow())
	c.frameHeld.Store(fr.held)
	if waited {
		fr.setDeadline(fr.total - fr.got)
	}
	return nil
}

// readAll reads the next n bytes into a buffer of their own. When br
// already holds them, as it holds most frames under pipelined load, they
// are copied out at once (into a buffer the copy fills, not one cleared
// first): no read, and no time taken, as admit has just noted progress.
func (fr *frameRead) readAll(n int) ([]byte, error) {
	if fr.br.Buffered() >= n {
		p, err := fr.br.Peek(n)
		if err != nil {
			return nil, err
		}
		buf := bytes.Clone(p)
		_, _ = fr.br.Discard(n)
		fr.got += n
		return buf, nil
	}
	buf := make([]byte, n)
	return buf, fr.read(buf)
}

// read fills buf, noting progress as bytes arrive.
func (fr *frameRead) read(buf []byte) error {
	for len(buf) > 0 {
		m, err := fr.br.Read(buf)
		buf = buf[m:]
		fr.got += m
		if m > 0 {
			fr.c.lastRead.Store(monoNow())
		}
		if err != nil {
			return unexpectedEOF(err)
		}
	}
	return nil
}

// done ends the frame's reading and returns what it holds (plus extra).
func (fr *frameRead) done(extra int64) int64 {
	fr.c.frameHeld.Store(0)
	held := fr.held + extra
	fr.held = 0
	return held
}

// fail ends the frame's reading after err, giving its budget back. A
// deadline inside a frame is ErrStalled.
func (fr *frameRead) fail(err error) error {
	fr.c.release(fr.done(0))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %d of %d bytes arrived in time: %w", ErrStalled, fr.got, fr.total, err)
	}
	return err
}

// release returns held bytes to the budget.
func (c *Conn) release(held int64) {
	if c.cfg.budget != nil {
		c.cfg.budget.release(&c.share, held)
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
	case errors.Is(err, ErrStalled):
		if c.cfg.stalls != nil {
			c.cfg.stalls.Add(1)
		}
		c.cfg.logger.Warn("closing connection stalled inside a frame", "peer", peer, "conn", c.id, "error", err)
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
