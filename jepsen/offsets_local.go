//go:build unix

package jepsen

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// NodeOffsets asks node id (at its own address) for group's committed
// offset of every queue of topic as that node holds them
// (GET_CONSUME_STATS answers from the node's own replicated state, with
// commits pending there; QUERY_CONSUMER_OFFSET is served by the leader
// only, so it cannot show one replica's view).
func (c *Cluster) NodeOffsets(ctx context.Context, id, group, topic string, timeout time.Duration) (map[int32]int64, error) {
	nd := c.node(id)
	if nd == nil {
		return nil, fmt.Errorf("%w: no node %q", ErrCluster, id)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := protocol.ConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}
	resp, err := c.status.Invoke(rctx, nd.Addr, remoting.NewRequest(remoting.GetConsumeStats, h.Encode(), nil))
	if err != nil {
		return nil, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return nil, err
	}
	st, err := protocol.DecodeConsumeStats(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for mq, w := range st.OffsetTable {
		if mq.Topic == topic {
			out[mq.QueueID] = w.ConsumerOffset
		}
	}
	return out, nil
}
