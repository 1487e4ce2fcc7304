package grpcapi

// Access control of the gRPC port (Config.Access): every call is
// authenticated by the RocketMQ 5 request signature, then authorized by
// the broker's ACL as the remoting requests it amounts to.
//
// The signature (rocketmq-clients' transport: Java's Signature, the Node
// SDK's getRequestMetadata) is two metadata entries of every call:
//
//	x-mq-date-time: 20240102T030405Z                (UTC, yyyyMMdd'T'HHmmss'Z')
//	authorization:  MQv2-HMAC-SHA1 Credential=<AccessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>
//
// where the signature is HMAC-SHA1 keyed with the account's secret key
// over the x-mq-date-time value, in hexadecimal (the clients write upper
// case; either case is accepted). As RocketMQ's proxy, the time is not
// checked against the clock: the signature proves the secret key, and
// TLS keeps it from being replayed by an eavesdropper.

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the clients' algorithm
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/remoting"
)

// Access checks the calls of the gRPC port (*broker.Broker implements it,
// broker/frontacl.go).
type Access interface {
	// Authenticate settles who a call from peer comes from: the account
	// of accessKey, whose secret key check verifies the signature with
	// (or a white-listed address). The returned context carries the
	// identity.
	Authenticate(ctx context.Context, peer netip.AddrPort, accessKey, code string, check func(secretKey string) error) (context.Context, error)
	// Authorize checks a remoting request the call amounts to for the
	// identity in ctx; nil needs the identity only. An error wrapping
	// broker.ErrUnauthenticated means no identity.
	Authorize(ctx context.Context, req *remoting.Command) error
	// NodeRelaySignature is the node's signature, with the group's
	// cluster secret, of the statement that a call relayed at dateTime
	// is for a client at relayedFor (relayauth.go); false when there is
	// no secret to sign with (no broker node, or no ClusterSecret).
	NodeRelaySignature(dateTime, relayedFor string) ([]byte, bool)
}

// Metadata keys of the signature.
const (
	mdAuthorization = "authorization"
	mdDateTime      = "x-mq-date-time"
	authAlgorithm   = "MQv2-HMAC-SHA1"
)

// authHeader is a parsed authorization entry.
type authHeader struct {
	AccessKey     string
	SignedHeaders []string
	Signature     []byte
}

// maxAuthHeader bounds the authorization entry parsed.
const maxAuthHeader = 4096

// parseAuthorization reads "MQv2-HMAC-SHA1 Credential=AK,
// SignedHeaders=x-mq-date-time, Signature=HEX". The parts after the
// algorithm are comma-separated key=value pairs in any order; Credential
// may carry a scope after a slash (only the access key, before it, is
// kept); the signature is hexadecimal of a SHA-1 HMAC (20 bytes).
func parseAuthorization(v string) (authHeader, error) {
	return parseSigned(v, mdDateTime)
}

// parseSigned is parseAuthorization of an entry whose SignedHeaders must
// name every header of signed.
func parseSigned(v string, signed ...string) (authHeader, error) {
	return parseSignedWith(v, authAlgorithm, sha1.Size, signed...)
}

// parseSignedWith is parseSigned of an entry of algorithm alg whose
// signature is sigLen bytes.
func parseSignedWith(v, alg string, sigLen int, signed ...string) (authHeader, error) {
	var h authHeader
	if len(v) > maxAuthHeader {
		return h, fmt.Errorf("authorization of %d bytes", len(v))
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), alg)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return h, fmt.Errorf("authorization is not %s", alg)
	}
	var sawCred, sawSig bool
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return h, fmt.Errorf("authorization part %q is not key=value", part)
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(k) {
		case "Credential":
			ak, _, _ := strings.Cut(val, "/")
			h.AccessKey, sawCred = ak, true
		case "SignedHeaders":
			h.SignedHeaders = strings.Split(val, ";")
		case "Signature":
			sig, err := hex.DecodeString(val)
			if err != nil || len(sig) != sigLen {
				return h, fmt.Errorf("authorization Signature is not the hex of a %d-byte HMAC", sigLen)
			}
			h.Signature, sawSig = sig, true
		}
	}
	switch {
	case !sawCred || h.AccessKey == "":
		return h, errors.New("authorization names no Credential")
	case !sawSig:
		return h, errors.New("authorization has no Signature")
	}
	for _, want := range signed {
		found := false
		for _, s := range h.SignedHeaders {
			if strings.EqualFold(strings.TrimSpace(s), want) {
				found = true
				break
			}
		}
		if !found {
			return h, fmt.Errorf("authorization does not sign %s", want)
		}
	}
	return h, nil
}

