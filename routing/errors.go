package routing

import "errors"

// Sentinel errors. Every error this package returns wraps one of these (or
// a remoting or context error) and is meant to be compared with errors.Is.
var (
	// ErrStaleTerm: a registration was refused by leader fencing (I6). Its
	// term (dataVersion.stateVersion) is lower than the term the name
	// server has already recorded for the broker id it claims, for the
	// broker group's leader (id 0), or for the registering address. The
	// name server answers it with code NOT_LEADER_FOR_QUEUE (501), and
	// RegisterBroker turns that code back into this error.
	ErrStaleTerm = errors.New("routing: stale leader term")

	// ErrBadRequest: a request misses a required ext field, or a field
	// has a value the name server cannot use (an unparsable or negative
	// broker id, an address that is not host:port, an empty name).
	ErrBadRequest = errors.New("routing: malformed request")

	// ErrBadBody: a REGISTER_BROKER body is not a RegisterBrokerBody (bad
	// JSON, a truncated or oversized compressed stream, an out-of-range
	// queue count, a topic without a name).
	ErrBadBody = errors.New("routing: malformed register body")

	// ErrBodyCRC: the bodyCrc32 ext field does not match the body.
	ErrBodyCRC = errors.New("routing: body crc32 mismatch")

	// ErrClosed: the Server was closed.
	ErrClosed = errors.New("routing: server closed")
)
