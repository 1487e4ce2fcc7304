package routing

import (
	"context"
	"encoding/json"
	"errors"

	"sync/atomic"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// startCheckingServer starts a name server like startServer, but with the
// default Checker: every claim is confirmed by asking the claimed address
// for RAFT_STATUS over loopback.
func startCheckingServer(t testing.TB, cfg Config) (*Server, *ManualClock) {
	t.Helper()
	cfg.Checker = nil
	cfg.Addr = "127.0.0.1:0"
	clock := NewManualClock(t0)
	cfg.Clock = clock
	return launchServer(t, cfg), clock
}

// settle waits until no registration awaits its node's confirmation.
func settle(t testing.TB, s *Server) {
	t.Helper()
	waitFor(t, "every claim confirmed or dropped", func() bool { return s.confirm.pendingCount() == 0 })
}

// fakeNode is a broker node as the name server sees it: a remoting server
// on loopback that answers RAFT_STATUS with a status the test sets.
type fakeNode struct {
	srv    *remoting.Server
	status atomic.Pointer[nodeStatus]
	asked  atomic.Int64
}

func startFakeNode(t testing.TB, group, role string, term uint64) *fakeNode {
	t.Helper()
	n := &fakeNode{}
	n.set(group, role, term)
	n.srv = remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0"})
	n.srv.Handle(remoting.RaftStatus, remoting.DefaultPool, remoting.HandlerFunc(
		func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			n.asked.Add(1)
			body, _ := json.Marshal(map[string]any{"group": n.status.Load().Group, "node": "n0",
				"role": n.status.Load().Role, "term": n.status.Load().Term, "members": []any{}})
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = body
			return resp
		}))
	if err := n.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		_ = n.srv.Close(ctx)
	})
	return n
}

func (n *fakeNode) set(group, role string, term uint64) {
	n.status.Store(&nodeStatus{Group: group, Role: role, Term: term})
}

func (n *fakeNode) addr() string { return n.srv.Addr().String() }

// errorsAs is errors.As (kept apart so the attack tests read the same on
// every version of the package).
func errorsAs(err error, target any) bool { return errors.As(err, target) }
