//go:build unix

package jepsen

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/protocol"
)

// The membership nemesis (kind member) does what an operator replacing
// a node does, with our admin client through the name server's client
// proxy:
//
//	start  the target leads? hand leadership to another node first (the
//	       leader never removes itself); RemoveNode(target), retried until
//	       the leader's configuration no longer lists it. wipe: SIGKILL the
//	       node (a failed machine). Otherwise it keeps running, removed
//	       (raft shuts down on a node removed from the configuration, and
//	       the process must not serve anything it should not meanwhile).
//	heal   stop the node if it runs; wipe: move its data aside as
//	       `admin raft replace-node` does (dledger.PrepareRejoin: an empty
//	       directory that waits to be added, never bootstrapping); start
//	       it; AddNode (non-voter, caught up, promoted), retried until the
//	       leader lists it as a voter, bounded by memberBound.
//
// Every step is a fault event of phase "step" whose detail says what was
// done. The node's raft address stays its RaftProxy, which every node
// dials it at, so links keep their meaning across the change.
const memberBound = 2 * time.Minute

func (n *nemesis) member(ctx context.Context, f Fault, targets []string) (func() error, error) {
	noop := func() error { return nil }
	if len(targets) != 1 || n.c.node(targets[0]) == nil {
		return noop, fmt.Errorf("%w: member needs one node, got %v", ErrPlan, targets)
	}
	nd := n.c.node(targets[0])
	a, err := client.NewAdmin(n.c.AdminOptions()...)
	if err != nil {
		return noop, err
	}
	step := func(detail string, err error) {
		n.h.Add(stepEvent(NemMember, n.c.eventGroup(nd.ID), []string{nd.ID}, detail, err))
	}
	removed := false
	rerr := retry(ctx, memberBound, func(rctx context.Context) (bool, error) {
		_, ls, err := a.GroupLeader(rctx, nd.Group)
		if err != nil {
			return false, err
		}
		if _, ok := ls.Member(nd.ID); !ok {
			return true, nil
		}
		if ls.Node == nd.ID {
			to := n.otherThan(nd.ID)
			_, _, err := a.TransferLeader(rctx, nd.Group, to)
			step("transfer leadership to "+to+" before removing "+nd.ID, err)
			return false, err
		}
		err = a.RemoveNode(rctx, nd.Group, nd.ID)
		step("remove "+nd.ID, err)
		return false, err
	})
	removed = rerr == nil
	if removed && f.Wipe {
		rerr = n.c.Kill(nd.ID)
		step("kill "+nd.ID+" (to be rebuilt empty)", rerr)
	}
	heal := func() error {
		defer a.Close()
		hctx := context.WithoutCancel(ctx) // the node must come back even when the run is ending
		if n.c.Running(nd.ID) {
			err := n.c.StopNode(nd.ID, stopGrace)
			step("stop "+nd.ID, err)
		}
		if f.Wipe && removed {
			aside, err := dledger.PrepareRejoin(nd.Dir, time.Now())
			step("wipe "+nd.ID+": data moved to "+aside, err)
			if err != nil {
				return err
			}
		}
		if err := n.c.Restart(nd.ID); err != nil {
			step("start "+nd.ID, err)
			return err
		}
		step("start "+nd.ID, nil)
		return n.c.ensureMember(hctx, a, nd, step)
	}
	if rerr != nil {
		return heal, fmt.Errorf("jepsen: remove %s: %w", nd.ID, rerr)
	}
	return heal, nil
}

// otherThan is a node other than id (the first in order).
func (n *nemesis) otherThan(id string) string {
	for _, o := range n.c.GroupNodes(n.c.GroupOf(id)) {
		if o != id {
			return o
		}
	}
	return ""
}

// ensureMember adds nd back as a voter unless the leader lists it as one,
// retried until memberBound has passed.
func (c *Cluster) ensureMember(ctx context.Context, a *client.Admin, nd *Node, step func(string, error)) error {
	return retry(ctx, memberBound, func(rctx context.Context) (bool, error) {
		_, ls, err := a.GroupLeader(rctx, nd.Group)
		if err != nil {
			return false, err
		}
		if m, ok := ls.Member(nd.ID); ok && m.Voter {
			return true, nil
		}
		actx, cancel := context.WithTimeout(rctx, time.Minute)
		_, err = a.AddNode(actx, nd.Group, protocol.RaftMember{ID: nd.ID, RaftAddr: nd.RaftProxy, ClientAddr: nd.Advertised}, client.AddNodeOptions{})
		cancel()
		step("add "+nd.ID+" back (non-voter, caught up, voter)", err)
		return false, err
	})
}

// EnsureMembers adds every node the leader does not list as a voter back
// to the group (after the heal phase, whatever a member fault left).
func (c *Cluster) EnsureMembers(ctx context.Context, h *History) error {
	a, err := client.NewAdmin(c.AdminOptions()...)
	if err != nil {
		return err
	}
	defer a.Close()
	var errs []error
	for _, nd := range c.Nodes {
		step := func(detail string, err error) {
			h.Add(stepEvent(NemMember, c.eventGroup(nd.ID), []string{nd.ID}, "heal: "+detail, err))
		}
		errs = append(errs, c.ensureMember(ctx, a, nd, step))
	}
	return errors.Join(errs...)
}

// StopNode stops a node as an operator would (SIGINT; SIGKILL after
// grace) and waits for it to exit.
func (c *Cluster) StopNode(id string, grace time.Duration) error {
	if _, err := c.procOf(id).Stop(syscall.SIGINT, grace); err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return nil
}

// retry calls f (each call bounded by 10 s) every 500 ms until it reports
// done, or bound has passed (the last error), or ctx ends.
func retry(ctx context.Context, bound time.Duration, f func(context.Context) (bool, error)) error {
	end := time.Now().Add(bound)
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		done, err := f(rctx)
		cancel()
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(end) {
			if last == nil {
				last = errors.New("no answer")
			}
			return fmt.Errorf("not done after %v: %w", bound, last)
		}
		if !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			return errors.Join(last, ctx.Err())
		}
	}
}
