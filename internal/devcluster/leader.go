package devcluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

// Leader returns the address the name server at namesrv lists as brokerId 0
// of group, or "" when it lists none.
func Leader(ctx context.Context, c *remoting.Client, namesrv, group string) (string, error) {
	resp, err := c.Invoke(ctx, namesrv, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		return "", err
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("%w: cluster info: code %d %s", ErrNamesrv, resp.Code, resp.Remark)
	}
	var info routing.ClusterInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return "", fmt.Errorf("%w: cluster info: %w", ErrNamesrv, err)
	}
	return info.BrokerAddrTable[group].BrokerAddrs[0], nil
}
