package dledger_test

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
)

func FuzzDecodeNodeInfo(f *testing.F) {
	b, _ := json.Marshal(dledger.NodeInfo{Node: "n1", MinVersion: 1, MaxVersion: 2})
	f.Add(b)
	f.Add([]byte(`{"node":"","minVersion":3,"maxVersion":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ni, err := dledger.DecodeNodeInfo(b)
		if err != nil {
			return
		}
		if ni.Node == "" || ni.MinVersion < 1 || ni.MaxVersion < ni.MinVersion {
			t.Fatalf("accepted %+v", ni)
		}
	})
}

// TestGroupOverTCP: a node on the plain TCP transport (as `ledgermq
// broker` runs it) serves raft and node info on one port.
func TestGroupOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	g, err := dledger.Open(dledger.Config{
		Group: "g", NodeID: "n0", Peers: []dledger.Peer{{ID: "n0", Addr: addr}}, BindAddr: addr,
		DataDir: filepath.Join(t.TempDir(), "n0"), Timing: dledger.TimingTest,
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), Store: dledgertest.StoreConfig(), Stores: messagestore.Opener{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := ctxT(t, 30*time.Second)
	waitUntil(t, ctx, "the node leads", g.IsLeader)
	if _, err := g.Propose(context.Background(), []*message.Ext{dledger.NewTestMsg("T", 0, "x")}); err != nil {
		t.Fatal(err)
	}
	// The log may grow while the node answers (a single node raises the
	// group's version on its own, an entry of its own), so the length it
	// says lies between the lengths read before and after asking.
	before := g.Raft().LastIndex()
	ni, err := g.AskNodeInfoForTest(addr, time.Second)
	after := g.Raft().LastIndex()
	// A leader says its term and how long its log is (abstain.go).
	want := dledger.NodeInfo{Node: "n0", MinVersion: 1, MaxVersion: dledger.FormatVersionMax, Layout: "wal",
		Leader: true, Term: g.Raft().CurrentTerm(), LastIndex: ni.LastIndex}
	if err != nil || ni != want || ni.LastIndex < before || ni.LastIndex > after || ni.LastIndex == 0 {
		t.Fatalf("node info %+v, %v; want %+v with a log length in [%d, %d]", ni, err, want, before, after)
	}
	// A single node raises the group's version on its own.
	waitUntil(t, ctx, "version 2", func() bool { return g.FormatVersion() == dledger.FormatVersionMax })
}
