package dledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
)

// TestOneLogDifferentSegmentSizeStops: with one log a node's CommitLog
// holds raft entries from the first one on, so a node configured with
// another segment size than the group's cannot be re-created with the
// group's geometry (as an empty two-log store is): it stops, naming the
// difference, and never writes at offsets the others do not.
func TestOneLogDifferentSegmentSizeStops(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, dledgertest.OneLog, func(i int, cfg *dledger.Config) {
		if i == 2 {
			cfg.Store.SegmentSize = 1 << 20
		}
	})
	ctx := ctxT(t, 60*time.Second)
	waitUntil(t, ctx, "a node to stop on the group's settings", func() bool {
		for _, n := range c.Nodes {
			select {
			case <-n.Group().Failed():
				return errors.Is(n.Group().Err(), dledger.ErrSettings)
			default:
			}
		}
		return false
	})
}
