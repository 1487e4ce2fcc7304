package brokertest

import (
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
)

// StartClusterWith is StartCluster with options for the raft group's
// nodes as well (snapshot thresholds, segment sizes), applied after the
// cluster's own.
func StartClusterWith(t testing.TB, n int, opt func(i int, c *broker.Config), raftOpts ...dledgertest.ClusterOption) *Cluster {
	t.Helper()
	return startCluster(t, n, opt, func(cfg dledgertest.ClusterOption) *dledgertest.Cluster {
		return dledgertest.MakeCluster(t, n, append([]dledgertest.ClusterOption{cfg}, raftOpts...)...)
	})
}

// StableLeader gives the group's nodes dledger.TimingDefault (a one-second
// heartbeat timeout) instead of the test timing's 200 ms, for tests that
// hold one leader's and one follower's addresses from start to end: on a
// loaded machine the test timing lets an election move the lead between
// two requests.
func StableLeader(_ int, c *dledger.Config) { c.Timing = dledger.TimingDefault }