// sign is the signature of dateTime with secretKey.
func sign(secretKey, dateTime string) []byte {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write([]byte(dateTime))
	return mac.Sum(nil)
}

// methodName is the last element of a full gRPC method name.
func methodName(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// authenticate checks the call's signature (with Config.Access set) and
// returns the context carrying its identity.
func (s *Server) authenticate(ctx context.Context, fullMethod string) (context.Context, *v2pb.Status) {
	md, _ := metadata.FromIncomingContext(ctx)
	var accessKey string
	var sig []byte
	var dateTime string
	var parseErr error
	if v := md.Get(mdAuthorization); len(v) > 0 {
		h, err := parseAuthorization(v[0])
		accessKey, sig, parseErr = h.AccessKey, h.Signature, err
	}
	if v := md.Get(mdDateTime); len(v) > 0 {
		dateTime = v[0]
	}
	check := func(secretKey string) error {
		switch {
		case parseErr != nil:
			return parseErr
		case dateTime == "":
			return fmt.Errorf("no %s", mdDateTime)
		case !hmac.Equal(sig, sign(secretKey, dateTime)):
			return errors.New("signature does not match")
		}
		return nil
	}
	// A call relayed by a proxy or a node of the group is checked as from
	// the client's address the relay vouches for (relayauth.go), else
	// from its connection's.
	from, err := s.callerAddr(ctx, md, fullMethod)
	if err != nil {
		s.log.Info("gRPC call refused", "peer", peerOf(ctx), "method", methodName(fullMethod), "error", err)
		return ctx, newStatus(v2pb.Code_UNAUTHORIZED, "%v", err)
	}
	actx, err := s.cfg.Access.Authenticate(ctx, from, accessKey, methodName(fullMethod), check)
	if err != nil {
		if parseErr != nil && accessKey == "" {
			err = fmt.Errorf("%w (%w)", err, parseErr)
		}
		s.log.Info("gRPC call refused", "peer", peerOf(ctx), "method", methodName(fullMethod), "error", err)
		return ctx, newStatus(v2pb.Code_UNAUTHORIZED, "%v", err)
	}
	return context.WithValue(actx, checkedFromKey{}, from), nil
}

// authorize checks what a request amounts to (callRequests).
func (s *Server) authorize(ctx context.Context, fullMethod string, req any) *v2pb.Status {
	reqs := callRequests(req)
	if len(reqs) == 0 {
		reqs = []*remoting.Command{nil}
	}
	for _, r := range reqs {
		if err := s.cfg.Access.Authorize(ctx, r); err != nil {
			s.log.Info("gRPC call refused", "peer", peerOf(ctx), "method", methodName(fullMethod), "error", err)
			if errors.Is(err, broker.ErrUnauthenticated) {
				return newStatus(v2pb.Code_UNAUTHORIZED, "%v", err)
			}
			return newStatus(v2pb.Code_FORBIDDEN, "%v", err)
		}
	}
	return nil
}

// extRequest is a remoting request of code with ext fields kv (pairs).
func extRequest(code int32, kv ...string) *remoting.Command {
	ext := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	return &remoting.Command{Code: code, ExtFields: ext}
}

// consumeRequest is what a consumer's call on group and topic amounts to:
// a pull (SUB on the group and the topic).
func consumeRequest(group, topic *v2pb.Resource) *remoting.Command {
	return extRequest(remoting.PullMessage, "consumerGroup", group.GetName(), "topic", topic.GetName())
}

// callRequests are the remoting requests a call amounts to for the ACL,
// as RocketMQ's plain ACL reads gRPC calls: a send is SEND_MESSAGE_V2 of
// each topic (PUB); a receive, ack, invisible-time change, forward to the
// dead-letter queue, assignment query or pull a pull of the group and
// topic (SUB on both); an offset update or read of the group
// UPDATE_CONSUMER_OFFSET or QUERY_CONSUMER_OFFSET (SUB on both); a query
// of a queue's offset GET_MIN_OFFSET, GET_MAX_OFFSET or
// SEARCH_OFFSET_BY_TIMESTAMP (SUB on the topic); an end of transaction
// END_TRANSACTION (PUB on the topic); a heartbeat or termination naming a group SUB on it; the
// telemetry settings PUB on each publishing topic, SUB on the
// subscription's group and topics. Anything else (routes) needs only a
// valid signature.
func callRequests(req any) []*remoting.Command {
	switch r := req.(type) {
	case *v2pb.SendMessageRequest:
		var out []*remoting.Command
		seen := map[string]bool{}
		for _, m := range r.GetMessages() {
			t := m.GetTopic().GetName()
			if !seen[t] {
				seen[t] = true
				out = append(out, extRequest(remoting.SendMessageV2, "b", t))
			}
		}
		return out
	case *v2pb.ReceiveMessageRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetMessageQueue().GetTopic())}
	case *v2pb.AckMessageRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetTopic())}
	case *v2pb.ChangeInvisibleDurationRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetTopic())}
	case *v2pb.ForwardMessageToDeadLetterQueueRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetTopic())}
	case *v2pb.QueryAssignmentRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetTopic())}
	case *v2pb.EndTransactionRequest:
		return []*remoting.Command{extRequest(remoting.EndTransaction, "topic", r.GetTopic().GetName())}
	case *v2pb.RecallMessageRequest:
		return []*remoting.Command{extRequest(remoting.RecallMessage, "topic", r.GetTopic().GetName())}
	case *v2pb.PullMessageRequest:
		return []*remoting.Command{consumeRequest(r.GetGroup(), r.GetMessageQueue().GetTopic())}
	case *v2pb.UpdateOffsetRequest:
		return []*remoting.Command{extRequest(remoting.UpdateConsumerOffset,
			"consumerGroup", r.GetGroup().GetName(), "topic", r.GetMessageQueue().GetTopic().GetName())}
	case *v2pb.GetOffsetRequest:
		return []*remoting.Command{extRequest(remoting.QueryConsumerOffset,
			"consumerGroup", r.GetGroup().GetName(), "topic", r.GetMessageQueue().GetTopic().GetName())}
	case *v2pb.QueryOffsetRequest:
		code := remoting.GetMinOffset
		switch r.GetQueryOffsetPolicy() {
		case v2pb.QueryOffsetPolicy_END:
			code = remoting.GetMaxOffset
		case v2pb.QueryOffsetPolicy_TIMESTAMP:
			code = remoting.SearchOffsetByTimestamp
		}
		return []*remoting.Command{extRequest(code, "topic", r.GetMessageQueue().GetTopic().GetName())}
	case *v2pb.HeartbeatRequest:
		if r.GetGroup().GetName() != "" {
			return []*remoting.Command{extRequest(remoting.GetConsumerListByGroup, "consumerGroup", r.GetGroup().GetName())}
		}
	case *v2pb.NotifyClientTerminationRequest:
		if r.GetGroup().GetName() != "" {
			return []*remoting.Command{extRequest(remoting.UnregisterClient, "consumerGroup", r.GetGroup().GetName())}
		}
	case *v2pb.TelemetryCommand:
		st := r.GetSettings()
		var out []*remoting.Command
		for _, t := range st.GetPublishing().GetTopics() {
			out = append(out, extRequest(remoting.SendMessageV2, "b", t.GetName()))
		}
		if sub := st.GetSubscription(); sub != nil {
			out = append(out, extRequest(remoting.GetConsumerListByGroup, "consumerGroup", sub.GetGroup().GetName()))
			for _, e := range sub.GetSubscriptions() {
				out = append(out, consumeRequest(sub.GetGroup(), e.GetTopic()))
			}
		}
		return out
	}
	return nil
}

