package dledger_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/message"
)

// raftTLS loads files into the raft port's mutual TLS.
func raftTLS(t *testing.T, f tlsconf.Files) *dledger.RaftTLS {
	t.Helper()
	src, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := src.ServerConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	return &dledger.RaftTLS{Server: srv, Client: src.ClientConfig()}
}

// TestRaftTLSRefusesForeignNode: three nodes on real TCP with mutual TLS;
// n2's certificate is signed by another CA (it trusts the cluster's). n0 and n1 elect a leader and
// commit, n2 receives nothing, and node info between n2 and the others is
// refused both ways while it works between n0 and n1.
func TestRaftTLSRefusesForeignNode(t *testing.T) {
	dir := t.TempDir()
	good, err := tlsconf.WriteDev(filepath.Join(dir, "good"))
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, err := tlsconf.WriteTestFiles(dir, "foreign")
	if err != nil {
		t.Fatal(err)
	}
	var peers []dledger.Peer
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, dledger.Peer{ID: fmt.Sprintf("n%d", i), Addr: ln.Addr().String()})
		ln.Close()
	}
	groups := make([]*dledger.Group, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, p := range peers {
		f := good
		if i == 2 {
			// It trusts the cluster's CA, but its own certificate is
			// another CA's: only the mutual check can refuse it.
			f = tlsconf.Files{CertFile: foreign.CertFile, KeyFile: foreign.KeyFile, CAFile: good.CAFile}
		}
		cfg := dledger.Config{
			Group: "g", NodeID: p.ID, Peers: peers, BindAddr: p.Addr,
			DataDir: filepath.Join(dir, p.ID), Timing: dledger.TimingTest,
			StoreHost: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10911+10*i)),
			Store:     dledgertest.StoreConfig(), Stores: messagestore.Opener{}, TLS: raftTLS(t, f),
		}
		if i == 2 {
			// No member answers it (its certificate is refused), so
			// without data it would wait to learn the group's layout:
			// it starts as a node that has run before (raft's term and
			// vote on disk), which keeps its configured layout.
			if err := os.MkdirAll(filepath.Join(cfg.DataDir, "raft"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cfg.DataDir, "raft", "state.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Together, as a new group's processes start (a node without data
		// opens once a majority of the group answered).
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups[i], errs[i] = dledger.Open(cfg)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		defer groups[i].Close()
	}
	ctx := ctxT(t, 60*time.Second)
	for i := 0; i < 3; i++ {
		// Whichever good node leads now; a refusal as not the leader (the
		// proposal never entered the log) is tried again on the next.
		waitUntil(t, ctx, fmt.Sprintf("m%d stored by n0 or n1 as leader", i), func() bool {
			for _, g := range groups[:2] {
				if !g.IsLeader() {
					continue
				}
				_, err := g.Propose(ctx, oneMsg("T", fmt.Sprintf("m%d", i)))
				if err != nil && !errors.Is(err, dledger.ErrNotLeader) {
					t.Fatal(err)
				}
				return err == nil
			}
			return false
		})
	}
	waitUntil(t, ctx, "both good nodes hold the messages", func() bool {
		for _, g := range groups[:2] {
			if n, err := messagestore.Of(g).MaxOffset("T", 0); err != nil || n != 3 {
				return false
			}
		}
		return true
	})
	if n, _ := messagestore.Of(groups[2]).MaxOffset("T", 0); n != 0 || groups[2].IsLeader() {
		t.Fatalf("the foreign node holds %d messages (leader %v)", n, groups[2].IsLeader())
	}
	if _, err := groups[0].AskNodeInfoForTest(peers[1].Addr, 5*time.Second); err != nil {
		t.Fatalf("n0 to n1: %v", err)
	}
	if ni, err := groups[2].AskNodeInfoForTest(peers[0].Addr, 5*time.Second); err == nil {
		t.Fatalf("the foreign node was answered: %+v", ni)
	}
	if ni, err := groups[0].AskNodeInfoForTest(peers[2].Addr, 5*time.Second); err == nil {
		t.Fatalf("a good node accepted the foreign node's server certificate: %+v", ni)
	}
}

// oneMsg is a one-message batch on queue 0.
func oneMsg(topic, body string) []*message.Ext {
	return []*message.Ext{dledger.NewTestMsg(topic, 0, body)}
}
