package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// gatedFetch is a route fetch that blocks until released, then returns
// the route it is given.
type gatedFetch struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}

	mu    sync.Mutex
	route *protocol.TopicRouteData
	err   error
}

func newGatedFetch(leader string) *gatedFetch {
	g := &gatedFetch{started: make(chan struct{}, 100), release: make(chan struct{})}
	g.setLeader(leader)
	return g
}

func (g *gatedFetch) setLeader(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.route = &protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "a", WriteQueueNums: 2, ReadQueueNums: 2, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{BrokerName: "a", BrokerAddrs: map[int64]string{0: addr}}},
	}
}

func (g *gatedFetch) fetch(ctx context.Context, topic string) (*publishInfo, error) {
	g.calls.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return nil, g.err
	}
	return newPublishInfo(topic, g.route, false), nil
}

func newTestCache(t *testing.T, fetch func(context.Context, string) (*publishInfo, error)) *routeCache {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := newRouteCache(ctx, &wg, hclog.NewNullLogger(), fetch)
	t.Cleanup(func() {
		c.close()
		cancel()
		wg.Wait()
	})
	return c
}

// TestRouteCacheCoalesces: callers that want a topic's route while a
// fetch is in flight all wait for that one fetch, a caller whose context
// ends stops waiting without hurting the others, and a changed route gets
// a new version.
func TestRouteCacheCoalesces(t *testing.T) {
	g := newGatedFetch("10.0.0.1:1")
	c := newTestCache(t, g.fetch)
	ctx := ctxGuard(t)

	const n = 20
	var wg sync.WaitGroup
	infos := make([]*publishInfo, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				infos[i], err = c.get(ctx, "T")
			} else {
				infos[i], err = c.refresh(ctx, "T")
			}
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
		}()
	}
	<-g.started
	waitFor(t, "every caller waiting for the one fetch", func() bool { return c.waiting.Load() == n })
	// A caller that gives up early does not cancel the fetch.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.refresh(cctx, "T"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	c.trigger("T")
	close(g.release)
	wg.Wait()
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("%d fetches for %d concurrent callers, want 1", got, n)
	}
	for i := range n {
		if infos[i] == nil || infos[i] != infos[0] {
			t.Fatalf("caller %d got another route", i)
		}
	}
	v1 := infos[0].version

	// Cached now: get does not fetch; refresh does, once per call.
	if info, err := c.get(ctx, "T"); err != nil || info != infos[0] {
		t.Fatalf("cached get: %v", err)
	}
	info, err := c.refresh(ctx, "T")
	if err != nil || g.calls.Load() != 2 || info.version != v1 {
		t.Fatalf("unchanged refresh: version %d (was %d), %d fetches, %v", info.version, v1, g.calls.Load(), err)
	}
	if info.next != infos[0].next {
		t.Fatal("the round-robin counter is not shared across versions")
	}
	g.setLeader("10.0.0.2:1")
	if info, err = c.refresh(ctx, "T"); err != nil || info.version != v1+1 || info.leaders["a"] != "10.0.0.2:1" {
		t.Fatalf("changed refresh: %+v %v", info, err)
	}

	// A failing refresh keeps the cached route; a failing first fetch
	// returns the error.
	g.mu.Lock()
	g.err = errors.New("name server down")
	g.mu.Unlock()
	if got, err := c.refresh(ctx, "T"); err != nil || got != info {
		t.Fatalf("failed refresh: %v, %v", got, err)
	}
	if _, err := c.get(ctx, "U"); err == nil {
		t.Fatal("first fetch error lost")
	}
	if got := c.topics(); len(got) != 2 {
		t.Fatalf("topics %v", got)
	}
	c.close()
	if _, err := c.refresh(ctx, "T"); !errors.Is(err, ErrClosed) {
		t.Fatalf("refresh after close: %v", err)
	}
}

// TestRouteRefreshRightAfterFailure: a failed send reads the route again
// before its retry (not 30 s later), and the retry goes to the leader that
// route names.
func TestRouteRefreshRightAfterFailure(t *testing.T) {
	f := startFake(t, "a")
	a := f.broker("a")
	p := newProducer(t, WithNameServers(f.nsAddr()), WithRetries(1))
	ctx := ctxGuard(t)
	if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("warm")}); err != nil {
		t.Fatal(err)
	}
	before := f.routeReqs.Load()
	a.program(func(n int32, req *remoting.Command) *remoting.Command {
		if n == 2 {
			return remoting.NewResponse(req, remoting.ServiceNotAvailable, "not the leader")
		}
		return nil
	})
	res, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Earlier[0].Outcome != OutcomeFailed || res.MaybeDuplicated() {
		t.Fatalf("result %+v", res)
	}
	if got := f.routeReqs.Load() - before; got < 1 {
		t.Fatalf("%d route reads between the failure and the retry", got)
	}
}

// TestPeriodicRouteRefresh: the background loop re-reads the route of
// every topic in use each interval, without any send, and stops on Close.
func TestPeriodicRouteRefresh(t *testing.T) {
	f := startFake(t, "a")
	p, err := NewProducer(WithNameServers(f.nsAddr()), WithRouteRefreshInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	start := f.routeReqs.Load()
	waitFor(t, "three background refreshes", func() bool { return f.routeReqs.Load() >= start+3 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	closed := f.routeReqs.Load()
	// Close waited for the loop and for every fetch's answer, so the name
	// server has counted every request the producer made.
	if _, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
	if got := f.routeReqs.Load(); got != closed {
		t.Fatalf("%d route requests after Close", got-closed)
	}
}

// TestNextSendAfterTimeoutReadsRoute: a send that timed out on a paused
// leader (outcome unknown, no retry) marks the route suspect, so the next
// send waits for the fresh read and goes to the new leader the name
// server already names, instead of waiting out another timeout at the
// old address.
func TestNextSendAfterTimeoutReadsRoute(t *testing.T) {
	f := startFake(t, "a")
	old := f.broker("a")
	p := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(300*time.Millisecond))
	ctx := ctxGuard(t)
	if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("warm")}); err != nil {
		t.Fatal(err)
	}
	old.program(never) // paused: takes the request, never answers
	release := f.holdRoutes()
	defer release()
	if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("lost in the pause")}); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("send to the paused leader: %v", err)
	}
	nw := f.newLeader("a") // elected and registered meanwhile
	done := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("next")})
		done <- err
	}()
	// The next send waits for the route read the failure started (held
	// at the name server until now).
	waitFor(t, "the next send waiting for the route", func() bool { return p.core.routes.waiting.Load() > 0 })
	release()
	if err := <-done; err != nil {
		t.Fatalf("next send: %v", err)
	}
	if nw.sends.Load() != 1 || old.sends.Load() != 2 {
		t.Fatalf("new leader saw %d sends, old %d: want 1 and 2", nw.sends.Load(), old.sends.Load())
	}
}