// refusal is the response of a unary method carrying st: every response
// of the service has a status field.
func refusal(fullMethod string, st *v2pb.Status) (any, error) {
	svc := v2pb.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	m := svc.Methods().ByName(protoreflect.Name(methodName(fullMethod)))
	if m == nil {
		return nil, grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName())
	if err != nil {
		return nil, grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
	}
	resp := mt.New()
	fd := resp.Descriptor().Fields().ByName("status")
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != st.ProtoReflect().Descriptor().FullName() {
		return nil, grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
	}
	resp.Set(fd, protoreflect.ValueOfMessage(st.ProtoReflect()))
	return resp.Interface(), nil
}

// unaryAccess is the unary interceptor of Config.Access.
func (s *Server) unaryAccess(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	actx, st := s.authenticate(ctx, info.FullMethod)
	if st == nil {
		st = s.authorize(actx, info.FullMethod, req)
	}
	if st != nil {
		return refusal(info.FullMethod, st)
	}
	return handler(actx, req)
}

// errRefused ends a stream whose request the ACL refused after the
// refusal was sent.
var errRefused = errors.New("grpcapi: refused by the ACL")

// accessStream checks each message received (receive and pull requests,
// telemetry settings) for the identity in its context.
type accessStream struct {
	grpc.ServerStream
	s          *Server
	ctx        context.Context
	fullMethod string
	refused    bool
}

