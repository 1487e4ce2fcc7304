package grpcapi

import (
	"context"
	"net/netip"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/remoting"
)

// localBackend is the server of a broker node: its answers come from the
// node's broker (Config.Broker), its one broker group Config.BrokerName.
type localBackend struct {
	s *Server
}

// routes: the topic's queues in the node's replica, at the gRPC endpoint
// of the group's leader, or this node's own when the leader's is not
// known (this node then forwards what it is sent). The client's
// endpoints may name any node of the group, as a proxy's would.
func (l localBackend) routes(_ context.Context, topic string) ([]groupRoute, error) {
	tc, ok := l.s.cfg.Broker.Topic(topic)
	if !ok {
		return nil, errTopicNotFound
	}
	return []groupRoute{{name: l.s.cfg.BrokerName, tc: tc, endpoint: l.writeEndpoint()}}, nil
}

// writeEndpoint is the gRPC address of the node serving writes: the
// leader's when Config.Peers names it, else this node's.
func (l localBackend) writeEndpoint() netip.AddrPort {
	if id := l.s.cfg.Broker.LeaderID(); id != "" {
		if ap, err := netip.ParseAddrPort(l.s.cfg.Peers[id]); err == nil {
			return ap
		}
	}
	return l.s.selfEndpoint()
}

// serve: the broker serves the request as its remoting port would (a
// follower forwards it to the leader); a pull it holds is answered on
// this goroutine when it ends (ServeLocalWait), its hold dropped when ctx
// ends.
func (l localBackend) serve(ctx context.Context, from netip.AddrPort, _, _ string, req *remoting.Command) *remoting.Command {
	return l.s.cfg.Broker.ServeLocalWait(ctx, from, req)
}

func (l localBackend) consumerRelay(ctx context.Context, _, _, _ string) (v2pb.MessagingServiceClient, context.Context, error) {
	c, fctx := l.s.leaderClient(ctx)
	return c, fctx, nil
}

func (l localBackend) relayFailed(string, string) {}

// admitting: the node's one group, whose rules checked the call already.
func (l localBackend) admitting(_ context.Context, routes []groupRoute, _ *remoting.Command) []groupRoute {
	return routes
}

func (l localBackend) popper() Popper { return l.s.cfg.Broker }

func (l localBackend) maxAttempts(group string) int32 { return l.s.cfg.Broker.PopMaxAttempts(group) }

func (l localBackend) fifo(group string) bool { return l.s.cfg.Broker.PopOrderly(group) }

func (l localBackend) addTxnAsker(ask broker.TxnAsker) func() {
	return l.s.cfg.Broker.AddTxnAsker(ProducerGroup, ask)
}

func (l localBackend) close() {}
