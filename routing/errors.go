package routing

import (
	"errors"

	"github.com/ledgermq/ledgermq/protocol"
)

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
	// queue count, a topic without a name). It is protocol.ErrBadBody:
	// protocol decodes the body.
	ErrBadBody = protocol.ErrBadBody

	// ErrBodyCRC: the bodyCrc32 ext field does not match the body.
	ErrBodyCRC = errors.New("routing: body crc32 mismatch")

	// ErrNotRegistrant: an UNREGISTER_BROKER arrived on a connection the
	// member never registered on and is not signed with the cluster
	// secret. The name server answers NO_PERMISSION (16) and keeps the
	// member.
	ErrNotRegistrant = errors.New("routing: unregister from a connection that did not register the broker")

	// ErrUnauthenticated: the name server has a cluster secret and a
	// REGISTER_BROKER or UNREGISTER_BROKER is unsigned, wrongly signed,
	// stale or replayed (it wraps the auth package's error), or its ACL
	// refused the request. Answered NO_PERMISSION (16); RegisterBroker
	// turns that code back into this error.
	ErrUnauthenticated = errors.New("routing: registration not signed with the cluster secret or an account of the ACL")

	// ErrBusy: too many registrations are waiting for their node's
	// confirmation (MaxPendingClaims). Answered SYSTEM_BUSY (2).
	ErrBusy = errors.New("routing: too many registrations awaiting confirmation")

	// ErrClaimRefused: the node a registration names does not confirm it
	// (another group, another role, an older term) or cannot be asked.
	// The registration is dropped and logged; the registrant learns of it
	// only by its absence from routes.
	ErrClaimRefused = errors.New("routing: claim not confirmed by the claimed node")

	// ErrClosed: the Server was closed.
	ErrClosed = errors.New("routing: server closed")
)
