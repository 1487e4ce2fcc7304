package client

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// sendContext is the caller's context bounded by the send timeout, with
// no timer until something needs one. Most sends resolve a cached route
// and make one attempt, whose deadline the connection keeps
// (remoting.CallOptions), so a timer and a child context registered with
// the caller's would be made and stopped for nothing on every send. Done
// arms them the first time it is called (a retry's back-off, a route
// read, a context derived from this one); Err and Deadline need neither.
// Until then every method reads an atomic pointer only: a send costs no
// lock for its context.
type sendContext struct {
	context.Context // the caller's
	deadline        time.Time

	mu    sync.Mutex // serializes arming
	armed atomic.Pointer[armedContext]
}

// armedContext is the timer-backed context Done arms.
type armedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// withSendTimeout bounds ctx by the send timeout counted from now,
// returning the send context to stop once the send is over: s, unused
// until then (a send's outgoing holds one, sparing an allocation), or a
// new one when s is nil. When ctx's own deadline comes first, the timeout
// changes nothing and ctx is used as it is (and the send context is nil,
// stopping which does nothing).
func withSendTimeout(ctx context.Context, now time.Time, timeout time.Duration, s *sendContext) (context.Context, *sendContext) {
	dl := now.Add(timeout)
	if cdl, ok := ctx.Deadline(); ok && !cdl.After(dl) {
		return ctx, nil
	}
	if s == nil {
		s = new(sendContext)
	}
	s.Context, s.deadline = ctx, dl
	return s, s
}

func (s *sendContext) Deadline() (time.Time, bool) { return s.deadline, true }

func (s *sendContext) Done() <-chan struct{} {
	if a := s.armed.Load(); a != nil {
		return a.ctx.Done()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.armed.Load()
	if a == nil {
		a = new(armedContext)
		a.ctx, a.cancel = context.WithDeadline(s.Context, s.deadline)
		s.armed.Store(a)
	}
	return a.ctx.Done()
}

func (s *sendContext) Err() error { return s.errAt(time.Now()) }

// errAt is Err with the clock already read.
func (s *sendContext) errAt(now time.Time) error {
	if a := s.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if err := s.Context.Err(); err != nil {
		return err
	}
	if !now.Before(s.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// stop releases the timer, if Done armed one. s may be nil.
func (s *sendContext) stop() {
	if s == nil {
		return
	}
	if a := s.armed.Load(); a != nil {
		a.cancel()
	}
}

// errAt is ctx.Err() for a clock reading of now, which a send context
// uses instead of reading the clock again.
func errAt(ctx context.Context, now time.Time) error {
	if s, ok := ctx.(*sendContext); ok {
		return s.errAt(now)
	}
	return ctx.Err()
}

// callContext returns what a call bounded by ctx is made with: for a
// send context that has no timer yet, the caller's context and the send's
// deadline as an option, which the connection keeps; otherwise ctx as it
// is.
func callContext(ctx context.Context) (context.Context, remoting.CallOptions) {
	if s, ok := ctx.(*sendContext); ok && s.armed.Load() == nil {
		return s.Context, remoting.CallOptions{Deadline: s.deadline}
	}
	return ctx, remoting.CallOptions{}
}

// decodeSendResponse reads a send response's header from the fields a
// call asking for remoting.CallOptions.ExtList gets, as
// protocol.SendMessageResponseHeader.Decode reads them from a map: the
// last value of a repeated key counts, and anything Decode would refuse
// (a field missing or not a number) is handed to Decode for its error.
func decodeSendResponse(resp *remoting.Command, h *protocol.SendMessageResponseHeader) error {
	var msgID, queueID, queueOffset, txID, region, trace, recall, window, dup string
	var seen uint8
	for _, f := range resp.ExtList {
		switch f.Key {
		case "msgId":
			msgID, seen = f.Value, seen|1
		case "queueId":
			queueID, seen = f.Value, seen|2
		case "queueOffset":
			queueOffset, seen = f.Value, seen|4
		case "transactionId":
			txID = f.Value
		case "MSG_REGION":
			region = f.Value
		case "TRACE_ON":
			trace = f.Value
		case protocol.ExtRecallHandle:
			recall = f.Value
		case protocol.ExtDedupWindow:
			window = f.Value
		case protocol.ExtDuplicate:
			dup = f.Value
		}
	}
	qid, err1 := strconv.ParseInt(queueID, 10, 32)
	off, err2 := strconv.ParseInt(queueOffset, 10, 64)
	var win int64
	var err3 error
	if window != "" {
		win, err3 = strconv.ParseInt(window, 10, 64)
	}
	if resp.ExtFields != nil || seen != 7 || err1 != nil || err2 != nil || err3 != nil {
		return h.Decode(resp.ExtMap())
	}
	*h = protocol.SendMessageResponseHeader{
		MsgID: msgID, QueueID: int32(qid), QueueOffset: off, TransactionID: txID, Region: region,
		TraceOn: trace != "" && trace != "false", RecallHandle: recall,
		DedupWindowMs: win, Duplicate: dup == "true",
	}
	return nil
}

// offsetMsgIDs splits a send response's MsgID as
// protocol.SendMessageResponseHeader.MsgIDs does; a single id (every
// send but a batch's) goes into one, the backing array the caller
// provides.
func offsetMsgIDs(h *protocol.SendMessageResponseHeader, one *[1]string) []string {
	if h.MsgID == "" || strings.IndexByte(h.MsgID, ',') >= 0 {
		return h.MsgIDs()
	}
	one[0] = h.MsgID
	return one[:]
}
