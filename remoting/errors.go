package remoting

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of these
// (or a network or context error) and is meant to be compared with errors.Is.
var (
	// ErrFrameTooLarge: a length prefix announces, or an encoded command
	// would need, more than the configured maximum frame size. It is
	// detected before any buffer of that size is allocated.
	ErrFrameTooLarge = errors.New("remoting: frame too large")

	// ErrBadFrame: the frame cannot be split into header and body (shorter
	// than the 4-byte header-length word, a header length past the end of
	// the frame, a negative length prefix) or its serialize-type byte is
	// neither 0 (JSON) nor 1 (ROCKETMQ). The stream is unsynchronised after
	// it, so a connection that reads one is closed.
	ErrBadFrame = errors.New("remoting: malformed frame")

	// ErrBadHeader: the header bytes are not a valid header of their type
	// (malformed JSON, a field of the wrong JSON type, a number out of range
	// for its field, a binary length that is negative or runs past the
	// header) or an ext field a handler needs has an unparsable value.
	ErrBadHeader = errors.New("remoting: malformed header")

	// ErrMissingField: ExtString, ExtInt or ExtBool did not find the key.
	ErrMissingField = errors.New("remoting: missing ext field")

	// ErrConnClosed: the connection closed (by either side, by an I/O error
	// or by the idle timeout) before the call completed, or a write was
	// attempted on a closed connection. Calls pending on a connection fail
	// with it as soon as the connection dies.
	ErrConnClosed = errors.New("remoting: connection closed")

	// ErrConnSilent: a client closed its connection because a call on it
	// timed out while nothing at all was read from it for the call's
	// whole wait, neither its response nor any other frame: a peer gone
	// without a FIN or a RST (a host lost, a pod rescheduled under a new
	// address) whose connection would otherwise stay open until the
	// kernel gave up retransmitting, every call on it timing out in turn.
	// The calls pending on it then fail at once with ErrConnClosed
	// wrapping ErrConnSilent, and the next call dials afresh. The call
	// that timed out fails with ErrTimeout as usual. A connection on
	// which anything is read while a call waits is never closed so.
	ErrConnSilent = errors.New("remoting: connection silent")

	// ErrTimeout: the caller's context deadline passed before the response
	// arrived. Errors that wrap it also wrap context.DeadlineExceeded.
	ErrTimeout = errors.New("remoting: request timed out")

	// ErrClosed: the Server or Client has been closed.
	ErrClosed = errors.New("remoting: closed")

	// ErrStalled: a peer did not deliver a frame it had begun in time
	// (Limits.FrameTimeout and MinReadRate), or went silent inside one
	// while the read budget was short (Limits.StallGrace); the server
	// closed its connection.
	ErrStalled = errors.New("remoting: peer stalled inside a frame")

	// ErrBusy: a worker pool's queue is full. The server answers such a
	// request with SystemBusy; a CodeError with code SystemBusy matches it.
	ErrBusy = errors.New("remoting: too many requests")
)

// CodeError is a response whose code the caller did not accept (see
// CheckResponse). It matches ErrBusy when the code is SystemBusy.
type CodeError struct {
	Code   int32
	Remark string
}

// Error formats the error the way RocketMQ clients do ("CODE: n, DESC: …").
func (e *CodeError) Error() string {
	return fmt.Sprintf("remoting: CODE: %d (%s), DESC: %s", e.Code, ResponseCodeName(e.Code), e.Remark)
}

// Is reports whether target is ErrBusy and the code is SystemBusy.
func (e *CodeError) Is(target error) bool {
	return target == ErrBusy && e.Code == SystemBusy
}

// CheckResponse returns nil when resp.Code is one of accept (Success when
// accept is empty) and a *CodeError otherwise. A nil resp is an
// ErrBadHeader error.
func CheckResponse(resp *Command, accept ...int32) error {
	if resp == nil {
		return fmt.Errorf("%w: nil response", ErrBadHeader)
	}
	if len(accept) == 0 {
		if resp.Code == Success {
			return nil
		}
	}
	for _, code := range accept {
		if resp.Code == code {
			return nil
		}
	}
	return &CodeError{Code: resp.Code, Remark: resp.Remark}
}

// contextError turns a finished context into the error a call returns: a
// passed deadline becomes ErrTimeout (also matching
// context.DeadlineExceeded), a cancellation stays context.Canceled.
func contextError(ctx context.Context, what string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s: %w", ErrTimeout, what, err)
	}
	return fmt.Errorf("remoting: %s: %w", what, err)
}
