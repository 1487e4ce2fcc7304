package broker

import (
	"context"
	"errors"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// Sentinel errors of the request handlers. Each maps to one response code
// in responseFor; wrap them with %w and a detail, compare with errors.Is.
var (
	// ErrBadRequest: a request header misses a required field or holds a
	// value that does not parse (Java answers a header it cannot decode
	// with SYSTEM_ERROR).
	ErrBadRequest = errors.New("broker: malformed request")
	// ErrInvalidParameter: a well-formed request names something invalid:
	// a queue id outside the topic's queues, an illegal topic name, queue
	// counts out of range.
	ErrInvalidParameter = errors.New("broker: invalid parameter")
	// ErrMessageIllegal: a message the broker will not store: body or
	// properties too long, malformed properties, a malformed batch body.
	ErrMessageIllegal = errors.New("broker: message illegal")
	// ErrTopicNotExist: the topic is unknown and cannot be auto-created.
	ErrTopicNotExist = errors.New("broker: topic does not exist")
	// ErrNoPermission: the topic is not writable.
	ErrNoPermission = errors.New("broker: no permission")
	// ErrNoLeader: this node is not the leader and cannot reach one.
	ErrNoLeader = errors.New("broker: no leader to serve the request")
	// ErrNotFound: a query found no message.
	ErrNotFound = errors.New("broker: not found")
	// ErrSubscriptionParse: a subscription expression does not compile.
	ErrSubscriptionParse = errors.New("broker: subscription expression does not parse")
	// ErrFilterNotSupported: an expression type this broker does not
	// filter by (SQL92 with the property filter off, or an unknown type).
	ErrFilterNotSupported = errors.New("broker: the broker does not support consumer to filter message by")
)

// busyRemark prefixes the remark of SYSTEM_BUSY answers: clients and
// operators recognise RocketMQ's back-off marker.
const busyRemark = "[TOO_MANY_REQUESTS] "

// responseFor is the one table from errors to wire response codes
// (remoting/codes.go). Retried by standard clients on a send: 1, 14, 16, 17.
//
//	error                                        code
//	-------------------------------------------  ------------------------
//	dledger.ErrNotLeader, ErrNotReady, ErrClosed  14 SERVICE_NOT_AVAILABLE
//	dledger.ErrFailed, ErrNoLeader                14 SERVICE_NOT_AVAILABLE
//	store.ErrDiskFull, store.ErrWriteFailed       14 SERVICE_NOT_AVAILABLE
//	dledger.ErrBusy, remoting.ErrBusy             2  SYSTEM_BUSY "[TOO_MANY_REQUESTS]"
//	dledger.ErrOutcomeUnknown, ctx errors         1  SYSTEM_ERROR (client retries)
//	ErrMessageIllegal, store.ErrBadMessage,       13 MESSAGE_ILLEGAL
//	  dledger.ErrTooLarge, message.ErrBadProperties,
//	  message.ErrTopicTooLong, ErrPropertiesTooLong
//	ErrTopicNotExist                             17 TOPIC_NOT_EXIST
//	ErrNoPermission, acl.ErrDenied               16 NO_PERMISSION (remark: what
//	                                               was refused, for whom)
//	ErrInvalidParameter, metadata.ErrBadOp,      29 INVALID_PARAMETER
//	  protocol.ErrBadName (a topic or group name;
//	  a group whose %RETRY% topic would be too long)
//	ErrNotFound                                  22 QUERY_NOT_FOUND
//	ErrSubscriptionParse                         23 SUBSCRIPTION_PARSE_FAILED
//	ErrFilterNotSupported                        1  SYSTEM_ERROR (as Java)
//	ErrBadRequest, remoting.ErrBadHeader,        1  SYSTEM_ERROR
//	  remoting.ErrMissingField, anything else
//
// Safe for concurrent use; the consumer side calls it too.
func responseFor(err error) (code int32, remark string) {
	if err == nil {
		return remoting.Success, ""
	}
	remark = err.Error()
	switch {
	case errors.Is(err, dledger.ErrBusy), errors.Is(err, remoting.ErrBusy):
		return remoting.SystemBusy, busyRemark + remark
	case errors.Is(err, store.ErrDiskFull):
		return remoting.ServiceNotAvailable, "service not available now: the broker's disk is full (" + remark + ")"
	case errors.Is(err, dledger.ErrNotLeader), errors.Is(err, dledger.ErrNotReady),
		errors.Is(err, dledger.ErrClosed), errors.Is(err, dledger.ErrFailed),
		errors.Is(err, store.ErrWriteFailed), errors.Is(err, store.ErrClosed),
		errors.Is(err, ErrNoLeader):
		return remoting.ServiceNotAvailable, "service not available now: " + remark
	case errors.Is(err, dledger.ErrOutcomeUnknown),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return remoting.SystemError, remark
	case errors.Is(err, ErrMessageIllegal), errors.Is(err, store.ErrBadMessage),
		errors.Is(err, dledger.ErrTooLarge), errors.Is(err, store.ErrBatchTooLarge),
		errors.Is(err, message.ErrBadProperties), errors.Is(err, message.ErrTopicTooLong),
		errors.Is(err, message.ErrPropertiesTooLong), errors.Is(err, message.ErrEmptyTopic):
		return remoting.MessageIllegal, remark
	case errors.Is(err, ErrTopicNotExist):
		return remoting.TopicNotExist, remark
	case errors.Is(err, ErrNoPermission), errors.Is(err, acl.ErrDenied):
		return remoting.NoPermission, remark
	case errors.Is(err, ErrInvalidParameter), errors.Is(err, metadata.ErrBadOp), errors.Is(err, protocol.ErrBadName):
		return remoting.InvalidParameter, remark
	case errors.Is(err, ErrNotFound):
		return remoting.QueryNotFound, remark
	case errors.Is(err, ErrSubscriptionParse):
		return remoting.SubscriptionParseFailed, remark
	}
	return remoting.SystemError, remark
}

// errorResponse answers req with the code responseFor gives err.
func errorResponse(req *remoting.Command, err error) *remoting.Command {
	code, remark := responseFor(err)
	return remoting.NewResponse(req, code, remark)
}
