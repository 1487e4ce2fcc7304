package devcluster

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Leader returns the address the name server at namesrv lists as brokerId 0
// of group, or "" when it lists none.
func Leader(ctx context.Context, c *remoting.Client, namesrv, group string) (string, error) {
	resp, err := c.Invoke(ctx, namesrv, protocol.ClusterInfoRequest())
	if err != nil {
		return "", err
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("%w: cluster info: code %d %s", ErrNamesrv, resp.Code, resp.Remark)
	}
	info, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		return "", fmt.Errorf("%w: cluster info: %w", ErrNamesrv, err)
	}
	bd := info.BrokerAddrTable[group]
	addr, _ := bd.LeaderAddr()
	return addr, nil
}
