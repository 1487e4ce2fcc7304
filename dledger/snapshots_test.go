package dledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

// TestSnapshotByBytes: with raft's entry threshold out of reach, a node
// still takes a snapshot once SnapshotBytes of entries were appended to
// its raft log since the last one, on every node (followers append the
// same entries).
func TestSnapshotByBytes(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(_ int, cfg *dledger.Config) {
		cfg.SnapshotThreshold = 1 << 30
		cfg.SnapshotInterval = time.Hour
		cfg.SnapshotBytes = 64 << 10
	})
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("b", 4<<10))
	for i := 0; i < 40; i++ { // 160 KiB of bodies, one entry each
		m := dledger.NewTestMsg("T", 0, "k")
		m.Body = body
		if _, err := leader.Group().Propose(ctx, []*message.Ext{m}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, ctx, "a snapshot on every node", func() bool {
		for _, n := range c.Up() {
			if n.Group().Status().Snapshots == 0 {
				return false
			}
		}
		return true
	})
}
