package dledger_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

type countingObserver struct{ appends, bytes atomic.Int64 }

func (o *countingObserver) LogStored(_, bytes int, _ time.Duration) {
	o.appends.Add(1)
	o.bytes.Add(int64(bytes))
}

// TestLogObserverHearsAppends: every raft log write reaches the
// LogObserver, with the entries' bytes.
func TestLogObserverHearsAppends(t *testing.T) {
	obs := &countingObserver{}
	c := dledgertest.MakeNode(t, func(_ int, c *dledger.Config) { c.LogObserver = obs })
	ctx := ctxT(t, 30*time.Second)
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := l.Group()
	before := obs.bytes.Load()
	if _, err := g.Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "observed")}); err != nil {
		t.Fatal(err)
	}
	if obs.appends.Load() == 0 || obs.bytes.Load() <= before {
		t.Fatalf("appends %d, bytes %d (before %d)", obs.appends.Load(), obs.bytes.Load(), before)
	}
}
