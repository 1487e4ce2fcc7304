package broker

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// The broker as its other front ends reach it (package grpcapi, the
// RocketMQ 5 gRPC port): they translate their requests into remoting
// commands and have them served by the very handlers the remoting server
// runs (ServeLocal), read topics and leadership, and run as parts of the
// broker (Attach), started after the remoting server and stopped at the
// step of Close where clients are let go.

// Part is a front end the broker starts and stops with itself.
type Part interface {
	Start() error
	// Stop ends the part and waits for what it runs, or until ctx ends.
	Stop(ctx context.Context) error
}

// Attach adds p to the parts the broker starts after its remoting server
// (Start) and stops right after it has unregistered from the name
// servers (Close). Call it before Start.
func (b *Broker) Attach(p Part) { b.parts = append(b.parts, p) }

// startParts starts the attached parts in order; on a failure it stops
// the ones started and reports the error.
func (b *Broker) startParts() error {
	for i, p := range b.parts {
		if err := p.Start(); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = b.parts[j].Stop(context.Background())
			}
			return fmt.Errorf("broker: starting a part: %w", err)
		}
	}
	return nil
}

// stopParts stops the attached parts in reverse order.
func (b *Broker) stopParts(ctx context.Context) error {
	var first error
	for i := len(b.parts) - 1; i >= 0; i-- {
		if err := b.parts[i].Stop(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ServeLocal serves req as the remoting server serves it from a client at
// peer: through the same handler, behind the same access check, with the
// same forwarding to the leader. peer is recorded as a forwarding node
// records the producer's address (the born host of a message sent).
// A code the broker does not serve is answered REQUEST_CODE_NOT_SUPPORTED.
// With ACL on, a request of a call Authenticate put an identity in ctx
// for is checked for that identity (Authorize) instead of by its remoting
// signature.
func (b *Broker) ServeLocal(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command {
	h, ok := b.local[req.Code]
	if !ok {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
			fmt.Sprintf("request code %d is not supported", req.Code))
	}
	if b.cfg.ACLEnable && authenticated(ctx) {
		if err := b.Authorize(ctx, req); err != nil {
			b.log.Info("request refused by the ACL", "peer", peer.String(), "code", remoting.RequestCodeName(req.Code), "error", err)
			return errorResponse(req, err)
		}
		h = b.localOpen[req.Code]
	}
	if peer.IsValid() {
		if req.ExtFields == nil {
			req.ExtFields = map[string]string{}
		}
		if _, ok := req.ExtFields[extForwardedFrom]; !ok {
			req.ExtFields[extForwardedFrom] = peer.String()
		}
	}
	resp := h(ctx, nil, req)
	if resp != nil && resp.ExtFields == nil && len(resp.ExtList) > 0 {
		// A send's answer is built as a list for the remoting port's
		// encoder; in-process callers read the header as a map.
		resp.ExtFields, resp.ExtList = resp.ExtMap(), nil
	}
	return resp
}

// ServeLocalWait is ServeLocal for a caller that waits for the answer of
// a long poll: a PULL_MESSAGE (or LITE_PULL_MESSAGE) with the suspend flag
// that finds nothing new is held as a remoting pull is (long polling,
// longpoll.go: the same cap, maxHeldPulls, and the same wake-up by a
// message dispatched to its queue), and ServeLocalWait returns its answer
// when it comes: the messages, or PULL_NOT_FOUND when its suspend timeout
// passes or long polling stops. When ctx ends first, the hold is dropped
// and the answer is PULL_NOT_FOUND at the offset the pull was held at. A
// full holder answers PULL_NOT_FOUND at once, as it answers a remoting
// pull. Any other request is served as ServeLocal serves it.
func (b *Broker) ServeLocalWait(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command {
	if req.Code != remoting.PullMessage && req.Code != remoting.LitePullMessage {
		return b.ServeLocal(ctx, peer, req)
	}
	w := &localPull{ctx: ctx, ch: make(chan *remoting.Command, 1)}
	resp := b.ServeLocal(context.WithValue(ctx, localPullKey{}, w), peer, req)
	if resp != nil || w.p == nil {
		return resp
	}
	select {
	case resp = <-w.ch:
		return resp
	case <-ctx.Done():
	}
	b.pulls.drop(w.p)
	select {
	case resp = <-w.ch: // answered while it was being dropped
		return resp
	default:
	}
	// Not w.p's offset: a worker that took it before the drop may be
	// reading it again (it then finds it gone and does not answer); its
	// key never changes.
	return b.pullNotFoundAt(req, w.p.key, w.offset)
}

// HeldPulls is how many pulls long polling holds now, the remoting
// port's and ServeLocalWait's.
func (b *Broker) HeldPulls() int64 { return b.pulls.heldNow() }

// Topic returns the topic's configuration in this node's replica.
func (b *Broker) Topic(name string) (metadata.TopicConfig, bool) {
	return b.group.Metadata().Topic(name)
}

// LeaderID is the node id of the group's leader as this node knows it,
// "" while it knows none.
func (b *Broker) LeaderID() string { return b.group.Role().LeaderID }
