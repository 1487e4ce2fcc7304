package dledger_test

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
)

// TestReplacedNodeTakesGroupLayout: a follower that lost its disk comes
// back configured for the other layout; it takes its group's from the
// members before it stores anything, so it never stops to convert, and
// ends byte-identical to them — for a group in each layout.
func TestReplacedNodeTakesGroupLayout(t *testing.T) {
	for _, groupOneLog := range []bool{false, true} {
		name := "wal group"
		if groupOneLog {
			name = "one-log group"
		}
		t.Run(name, func(t *testing.T) {
			c := dledgertest.MakeCluster(t, 3, snapshotHeavy, func(_ int, cfg *dledger.Config) { cfg.OneLog = groupOneLog })
			ctx := ctxT(t, 120*time.Second)
			leader, err := c.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			l := startPaddedLoad(c, 4, 900, "T")
			l.waitAcked(t, 200, 30*time.Second)
			lost := followerOf(c, leader)
			if err := c.Stop(lost.ID); err != nil {
				t.Fatal(err)
			}
			if err := c.Wipe(lost.ID); err != nil {
				t.Fatal(err)
			}
			lost.Cfg.OneLog = !groupOneLog
			if err := c.Restart(lost.ID); err != nil {
				t.Fatal(err)
			}
			if got := messagestore.Of(lost.Group()).OneLog(); got != groupOneLog {
				t.Fatalf("%s runs one log %v, its group %v", lost.ID, got, groupOneLog)
			}
			l.waitAcked(t, l.ackedCount()+200, 30*time.Second)
			select {
			case <-lost.Group().Failed():
				t.Fatalf("%s stopped: %v", lost.ID, lost.Group().Err())
			default:
			}
			finishSupervised(t, ctx, c, l, "T")
		})
	}
}
