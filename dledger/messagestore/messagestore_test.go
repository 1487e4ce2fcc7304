package messagestore_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// TestOpenerOpensTheStore: the opener opens the product's store (a
// two-log store, then marked one-log), and a group opened with it
// replicates into a *store.Store that Of reads back.
func TestOpenerOpensTheStore(t *testing.T) {
	dir := t.TempDir()
	var o messagestore.Opener
	if one, err := o.HasOneLog(dir); err != nil || one {
		t.Fatalf("empty dir: one log %v, %v", one, err)
	}
	cfg := dledgertest.StoreConfig()
	cfg.Dir = dir
	s, err := o.OpenStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*store.Store); !ok {
		t.Fatalf("OpenStore returned %T, want *store.Store", s)
	}
	if _, err := s.(*store.Store).Put(1, []*message.Ext{testMsg("x")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if segs, err := o.HasCommitLog(dir); err != nil || !segs {
		t.Fatalf("after a write: commitlog %v, %v", segs, err)
	}
	if err := o.ConvertToOneLog(dir); err != nil {
		t.Fatal(err)
	}
	if one, err := o.HasOneLog(dir); err != nil || !one {
		t.Fatalf("after conversion: one log %v, %v", one, err)
	}

	c := dledgertest.MakeNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Group().Propose(ctx, []*message.Ext{testMsg("y")}); err != nil {
		t.Fatal(err)
	}
	st := messagestore.Of(n.Group())
	if st == nil {
		t.Fatal("Of: nil for a group opened with Opener")
	}
	if max, err := st.MaxOffset("T", 0); err != nil || max != 1 {
		t.Fatalf("max offset %d, %v; want 1", max, err)
	}
}

func testMsg(body string) *message.Ext {
	return &message.Ext{Message: message.Message{Topic: "T", Body: []byte(body)}, BornTimestamp: 1_700_000_000_000,
		BornHost: netip.MustParseAddrPort("127.0.0.1:50000"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911")}
}

// TestGroupNeedsAnOpener: a group without Config.Stores does not start.
func TestGroupNeedsAnOpener(t *testing.T) {
	_, err := dledger.Open(dledger.Config{Group: "g", NodeID: "n0", DataDir: t.TempDir(), BindAddr: "127.0.0.1:0",
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), Store: dledgertest.StoreConfig()})
	if !errors.Is(err, dledger.ErrBadConfig) || !strings.Contains(err.Error(), "Stores") {
		t.Fatalf("open without Stores: %v, want ErrBadConfig naming Stores", err)
	}
}
