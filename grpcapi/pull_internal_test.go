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
	holds   bool
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

func (a *answeringBackend) holdsPulls() bool { return a.holds }

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

// TestPullAsksAgain: where the broker cannot hold a pull (in process), a
// long poll is pulls asked again without the suspend flag, each from the
// offset the last answered (past what the filter skipped), until a pull
// finds messages or the time is up; where it can, the pull carries the
// suspend flag and the time left.
func TestPullAsksAgain(t *testing.T) {
	q := pullQueue{topic: "T", group: "broker-a", id: 0}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueOffset: 5, MaxMsgNums: 4, Subscription: "*", ExpressionType: "TAG"}
	calls := 0
	be := &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		calls++
		switch calls {
		case 1:
			return pullAnswerOf(req, remoting.PullRetryImmediately, 7) // filtered up to 7
		case 2:
			return pullAnswerOf(req, remoting.PullNotFound, 7)
		}
		r := pullAnswerOf(req, remoting.Success, 8)
		r.Body = []byte("records")
		return r
	}}
	s := testServer(be)
	resp, next, st := s.pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(time.Minute))
	if st != nil || resp.Code != remoting.Success || next != 8 || calls != 3 {
		t.Fatalf("pull: %v %d %v after %d calls", resp, next, st, calls)
	}
	for i, want := range []int64{5, 7, 7} {
		var rh protocol.PullMessageRequestHeader
		if err := rh.Decode(be.reqs[i].ExtFields); err != nil {
			t.Fatal(err)
		}
		if rh.QueueOffset != want || rh.SysFlag != protocol.PullFlagSubscription || rh.CommitOffset != 0 {
			t.Fatalf("pull %d: %+v, want offset %d without suspend or commit", i, rh, want)
		}
	}

	// Nothing comes: answered when the time is up, at the last offset.
	be = &answeringBackend{answer: func(req *remoting.Command) *remoting.Command {
		return pullAnswerOf(req, remoting.PullNotFound, 5)
	}}
	resp, next, st = testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(50*time.Millisecond))
	if st != nil || resp.Code != remoting.PullNotFound || next != 5 || len(be.reqs) < 2 {
		t.Fatalf("pull with nothing coming: %v %d %v after %d pulls", resp, next, st, len(be.reqs))
	}

	// A backend whose broker holds pulls is sent the suspend flag.
	be = &answeringBackend{holds: true, answer: func(req *remoting.Command) *remoting.Command {
		r := pullAnswerOf(req, remoting.Success, 6)
		r.Body = []byte("records")
		return r
	}}
	if _, _, st := testServer(be).pull(context.Background(), netip.AddrPort{}, q, h, time.Now().Add(10*time.Second)); st != nil {
		t.Fatal(st)
	}
	var rh protocol.PullMessageRequestHeader
	if err := rh.Decode(be.reqs[0].ExtFields); err != nil {
		t.Fatal(err)
	}
	if rh.SysFlag != protocol.PullFlagSubscription|protocol.PullFlagSuspend || rh.SuspendTimeoutMillis <= 9000 || rh.SuspendTimeoutMillis > 10000 {
		t.Fatalf("held pull: %+v", rh)
	}
}
