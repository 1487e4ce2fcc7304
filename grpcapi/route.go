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

// QueryRoute answers the topic's queues in every broker group serving it
// (a node's own group; in cluster mode every group the name servers
// list), each with the broker (the group's name, id 0: the node serving
// writes) at the gRPC endpoint clients reach the group at (backend.go).
func (s *Server) QueryRoute(ctx context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	topic := topicName(req.GetTopic())
	if topic == "" {
		return &v2pb.QueryRouteResponse{Status: newStatus(v2pb.Code_ILLEGAL_TOPIC, "no topic named")}, nil
	}
	routes, err := s.be.routes(ctx, topic)
	if err != nil {
		return &v2pb.QueryRouteResponse{Status: routesStatus(topic, err)}, nil
	}
	var mqs []*v2pb.MessageQueue
	for _, r := range routes {
		broker := &v2pb.Broker{Name: r.name, Id: 0, Endpoints: endpointsOf(r.endpoint)}
		n := max(r.tc.ReadQueueNums, r.tc.WriteQueueNums)
		for i := int32(0); i < n; i++ {
			mqs = append(mqs, &v2pb.MessageQueue{
				Topic:              req.GetTopic(),
				Id:                 i,
				Permission:         permission(r.tc, i),
				Broker:             broker,
				AcceptMessageTypes: acceptedTypes,
			})
		}
	}
	return &v2pb.QueryRouteResponse{Status: okStatus(), MessageQueues: mqs}, nil
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
