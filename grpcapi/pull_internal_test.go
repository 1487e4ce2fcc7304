package grpcapi

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// answeringBackend serves one broker group, broker-a, with two queues of
// every topic, and answers each request with answer (recording it).
type answeringBackend struct {
	backend // what the tests below do not call
	answer  func(req *remoting.Command) *remoting.Command

	mu   sync.Mutex
	reqs []*remoting.Command
}

func (a *answeringBackend) routes(context.Context, string) ([]groupRoute, error) {
	return []groupRoute{gr("broker-a", 2, 2, metadata.PermRead|metadata.PermWrite)}, nil
}

func (a *answeringBackend) serve(_ context.Context, _ netip.AddrPort, _, _ string, req *remoting.Command) *remoting.Command {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	return a.answer(req)
}

func testServer(be backend) *Server {
	return &Server{be: be, log: hclog.NewNullLogger(), stopCtx: context.Background()}
}

func pullAnswerOf(req *remoting.Command, code int32, next int64) *remoting.Command {
	r := remoting.NewResponse(req, code, "")
	h := protocol.PullMessageResponseHeader{NextBeginOffset: next, MaxOffset: next}
	r.ExtFields = h.Encode()
	return r
}

// TestGetOffsetNotFound: the broker's QUERY_NOT_FOUND (a group with no
// offset of the queue) is OFFSET_NOT_FOUND, which the clients answer by
// starting at the queue's end.
func TestGetOffsetNotFound(t *testing.T) {
	be := &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.QueryNotFound, "Not found, maybe this group consumer boot first")
	}}
	resp, err := testServer(be).GetOffset(context.Background(), &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: "cg"},
		MessageQueue: &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: "T"}, Id: 1, Broker: &v2pb.Broker{Name: "broker-a"}}})
	if err != nil || resp.GetStatus().GetCode() != v2pb.Code_OFFSET_NOT_FOUND {
		t.Fatalf("get offset: %v %v", resp, err)
	}
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := h.Decode(be.reqs[0].ExtFields); err != nil || be.reqs[0].Code != remoting.QueryConsumerOffset ||
		h.ConsumerGroup != "cg" || h.Topic != "T" || h.QueueID != 1 {
		t.Fatalf("request %v: %+v %v", be.reqs[0], h, err)
	}
}

// TestPullHeldByBroker: a long poll is one pull with the suspend flag and
// the time left, which the broker holds; an answer that found nothing but
// moved the offset on (past what the filter skipped) is asked on at once
// from there, with the time then left; an answer that did not move it
// (the hold ended: PULL_NOT_FOUND; a follower behind) is the answer, not
// asked again; without a long poll the pull carries no suspend flag.
func TestPullHeldByBroker(t *testing.T) {
	q := pullQueue{topic: "T", group: "broker-a", id: 0}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueOffset: 5, MaxMsgNums: 4, Subscription: "*", ExpressionType: "TAG"}
	header := func(t *testing.T, req *remoting.Command) protocol.PullMessageRequestHeader {
		t.Helper()
		var rh protocol.PullMessageRequestHeader
		if err := rh.Decode(req.ExtFields); err != nil {
			t.Fatal(err)
		}
		return rh
	}
	held := func(t *testing.T, rh protocol.PullMessageRequestHeader, offset int64, most int64) {
		t.Helper()
		if rh.QueueOffset != offset || rh.SysFlag != protocol.PullFlagSubscription|protocol.PullFlagSuspend ||
			rh.SuspendTimeoutMillis <= 0 || rh.SuspendTimeoutMillis > most || rh.CommitOffset != 0 {
			t.Fatalf("pull %+v: want offset %d held up to %d ms, no commit", rh, offset, most)
		}
	}

	// Filtered up to 7, then found.
	calls := 0
	be := &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		calls++
		if calls == 1 {
			return pullAnswerOf(req, remoting.PullRetryImmediately, 7)
		}
		r := pullAnswerOf(req, remoting.Success, 8)
		r.Body = []byte("records")
		return r
	}}
	resp, next, st := testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(10*time.Second))
	if st != nil || resp.Code != remoting.Success || next != 8 || calls != 2 {
		t.Fatalf("pull: %v %d %v after %d calls", resp, next, st, calls)
	}
	held(t, header(t, be.reqs[0]), 5, 10_000)
	held(t, header(t, be.reqs[1]), 7, 10_000)

	// The hold ends with nothing: the answer, not asked again.
	be = &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		return pullAnswerOf(req, remoting.PullNotFound, 5)
	}}
	resp, next, st = testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(time.Minute))
	if st != nil || resp.Code != remoting.PullNotFound || next != 5 || len(be.reqs) != 1 {
		t.Fatalf("a hold that ended with nothing: %v %d %v after %d pulls", resp, next, st, len(be.reqs))
	}

	// A retry at the same offset (a follower behind) is not asked again.
	be = &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		return pullAnswerOf(req, remoting.PullRetryImmediately, 5)
	}}
	resp, next, st = testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(time.Minute))
	if st != nil || resp.Code != remoting.PullRetryImmediately || next != 5 || len(be.reqs) != 1 {
		t.Fatalf("a retry at the same offset: %v %d %v after %d pulls", resp, next, st, len(be.reqs))
	}

	// No long poll: one pull without the suspend flag.
	be = &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		return pullAnswerOf(req, remoting.PullRetryImmediately, 9)
	}}
	resp, next, st = testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now())
	if st != nil || resp.Code != remoting.PullRetryImmediately || next != 9 || len(be.reqs) != 1 {
		t.Fatalf("a pull without long poll: %v %d %v after %d pulls", resp, next, st, len(be.reqs))
	}
	if rh := header(t, be.reqs[0]); rh.SysFlag != protocol.PullFlagSubscription || rh.SuspendTimeoutMillis != 0 {
		t.Fatalf("a pull without long poll: %+v", rh)
	}
}
