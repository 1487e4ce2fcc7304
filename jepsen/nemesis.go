//go:build unix

package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// nemesis runs a plan's faults against a cluster, recording each start
// and end in the history.
type nemesis struct {
	c *Cluster
	h *History
	// leader is a group's leader as the monitor last saw it ("" none;
	// group "" is the one group of a one-group run).
	leader func(group string) string
	rng    *rand.Rand // transfer storms' picks
	rngMu  sync.Mutex
	log    func(format string, args ...any)
	// active is the fault being applied in a group ("" none), for the
	// progress line.
	active func(group, fault string)
	// sup restarts nodes that stop themselves (disk-full runs; nil: none).
	sup *supervisor
}

// run applies every fault of p at its time after began, healing each one
// after its duration; it returns early (healing what is applied) when
// ctx ends. Each group's faults (p.Faults by Group) run in a goroutine
// of their own, owned and waited for here, so groups are under faults
// at once.
func (n *nemesis) run(ctx context.Context, p Plan, began time.Time) {
	byGroup := map[string][]Fault{}
	for _, f := range p.Faults {
		byGroup[f.Group] = append(byGroup[f.Group], f)
	}
	var wg sync.WaitGroup
	for _, faults := range byGroup {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, f := range faults {
				if !sleepUntil(ctx, began.Add(time.Duration(f.At))) {
					return
				}
				n.one(ctx, f)
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// ids are group g's nodes (every node for "").
func (n *nemesis) ids(g string) []string {
	if g == "" {
		return n.c.NodeIDs()
	}
	return n.c.GroupNodes(g)
}

// one applies f, waits its duration and heals it.
func (n *nemesis) one(ctx context.Context, f Fault) {
	leader := n.leader(f.Group)
	targets := n.resolve(f.Targets, leader, f.Group)
	start := Event{Type: EvFault, Process: "nemesis", Kind: f.Kind, Phase: "start", Targets: targets, Leader: leader, Detail: f.String(), Group: f.Group}
	heal, err := n.apply(ctx, f, targets)
	if err != nil {
		start.Error = err.Error()
	}
	n.h.Add(start)
	n.active(f.Group, f.String())
	n.log("nemesis: %s on %v (leader %s)%s", f, targets, leader, errText(err))
	if f.Kind == NemTransfer {
		n.storm(ctx, f)
	} else {
		sleepUntil(ctx, time.Now().Add(time.Duration(f.Duration)))
	}
	herr := heal()
	n.active(f.Group, "")
	end := Event{Type: EvFault, Process: "nemesis", Kind: f.Kind, Phase: "end", Targets: targets, Detail: f.String(), Group: f.Group}
	if herr != nil {
		end.Error = herr.Error()
	}
	n.h.Add(end)
	if herr != nil {
		n.log("nemesis: healing %s: %v", f, herr)
	}
}

// stepEvent is a "step" event of a fault of kind on targets in group g
// ("" in a one-group run: Cluster.eventGroup): what the nemesis did
// within the fault, and the error it met.
func stepEvent(kind, g string, targets []string, detail string, err error) Event {
	ev := Event{Type: EvFault, Process: "nemesis", Kind: kind, Phase: "step", Targets: targets, Detail: detail, Group: g}
	if err != nil {
		ev.Error = shorten(err.Error())
	}
	return ev
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// resolve turns selectors into node ids of group g ("leader" with no
// leader known resolves to nothing: the fault then has no target, as
// recorded).
func (n *nemesis) resolve(sel []string, leader, g string) []string {
	var out []string
	for _, s := range sel {
		if s == TargetLeader {
			if leader != "" {
				out = append(out, leader)
			}
			continue
		}
		if s == TargetAll {
			out = append(out, n.ids(g)...)
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// restarter heals a fault that stopped targets' processes (a kill, a
// power cut): each is started again.
func (n *nemesis) restarter(targets []string) func() error {
	return func() error {
		var errs []error
		for _, t := range targets {
			errs = append(errs, n.c.Restart(t))
		}
		return errors.Join(errs...)
	}
}

// apply starts f on targets and returns how to heal it.
func (n *nemesis) apply(ctx context.Context, f Fault, targets []string) (func() error, error) {
	noop := func() error { return nil }
	ids := n.ids(f.Group)
	switch f.Kind {
	case NemGroupDown:
		err := n.c.StopGroup(f.Group, stopGrace)
		return n.restarter(targets), err
	case NemKill, NemNamesrv:
		var errs []error
		for _, t := range targets {
			errs = append(errs, n.c.Kill(t))
		}
		return n.restarter(targets), errors.Join(errs...)
	case NemPause:
		var errs []error
		for _, t := range targets {
			errs = append(errs, n.c.Pause(t))
		}
		return func() error {
			var errs []error
			for _, t := range targets {
				if n.c.Running(t) {
					errs = append(errs, n.c.Resume(t))
				}
			}
			return errors.Join(errs...)
		}, errors.Join(errs...)
	case NemPartition:
		cut := partitionLinks(f, targets, ids)
		for _, l := range cut {
			n.c.Net.Set(l, Policy{Block: true})
		}
		return n.healer(cut), nil
	case NemOneWay:
		var cut []Link
		for _, t := range targets {
			for _, o := range ids {
				if o == t {
					continue
				}
				l := Link{From: t, To: o}
				if f.Inbound {
					l = Link{From: o, To: t}
				}
				cut = append(cut, l)
			}
		}
		for _, l := range cut {
			n.c.Net.Set(l, Policy{Block: true})
		}
		return n.healer(cut), nil
	case NemLoss, NemDelay:
		pol := Policy{Loss: f.Loss, Delay: time.Duration(f.Delay), Jitter: time.Duration(f.Jitter)}
		var links []Link
		for _, t := range targets {
			for _, o := range append(slices.Clone(ids), Client, Namesrv) {
				if o == t {
					continue
				}
				links = append(links, Link{From: t, To: o}, Link{From: o, To: t})
			}
		}
		for _, l := range links {
			n.c.Net.Set(l, pol)
		}
		return n.healer(links), nil
	case NemTransfer:
		return noop, nil
	case NemPower:
		return n.power(targets)
	case NemDiskFull:
		var heals []func() error
		var errs []error
		for _, t := range targets {
			heal, err := n.fill(t)
			heals = append(heals, heal)
			errs = append(errs, err)
		}
		return func() error {
			var errs []error
			for _, h := range heals {
				errs = append(errs, h())
			}
			return errors.Join(errs...)
		}, errors.Join(errs...)
	case NemMember:
		return n.member(ctx, f, targets)
	case NemHostile:
		return n.hostile(ctx, f.Group, targets)
	}
	return noop, fmt.Errorf("%w: unknown fault kind %q", ErrPlan, f.Kind)
}

func (n *nemesis) healer(links []Link) func() error {
	return func() error {
		for _, l := range links {
			n.c.Net.Set(l, Policy{})
		}
		return nil
	}
}

// storm transfers leadership to another node every f.Every until the
// fault's duration has passed.
func (n *nemesis) storm(ctx context.Context, f Fault) {
	end := time.Now().Add(time.Duration(f.Duration))
	every := max(time.Duration(f.Every), 100*time.Millisecond)
	for time.Now().Before(end) {
		leader := n.leader(f.Group)
		if leader != "" {
			var others []string
			for _, id := range n.ids(f.Group) {
				if id != leader {
					others = append(others, id)
				}
			}
			if len(others) > 0 {
				n.rngMu.Lock()
				to := others[n.rng.IntN(len(others))]
				n.rngMu.Unlock()
				tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				err := n.c.TransferLeader(tctx, leader, to)
				cancel()
				ev := stepEvent(NemTransfer, f.Group, []string{to}, "", err)
				ev.Leader = leader
				n.h.Add(ev)
			}
		}
		if !sleepUntil(ctx, time.Now().Add(every)) {
			return
		}
	}
}

// partitionLinks lists both directions of every node pair f cuts.
func partitionLinks(f Fault, targets, ids []string) []Link {
	connected := func(a, b string) bool { return true }
	switch f.Shape {
	case "isolate", "halves", "":
		side := map[string]bool{}
		for _, t := range targets {
			side[t] = true
		}
		connected = func(a, b string) bool { return side[a] == side[b] }
	case "bridge":
		if len(f.Groups) == 2 {
			ga, gb := f.Groups[0], f.Groups[1]
			connected = func(a, b string) bool {
				return !(slices.Contains(ga, a) && slices.Contains(gb, b) || slices.Contains(gb, a) && slices.Contains(ga, b))
			}
		}
	case "ring":
		pos := map[string]int{}
		for i, t := range targets {
			pos[t] = i
		}
		k := len(targets)
		connected = func(a, b string) bool {
			pa, oka := pos[a]
			pb, okb := pos[b]
			if !oka || !okb || k < 4 {
				return true
			}
			d := (pa - pb + k) % k
			return d == 1 || d == k-1
		}
	}
	var out []Link
	for _, a := range ids {
		for _, b := range ids {
			if a != b && !connected(a, b) {
				out = append(out, Link{From: a, To: b})
			}
		}
	}
	return out
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
