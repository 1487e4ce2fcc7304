package grpcapi

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/remoting"
)

// The answers' Status: the protocol reports outcomes in the response body
// (Status.code, HTTP-like numbers times 100), not as gRPC errors, and the
// clients read them there.

func okStatus() *v2pb.Status { return &v2pb.Status{Code: v2pb.Code_OK, Message: "OK"} }

func newStatus(code v2pb.Code, format string, args ...any) *v2pb.Status {
	return &v2pb.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}

// statusOf maps a remoting response to a Status. SERVICE_NOT_AVAILABLE
// (no writable leader for a moment) and SYSTEM_BUSY are codes the clients
// retry; a stored-but-warned code (flush or replica timeout) is OK, as
// the remoting clients treat it.
func statusOf(resp *remoting.Command) *v2pb.Status {
	if resp == nil {
		return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "no answer")
	}
	var code v2pb.Code
	switch resp.Code {
	case remoting.Success:
		return okStatus()
	case remoting.SystemBusy:
		code = v2pb.Code_TOO_MANY_REQUESTS
	case remoting.ServiceNotAvailable:
		code = v2pb.Code_INTERNAL_SERVER_ERROR
	case remoting.MessageIllegal, remoting.InvalidParameter:
		code = v2pb.Code_BAD_REQUEST
	case remoting.TopicNotExist:
		code = v2pb.Code_TOPIC_NOT_FOUND
	case remoting.NoPermission:
		code = v2pb.Code_FORBIDDEN
	case remoting.QueryNotFound:
		code = v2pb.Code_NOT_FOUND
	case remoting.SubscriptionGroupNotExist:
		code = v2pb.Code_CONSUMER_GROUP_NOT_FOUND
	case remoting.SubscriptionParseFailed:
		code = v2pb.Code_ILLEGAL_FILTER_EXPRESSION
	case remoting.RequestCodeNotSupported:
		code = v2pb.Code_NOT_IMPLEMENTED
	case remoting.SystemError:
		code = v2pb.Code_INTERNAL_ERROR
	default:
		code = v2pb.Code_INTERNAL_SERVER_ERROR
	}
	return newStatus(code, "%s: %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
}

// notServed is the Status of a method this port does not serve yet.
func notServed(method string) *v2pb.Status {
	return newStatus(v2pb.Code_NOT_IMPLEMENTED, "%s is not served by this broker yet (the gRPC port serves producers, POP and pull consumers)", method)
}

// The rest (lite topics): NOT_IMPLEMENTED, answered at once.

func (s *Server) SyncLiteSubscription(context.Context, *v2pb.SyncLiteSubscriptionRequest) (*v2pb.SyncLiteSubscriptionResponse, error) {
	return &v2pb.SyncLiteSubscriptionResponse{Status: notServed("SyncLiteSubscription")}, nil
}

// NotifyClientTermination acknowledges.
func (s *Server) NotifyClientTermination(context.Context, *v2pb.NotifyClientTerminationRequest) (*v2pb.NotifyClientTerminationResponse, error) {
	return &v2pb.NotifyClientTerminationResponse{Status: okStatus()}, nil
}
