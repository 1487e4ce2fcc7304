package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// Sentinel errors. Compare with errors.Is; every error a send returns is a
// *SendError that matches exactly one of ErrSendFailed and
// ErrUnknownOutcome, plus the cause.
var (
	// ErrSendFailed: the message was certainly not stored: no attempt
	// reached a broker (dial failed, no route), or every broker that was
	// reached refused it before storing (an error code such as
	// SERVICE_NOT_AVAILABLE from a follower, MESSAGE_ILLEGAL, SYSTEM_BUSY).
	ErrSendFailed = errors.New("client: send failed, the message was not stored")
	// ErrUnknownOutcome: the message may have been stored, once or (after
	// retries) more than once: an attempt timed out or lost its
	// connection after the request was written, or the broker answered
	// SYSTEM_ERROR (a replication outcome it does not know).
	ErrUnknownOutcome = errors.New("client: send outcome unknown, the message may have been stored")

	// ErrNoRoute: the name servers know no writable queue for the topic
	// (also no TBW102 route to auto-create it from), or none has had a
	// leader for as long as the send could wait.
	ErrNoRoute = errors.New("client: no route to a writable queue")
	// ErrInvalidMessage: the message cannot be sent as it is (topic name,
	// empty or oversized body, properties with separator bytes, a batch
	// mixing topics); nothing went on the wire.
	ErrInvalidMessage = errors.New("client: invalid message")
	// ErrClosed: the client was closed before the call.
	ErrClosed = errors.New("client: closed")
	// ErrConfig: an option is missing or out of range.
	ErrConfig = errors.New("client: bad configuration")
)

// Outcome classifies what a send did to the broker's store.
type Outcome int

const (
	// OutcomeOK: stored and acknowledged.
	OutcomeOK Outcome = iota
	// OutcomeFailed: certainly not stored.
	OutcomeFailed
	// OutcomeUnknown: may have been stored.
	OutcomeUnknown
)

func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeFailed:
		return "failed"
	case OutcomeUnknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// OutcomeOf classifies the error of a send: nil is OutcomeOK, an error
// matching ErrUnknownOutcome is OutcomeUnknown, anything else
// OutcomeFailed (including ErrInvalidMessage and ErrClosed, returned
// before anything was sent).
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrUnknownOutcome):
		return OutcomeUnknown
	}
	return OutcomeFailed
}

// Attempt is one try of a send on the wire: where it went and how it
// ended.
type Attempt struct {
	Queue   Queue
	Addr    string // the broker address dialled
	Outcome Outcome
	// Err is why the attempt failed (nil when it succeeded): a
	// *BrokerError for an error code, or a transport error (dial, timeout,
	// connection lost; remoting's sentinels match with errors.Is).
	Err     error
	Latency time.Duration
	// Start is when the attempt began, on the client's clock (with its
	// monotonic reading): SendResult.MaybeDuplicated compares it with the
	// start of the attempt that stored the message.
	Start time.Time
}

// BrokerError is a send answered with an error code.
type BrokerError struct {
	Code   int32
	Remark string
	Addr   string
}

func (e *BrokerError) Error() string {
	return fmt.Sprintf("broker %s answered %s (%d): %s", e.Addr, remoting.ResponseCodeName(e.Code), e.Code, e.Remark)
}

// SendError is the error of every failed send: the outcome, each attempt
// made, and the final cause.
type SendError struct {
	Topic   string
	Outcome Outcome // OutcomeFailed or OutcomeUnknown
	// Attempts lists every attempt on the wire in order (none when the
	// send failed before reaching a broker, e.g. without a route). The
	// outcome is unknown as soon as one attempt's outcome is.
	Attempts []Attempt
	// Err is the cause: the last attempt's error, or why no further
	// attempt could be made (ErrNoRoute, the context's error).
	Err error
}

func (e *SendError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: send to topic %s", e.Topic)
	if e.Outcome == OutcomeUnknown {
		b.WriteString(": outcome unknown (may have been stored)")
	} else {
		b.WriteString(": failed (not stored)")
	}
	if n := len(e.Attempts); n > 0 {
		fmt.Fprintf(&b, " after %d attempt(s)", n)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap makes errors.Is see the outcome's sentinel and the cause.
func (e *SendError) Unwrap() []error {
	s := ErrSendFailed
	if e.Outcome == OutcomeUnknown {
		s = ErrUnknownOutcome
	}
	return []error{s, e.Err}
}

// unknownAmong reports whether one of as had an unknown outcome.
func unknownAmong(as []Attempt) bool {
	for _, a := range as {
		if a.Outcome == OutcomeUnknown {
			return true
		}
	}
	return false
}
