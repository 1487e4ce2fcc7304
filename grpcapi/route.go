package grpcapi

import (
	"context"
	"net/netip"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
)

// acceptedTypes are the message types every queue accepts: the broker's
// topics carry no message type, so any topic takes all four (RocketMQ's
// MIXED topics).
var acceptedTypes = []v2pb.MessageType{v2pb.MessageType_NORMAL, v2pb.MessageType_FIFO,
	v2pb.MessageType_DELAY, v2pb.MessageType_TRANSACTION}

// QueryRoute answers the topic's queues in this node's broker group, each
// with the broker (the group's name, id 0: the node serving writes) at
// the gRPC endpoint of the group's leader, or this node's own when the
// leader's is not known (this node then forwards what it is sent). The
// client's endpoints may name any node of the group, as a proxy's would.
func (s *Server) QueryRoute(_ context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	topic := topicName(req.GetTopic())
	if topic == "" {
		return &v2pb.QueryRouteResponse{Status: newStatus(v2pb.Code_ILLEGAL_TOPIC, "no topic named")}, nil
	}
	tc, ok := s.cfg.Broker.Topic(topic)
	if !ok {
		return &v2pb.QueryRouteResponse{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic %s does not exist", topic)}, nil
	}
	broker := &v2pb.Broker{Name: s.cfg.BrokerName, Id: 0, Endpoints: endpointsOf(s.writeEndpoint())}
	n := max(tc.ReadQueueNums, tc.WriteQueueNums)
	mqs := make([]*v2pb.MessageQueue, 0, n)
	for i := int32(0); i < n; i++ {
		mqs = append(mqs, &v2pb.MessageQueue{
			Topic:              req.GetTopic(),
			Id:                 i,
			Permission:         permission(tc, i),
			Broker:             broker,
			AcceptMessageTypes: acceptedTypes,
		})
	}
	return &v2pb.QueryRouteResponse{Status: okStatus(), MessageQueues: mqs}, nil
}

// writeEndpoint is the gRPC address of the node serving writes: the
// leader's when Config.Peers names it, else this node's.
func (s *Server) writeEndpoint() netip.AddrPort {
	if id := s.cfg.Broker.LeaderID(); id != "" {
		if ap, err := netip.ParseAddrPort(s.cfg.Peers[id]); err == nil {
			return ap
		}
	}
	return s.selfEndpoint()
}

// endpointsOf is one address as the protocol's Endpoints.
func endpointsOf(ap netip.AddrPort) *v2pb.Endpoints {
	scheme := v2pb.AddressScheme_IPv4
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		scheme = v2pb.AddressScheme_IPv6
	}
	return &v2pb.Endpoints{Scheme: scheme, Addresses: []*v2pb.Address{{Host: ap.Addr().Unmap().String(), Port: int32(ap.Port())}}}
}

// permission is queue i's: readable below ReadQueueNums and with the
// topic's read permission, writable likewise.
func permission(tc metadata.TopicConfig, i int32) v2pb.Permission {
	r := tc.Perm&metadata.PermRead != 0 && i < tc.ReadQueueNums
	w := tc.Perm&metadata.PermWrite != 0 && i < tc.WriteQueueNums
	switch {
	case r && w:
		return v2pb.Permission_READ_WRITE
	case r:
		return v2pb.Permission_READ
	case w:
		return v2pb.Permission_WRITE
	default:
		return v2pb.Permission_NONE
	}
}
