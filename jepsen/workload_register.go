//go:build unix

package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The register workload (register.go has the model): clients r0… each
// pick one of registerKeys keys of one broker group (queues of Topic under
// registerGroup, a consumer group no consumer uses; with two or more
// broker groups the group is drawn too, each group holding its own
// offsets, so a key is a group's queue) and read it or write a value
// unique over the run (one counter, so values increase), one operation at
// a time. Each goes to that broker group's leader as the name server
// routes it (through the client proxies, as a client's offset store
// does), the route refreshed every second and after any failure.
const (
	registerGroup = "jepsen-register"
	registerKeys  = 3
	registerOpTTL = time.Second // one operation's bound
)

// startRegister starts n register clients under ctx; they stop with the
// producers.
func (w *workload) startRegister(ctx context.Context, n int, seed int64) {
	var next atomic.Int64
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+0x7265676973746572))
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.registerClient(ctx, fmt.Sprintf("r%d", i), rng, &next)
		}()
	}
}

// registerRoute is a group's leader as the name server last routed it.
type registerRoute struct {
	addr string
	at   time.Time
}

func (w *workload) registerClient(ctx context.Context, id string, rng *rand.Rand, next *atomic.Int64) {
	rc := remoting.NewClient(w.c.Remoting(remoting.ClientConfig{DialTimeout: registerOpTTL}))
	defer rc.Close()
	routes := map[string]registerRoute{} // group → its leader as last routed
	tick := time.NewTicker(2 * w.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g := w.c.Groups[0]
		if w.c.Multi() {
			g = w.c.Groups[rng.IntN(len(w.c.Groups))]
		}
		rt := routes[g]
		if rt.addr == "" || time.Since(rt.at) > time.Second {
			rctx, cancel := context.WithTimeout(ctx, registerOpTTL)
			addr, err := devcluster.Leader(rctx, rc, w.c.ClientNamesrv, g)
			cancel()
			if err == nil && addr != "" {
				rt = registerRoute{addr, time.Now()}
				routes[g] = rt
			}
			if rt.addr == "" {
				continue
			}
		}
		route := rt.addr
		q := int32(rng.IntN(registerKeys))
		e := Event{Type: EvRegister, Process: id, Queue: q, Node: w.c.NodeByAdvertised(route)}
		if w.c.Multi() {
			e.Group = g
		}
		var req *remoting.Command
		if rng.IntN(2) == 0 {
			e.Kind, e.Offset = "write", next.Add(1)
			h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: registerGroup, Topic: Topic, QueueID: q, CommitOffset: e.Offset}
			req = h.Request()
		} else {
			e.Kind = "read"
			h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: registerGroup, Topic: Topic, QueueID: q}
			req = h.Request()
		}
		e.Invoke = w.h.Now()
		octx, cancel := context.WithTimeout(context.Background(), registerOpTTL)
		resp, err := rc.Invoke(octx, route, req)
		cancel()
		switch {
		case err != nil:
			e.Outcome, e.Error = Unknown, shorten(err.Error())
		case resp.Code != remoting.Success:
			e.Outcome, e.Error = Failed, shorten(fmt.Sprintf("code %d %s", resp.Code, resp.Remark))
		case e.Kind == "read":
			v, perr := remoting.ExtInt(resp.ExtFields, "offset")
			if perr != nil {
				e.Outcome, e.Error = Failed, shorten(perr.Error())
				break
			}
			e.Outcome, e.Offset = OK, v
		default:
			e.Outcome = OK
		}
		w.h.Add(e)
		if e.Outcome != OK {
			delete(routes, g) // ask the name server again, as a client would after a failure
		}
		if errors.Is(err, context.Canceled) {
			return
		}
	}
}
