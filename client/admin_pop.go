package client

import (
	"context"

	"github.com/ledgermq/ledgermq/protocol"
)

// PopState returns the POP state of broker group brokerGroup (""= the
// only one), asked of its leader (LEDGERMQ_LIST_POP_STATE, 4014): per
// consumer group and topic, the messages in flight, how many of them are
// due again and the oldest invisible-until, sorted by group and topic. h
// keeps one consumer group or topic when it names them, and its Limit
// bounds the rows (0: the broker's default of 20; at most 1000); Count is
// every row that matches.
func (a *Admin) PopState(ctx context.Context, brokerGroup string, h protocol.PopStateHeader) (protocol.PopState, error) {
	resp, err := a.askLeader(ctx, brokerGroup, h.Request())
	if err != nil {
		return protocol.PopState{}, err
	}
	return protocol.DecodePopState(resp.Body)
}