func (a *accessStream) Context() context.Context { return a.ctx }

func (a *accessStream) RecvMsg(m any) error {
	if err := a.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	st := a.s.authorize(a.ctx, a.fullMethod, m)
	if st == nil {
		return nil
	}
	if resp := streamRefusal(methodName(a.fullMethod), st); resp != nil {
		// The only message of the call: the refusal is its answer.
		a.refused = true
		if err := a.ServerStream.SendMsg(resp); err != nil {
			return err
		}
		return errRefused
	}
	// Telemetry: the handler may be writing; the stream ends with the
	// refusal as its status.
	c := codes.PermissionDenied
	if st.GetCode() == v2pb.Code_UNAUTHORIZED {
		c = codes.Unauthenticated
	}
	return grpcstatus.Error(c, st.GetMessage())
}

// streamRefusal is the answer refusing a call of a server-streaming
// method (one request, answers led by a Status) with st, nil for another
// method.
func streamRefusal(method string, st *v2pb.Status) any {
	switch method {
	case "ReceiveMessage":
		return &v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: st}}
	case "PullMessage":
		return &v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Status{Status: st}}
	}
	return nil
}

// streamAccess is the stream interceptor of Config.Access.
func (s *Server) streamAccess(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	actx, st := s.authenticate(ss.Context(), info.FullMethod)
	if st != nil {
		if resp := streamRefusal(methodName(info.FullMethod), st); resp != nil {
			return ss.SendMsg(resp)
		}
		if methodName(info.FullMethod) == "Telemetry" {
			if err := ss.SendMsg(&v2pb.TelemetryCommand{Status: st}); err != nil {
				return err
			}
		}
		return grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
	}
	as := &accessStream{ServerStream: ss, s: s, ctx: actx, fullMethod: info.FullMethod}
	err := handler(srv, as)
	if as.refused && errors.Is(err, errRefused) {
		return nil
	}
	return err
}
