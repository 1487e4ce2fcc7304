package faultnet

import (
	"errors"
	"net"
	"syscall"
)

// Sentinel errors. Callers compare with errors.Is; every error returned by
// this package wraps exactly one of these (connection errors caused by a
// fault additionally wrap the reason and net.ErrClosed, see cutError).
var (
	// ErrClosed is returned by a Layer after Close and by a Network after
	// Close.
	ErrClosed = errors.New("faultnet: closed")

	// ErrKilled is the reason attached to everything a Kill tore down: the
	// killed Layer's Accept and Dial, and connections to or from the node.
	// A connection end a Kill cut also matches syscall.ECONNRESET, as the
	// peer of a killed process sees its connections reset.
	ErrKilled = errors.New("faultnet: node killed")

	// ErrUnreachable is returned by Dial when a fault (partition, isolation
	// or one-way block) forbids the connection, and is the reason attached
	// to connections such a fault cut.
	ErrUnreachable = errors.New("faultnet: peer unreachable")

	// ErrCut is wrapped by every Read/Write error on a connection that the
	// Network closed because of a fault or because an end's node went down.
	ErrCut = errors.New("faultnet: connection cut")

	// ErrNodeDown is returned by Dial when the address belongs to a node
	// whose Layer is closed or killed (such a Dial's error also matches
	// syscall.ECONNREFUSED, as a dial to a port nothing listens on does),
	// and by Kill for such a node.
	ErrNodeDown = errors.New("faultnet: node is down")

	// ErrUnknownAddress is returned by Dial for an address no node of this
	// Network ever listened on.
	ErrUnknownAddress = errors.New("faultnet: unknown address")

	// ErrUnknownNode is returned by Kill for a node id never seen.
	ErrUnknownNode = errors.New("faultnet: unknown node")

	// ErrNodeExists is returned by Listen when the node id already has a
	// live Layer.
	ErrNodeExists = errors.New("faultnet: node already listening")

	// ErrAddressTaken is returned by Listen when the address is held by a
	// live Layer of another node.
	ErrAddressTaken = errors.New("faultnet: address belongs to another node")

	// ErrInvalidID is returned for a node id that is empty, longer than
	// MaxIDLen bytes, or not valid UTF-8.
	ErrInvalidID = errors.New("faultnet: invalid node id")

	// ErrNotLoopback is returned by Listen for an address that is not a
	// loopback IP (or "localhost") with an explicit host.
	ErrNotLoopback = errors.New("faultnet: address is not loopback")

	// ErrBadPreamble is returned by the preamble decoder for bytes that are
	// not a well-formed preamble.
	ErrBadPreamble = errors.New("faultnet: bad connection preamble")

	// ErrBadPartition is returned by Partition when a node id appears in
	// more than one group or is invalid.
	ErrBadPartition = errors.New("faultnet: bad partition")

	// ErrBadDelay is returned by SetDelay for a negative delay or one above
	// MaxDelay.
	ErrBadDelay = errors.New("faultnet: bad delay")
)

// cutError is the error a connection returns once the Network cut it. It
// matches ErrCut, the reason (ErrUnreachable, ErrKilled or ErrClosed) and
// net.ErrClosed, so generic "connection closed" checks keep working.
type cutError struct {
	reason error
}

func (e *cutError) Error() string {
	return ErrCut.Error() + ": " + e.reason.Error()
}

func (e *cutError) Unwrap() []error {
	if errors.Is(e.reason, ErrKilled) {
		return []error{ErrCut, e.reason, net.ErrClosed, syscall.ECONNRESET}
	}
	return []error{ErrCut, e.reason, net.ErrClosed}
}
