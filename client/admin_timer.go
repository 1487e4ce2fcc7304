package client

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Pending work of a broker group: timer messages not yet delivered and
// transactions not yet decided (ledgermq's requests 4010 and 4011, asked
// of the group's leader).

// PendingTimers returns how many timer messages group (""= the only one)
// holds undelivered, the earliest due time, and the first limit of them
// in delivery order (0: the broker's default of 20; at most 1000).
func (a *Admin) PendingTimers(ctx context.Context, group string, limit int) (protocol.PendingTimers, error) {
	resp, err := a.askLeader(ctx, group, protocol.PendingListHeader{Limit: limit}.Request(remoting.ListPendingTimers))
	if err != nil {
		return protocol.PendingTimers{}, err
	}
	return protocol.DecodePendingTimers(resp.Body)
}

// PendingTransactions returns how many transactions group holds undecided
// and the oldest limit of them, with their age, check count and producer
// group.
func (a *Admin) PendingTransactions(ctx context.Context, group string, limit int) (protocol.PendingTransactions, error) {
	resp, err := a.askLeader(ctx, group, protocol.PendingListHeader{Limit: limit}.Request(remoting.ListPendingTransactions))
	if err != nil {
		return protocol.PendingTransactions{}, err
	}
	return protocol.DecodePendingTransactions(resp.Body)
}

// askLeader sends req to the leader of group and wants SUCCESS.
func (a *Admin) askLeader(ctx context.Context, group string, req *remoting.Command) (*remoting.Command, error) {
	g, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return nil, err
	}
	if ls.LeaderAddr == "" {
		return nil, fmt.Errorf("%w: group %s: its leader %s names no client address", ErrLeaderNotFound, g, ls.Leader)
	}
	return a.call(ctx, ls.LeaderAddr, req, 0)
}
