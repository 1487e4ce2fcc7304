package grpcapi

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// CallObserver hears every call the server answers (metrics, Config.
// Observer): the method's name ("SendMessage"), the gRPC status code of
// the call ("OK", "Unauthenticated"), the RocketMQ status code its answer
// carried (v2pb.Code's name: "OK", "MESSAGE_NOT_FOUND"; the first a stream
// sent; "" when none) and how long the call took (a stream: until it
// ended). It is called on the call's goroutine once the call ends, and
// must not block.
type CallObserver interface {
	Call(method, grpcCode, code string, took time.Duration)
}

// answerStatus is the RocketMQ status an answer carries, nil when none.
func answerStatus(resp any) *v2pb.Status {
	if r, ok := resp.(interface{ GetStatus() *v2pb.Status }); ok {
		return r.GetStatus()
	}
	return nil
}

func codeName(st *v2pb.Status) string {
	if st == nil {
		return ""
	}
	return st.GetCode().String()
}

// unaryObserve reports each unary call to Config.Observer; it is the
// outermost interceptor, so refusals by the ACL are counted too.
func (s *Server) unaryObserve(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	s.cfg.Observer.Call(methodName(info.FullMethod), grpcstatus.Code(err).String(), codeName(answerStatus(resp)), time.Since(start))
	return resp, err
}

// streamObserve reports each stream to Config.Observer when it ends, with
// the first RocketMQ status it sent.
func (s *Server) streamObserve(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	obs := &observedStream{ServerStream: ss}
	err := handler(srv, obs)
	s.cfg.Observer.Call(methodName(info.FullMethod), grpcstatus.Code(err).String(), codeName(obs.first()), time.Since(start))
	return err
}

// observedStream keeps the first RocketMQ status a stream sends (a
// telemetry stream's handler and its reader may both send).
type observedStream struct {
	grpc.ServerStream
	mu     sync.Mutex
	status *v2pb.Status
}

func (o *observedStream) SendMsg(m any) error {
	if st := answerStatus(m); st != nil {
		o.mu.Lock()
		if o.status == nil {
			o.status = st
		}
		o.mu.Unlock()
	}
	return o.ServerStream.SendMsg(m)
}

func (o *observedStream) first() *v2pb.Status {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status
}
