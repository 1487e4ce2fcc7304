package grpcapi

import (
	"context"
	"errors"
	"hash/fnv"
	"net/netip"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// The server's two shapes share every handler; what differs is where the
// answers come from, the backend:
//
//   - local (local.go): the node's own broker, one broker group; consumer
//     calls are served by its Popper, or relayed to the leader's gRPC
//     port by a follower (forward.go);
//   - cluster (cluster.go): every broker group the name servers know,
//     reached over the network; producer requests go to the group's
//     leader over remoting, consumer calls are relayed to its gRPC port.

// backend is where the handlers' answers come from.
type backend interface {
	// routes are the topic's queues by broker group, each with the
	// endpoint clients are told; an error wrapping errTopicNotFound when
	// no group serves the topic.
	routes(ctx context.Context, topic string) ([]groupRoute, error)
	// serve sends a remoting request (a send, an end of transaction, a
	// pull) of topic to broker group group and answers the group's
	// response. A PULL_MESSAGE with the suspend flag may be held by the
	// broker: serve then returns when the held pull is answered (a
	// message came, its suspend timeout passed) or when ctx ends.
	serve(ctx context.Context, from netip.AddrPort, topic, group string, req *remoting.Command) *remoting.Command
	// consumerRelay is the gRPC port a consumer call of consumerGroup on
	// topic in broker group group is relayed to, with the context to call
	// it with; a nil client means the call is served here (popper). With
	// group "" it picks one of the topic's readable groups.
	consumerRelay(ctx context.Context, consumerGroup, topic, group string) (v2pb.MessagingServiceClient, context.Context, error)
	// admitting are the routes of the groups whose own access rules
	// allow req, what a call amounts to (all when none does); a node's
	// port serves one group and has checked the call already.
	admitting(ctx context.Context, routes []groupRoute, req *remoting.Command) []groupRoute
	// relayFailed reports that a relay to group failed: the route it
	// took may name a leader that is gone.
	relayFailed(topic, group string)
	// popper serves the consumer calls that are not relayed (nil: all
	// are).
	popper() Popper
	// maxAttempts is the consumer group's retry max.
	maxAttempts(consumerGroup string) int32
	// fifo reports whether the consumer group is a FIFO group.
	fifo(consumerGroup string) bool
	// addTxnAsker puts a producer of ProducerGroup on the transaction
	// check-back's list (orphan.go); remove takes it off.
	addTxnAsker(ask broker.TxnAsker) (remove func())
	// close releases what the backend holds (Stop).
	close()
}

// errTopicNotFound is a topic no broker group serves.
var errTopicNotFound = errors.New("grpcapi: topic does not exist")

// groupRoute is one broker group's queues of a topic.
type groupRoute struct {
	// name is the broker group's name.
	name string
	// tc has the queue counts and the permission.
	tc metadata.TopicConfig
	// endpoint is the gRPC address clients reach the group at.
	endpoint netip.AddrPort
}

// routesStatus is the Status of a routes error.
func routesStatus(topic string, err error) *v2pb.Status {
	if errors.Is(err, errTopicNotFound) {
		return newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic %s does not exist", topic)
	}
	return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the route of topic %s: %v", topic, err)
}

// pickQueue picks the broker group and queue of a message, as RocketMQ's
// proxy does (clients' queue ids are not taken: the Node.js client, for
// one, only ever names queue 0): a message group always goes to the same
// writable queue (among the writable queues of every group, in route
// order), so that the group stays in order; any other message to the
// writable groups in turn, at queue -1 (the broker picks a writable
// queue at random). With no writable queue the first group is named, and
// its broker refuses.
func pickQueue(routes []groupRoute, msgGroup string, turn uint32) (string, int32) {
	var writable []groupRoute
	total := uint32(0)
	for _, r := range routes {
		if r.tc.Perm&metadata.PermWrite != 0 && r.tc.WriteQueueNums > 0 {
			writable = append(writable, r)
			total += uint32(r.tc.WriteQueueNums)
		}
	}
	switch {
	case len(writable) == 0 && len(routes) > 0:
		return routes[0].name, -1
	case len(writable) == 0:
		return "", -1
	case msgGroup == "":
		return writable[turn%uint32(len(writable))].name, -1
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(msgGroup))
	i := h.Sum32() % total
	for _, r := range writable {
		if n := uint32(r.tc.WriteQueueNums); i >= n {
			i -= n
			continue
		}
		return r.name, int32(i)
	}
	return writable[0].name, -1
}

// readableGroup is the group a consumer call goes to when the client
// names none: the readable groups in turn.
func readableGroup(routes []groupRoute, turn uint32) string {
	var names []string
	for _, r := range routes {
		if r.tc.Perm&metadata.PermRead != 0 && r.tc.ReadQueueNums > 0 {
			names = append(names, r.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[turn%uint32(len(names))]
}
