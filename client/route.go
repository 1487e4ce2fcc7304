package client

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// routeCache holds the publish view of every topic the client sends to,
// fetched from the name servers: lazily on first use, again at once after
// a failed send (refresh, trigger), and every refresh interval for all
// topics (core's refresh loop). Fetches are coalesced: at most one per
// topic is in flight, and every caller that wants the topic's route
// meanwhile waits for that one.
//
// A fetch runs on a goroutine of its own, owned by the cache's WaitGroup
// and bounded by the cache's context (cancelled by Close), so a caller
// whose context ends stops waiting without cancelling the fetch the
// others wait for. A failed refresh keeps the cached route (RocketMQ
// does the same): a name server that is briefly unreachable does not
// stop sends to a route that still works.
type routeCache struct {
	ctx   context.Context
	wg    *sync.WaitGroup
	fetch func(ctx context.Context, topic string) (*publishInfo, error)
	log   hclog.Logger

	fetches atomic.Int64 // fetches started, for tests
	waiting atomic.Int32 // callers waiting for a fetch, for tests

	mu      sync.Mutex
	closed  bool
	entries map[string]*routeEntry
	// byTopic is a copy of entries, replaced (under mu) when a topic is
	// added: get reads a route that is ready without taking mu.
	byTopic atomic.Pointer[map[string]*routeEntry]
}

// routeEntry is one topic's cached route and its fetch in flight.
type routeEntry struct {
	info *publishInfo // nil until a fetch succeeds
	call *fetchCall   // the fetch in flight, or nil
	// suspect: a send on this route failed and gave up (invalidate), so
	// the cached route may name a leader that is gone; the next get waits
	// for a fresh read instead of sending there again. Cleared when a
	// fetch ends.
	suspect bool
	next    atomic.Uint32
	// ready is info while it is neither nil nor suspect (set under the
	// cache's mu, read without it): what get returns at once.
	ready atomic.Pointer[publishInfo]
}

// fetchCall is one fetch; done closes when info or err is set.
type fetchCall struct {
	done chan struct{}
	info *publishInfo
	err  error
}

func newRouteCache(ctx context.Context, wg *sync.WaitGroup, log hclog.Logger,
	fetch func(context.Context, string) (*publishInfo, error)) *routeCache {
	return &routeCache{ctx: ctx, wg: wg, fetch: fetch, log: log, entries: map[string]*routeEntry{}}
}

// get returns the cached route of topic, fetching it first when there is
// none yet, and reading it again first when it is suspect (as refresh).
func (c *routeCache) get(ctx context.Context, topic string) (*publishInfo, error) {
	if info := c.ready(topic); info != nil {
		return info, nil
	}
	c.mu.Lock()
	e := c.entryLocked(topic)
	if e.info != nil && !e.suspect {
		info := e.info
		c.mu.Unlock()
		return info, nil
	}
	if e.info != nil {
		c.mu.Unlock()
		return c.refresh(ctx, topic)
	}
	call, err := c.startLocked(topic, e)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, topic, call)
}

// ready returns topic's cached route when get would return it at once
// (neither missing nor suspect), else nil; it never waits.
func (c *routeCache) ready(topic string) *publishInfo {
	if m := c.byTopic.Load(); m != nil {
		if e := (*m)[topic]; e != nil {
			return e.ready.Load()
		}
	}
	return nil
}

// refresh fetches topic's route (or joins the fetch in flight) and waits
// for it. If the fetch fails, the cached route is returned when there is
// one; ctx ending returns ctx's error.
func (c *routeCache) refresh(ctx context.Context, topic string) (*publishInfo, error) {
	c.mu.Lock()
	e := c.entryLocked(topic)
	call, err := c.startLocked(topic, e)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	info, err := c.wait(ctx, topic, call)
	if err == nil || ctx.Err() != nil {
		return info, err
	}
	c.mu.Lock()
	cached := e.info
	c.mu.Unlock()
	if cached == nil {
		return nil, err
	}
	c.log.Debug("route refresh failed, keeping the cached route", "topic", topic, "error", err)
	return cached, nil
}

// invalidate marks topic's cached route suspect and starts a fetch; it is
// called when a send gave up after a failure there. Without it, the next
// send would take the cached route while that fetch is in flight and go
// to the same leader again: after a send timed out on a paused leader,
// the next one would wait out a whole send timeout too, although the
// name server already names the new leader.
func (c *routeCache) invalidate(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(topic)
	if e.info != nil {
		e.suspect = true
		e.ready.Store(nil)
	}
	_, _ = c.startLocked(topic, e)
}

// trigger starts a fetch of topic's route unless one is in flight, and
// does not wait for it.
func (c *routeCache) trigger(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.startLocked(topic, c.entryLocked(topic))
}

// topics returns every topic in the cache.
func (c *routeCache) topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.entries))
	for t := range c.entries {
		out = append(out, t)
	}
	return out
}

// close makes every later fetch fail with ErrClosed. The caller cancels
// the context and waits for the fetches in flight.
func (c *routeCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

func (c *routeCache) entryLocked(topic string) *routeEntry {
	e := c.entries[topic]
	if e == nil {
		e = &routeEntry{}
		c.entries[topic] = e
		m := maps.Clone(c.entries)
		c.byTopic.Store(&m)
	}
	return e
}

// startLocked returns the fetch in flight for e, starting one if there is
// none.
func (c *routeCache) startLocked(topic string, e *routeEntry) (*fetchCall, error) {
	if e.call != nil {
		return e.call, nil
	}
	if c.closed {
		return nil, ErrClosed
	}
	call := &fetchCall{done: make(chan struct{})}
	e.call = call
	c.fetches.Add(1)
	c.wg.Add(1)
	go c.run(topic, e, call)
	return call, nil
}

// run is the fetch goroutine.
func (c *routeCache) run(topic string, e *routeEntry, call *fetchCall) {
	defer c.wg.Done()
	info, err := c.fetch(c.ctx, topic)
	c.mu.Lock()
	e.call = nil
	// Success or not, the read is done: a failed one leaves the cached
	// route (refresh's fallback), and sends must not each wait for a name
	// server that is down.
	e.suspect = false
	if err == nil {
		info.next = &e.next
		info.version = 1
		if old := e.info; old != nil {
			info.version = old.version
			if old.sig != info.sig {
				info.version++
				c.log.Info("route changed", "topic", topic, "leaders", info.leaders, "queues", len(info.queues),
					"waiting_for_leader", info.waiting)
			}
		}
		e.info = info
	}
	e.ready.Store(e.info)
	call.info, call.err = info, err
	c.mu.Unlock()
	close(call.done)
}

// wait waits for call or for ctx.
func (c *routeCache) wait(ctx context.Context, topic string, call *fetchCall) (*publishInfo, error) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	select {
	case <-call.done:
		return call.info, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("client: waiting for the route of %s: %w", topic, ctx.Err())
	}
}
