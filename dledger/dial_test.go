package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// testDNS answers the names of a test's nodes (n0.test …) with loopback
// addresses the test changes, as a cluster's DNS does for a pod that
// comes back at another IP.
type testDNS struct {
	mu    sync.Mutex
	hosts map[string]string
	asked map[string]int
}

func newTestDNS() *testDNS { return &testDNS{hosts: map[string]string{}, asked: map[string]int{}} }

func (d *testDNS) LookupHost(_ context.Context, host string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked[host]++
	ip, ok := d.hosts[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []string{ip}, nil
}

func (d *testDNS) set(host, ip string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hosts[host] = ip
}

func (d *testDNS) lookups(host string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked[host]
}

// portOn2 picks a TCP port free on both 127.0.0.1 and 127.0.0.2, so a
// node can move from one to the other keeping its port (its name and
// port are its raft address).
func portOn2(t *testing.T) int {
	t.Helper()
	for range 20 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		a.Close()
		if err == nil {
			b.Close()
			return port
		}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

// proposeOnLeader stores one message through whichever of groups leads,
// trying again while none does.
func proposeOnLeader(t *testing.T, ctx context.Context, groups []*dledger.Group, body string) {
	t.Helper()
	waitUntil(t, ctx, body+" stored through the leader", func() bool {
		for _, g := range groups {
			if g == nil || !g.IsLeader() {
				continue
			}
			_, err := g.Propose(ctx, oneMsg("T", body))
			if err != nil && !retryable(err) {
				t.Fatal(err)
			}
			return err == nil
		}
		return false
	})
}

// TestRaftPeersByNameFollowNewAddress: three nodes on real TCP whose raft
// addresses are names (n0.test:P …) a test resolver answers. n2 stops,
// the others go on, and n2 comes back on another loopback address with
// the same name and port; once its name answers the new address, the
// others reach it: it catches up, can lead, and is known as leader by its
// name, and node info reaches it by name too.
func TestRaftPeersByNameFollowNewAddress(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[withTLS], func(t *testing.T) {
			testPeersByName(t, withTLS)
		})
	}
}

func testPeersByName(t *testing.T, withTLS bool) {
	dir := t.TempDir()
	var rt func() *dledger.RaftTLS
	if withTLS {
		files, err := tlsconf.WriteDev(filepath.Join(dir, "tls"))
		if err != nil {
			t.Fatal(err)
		}
		rt = func() *dledger.RaftTLS {
			c := raftTLS(t, files)
			// The dev certificate names localhost; the peers' names are
			// the test's own.
			c.Client.ServerName = "localhost"
			return c
		}
	}
	dns := newTestDNS()
	ports := make([]int, 3)
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	ports[2] = portOn2(t)
	var peers []dledger.Peer
	for i, port := range ports {
		id := fmt.Sprintf("n%d", i)
		dns.set(id+".test", "127.0.0.1")
		peers = append(peers, dledger.Peer{ID: id, Addr: fmt.Sprintf("%s.test:%d", id, port)})
	}
	config := func(i int, ip string) dledger.Config {
		cfg := dledger.Config{
			Group: "g", NodeID: peers[i].ID, Peers: peers,
			BindAddr: fmt.Sprintf("%s:%d", ip, ports[i]), AdvertiseAddr: peers[i].Addr, Resolver: dns,
			DataDir: filepath.Join(dir, peers[i].ID), Timing: dledger.TimingTest,
			StoreHost: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10911+10*i)),
			Store:     dledgertest.StoreConfig(),
			Stores:    messagestore.Opener{},
		}
		if rt != nil {
			cfg.TLS = rt()
		}
		return cfg
	}
	groups := make([]*dledger.Group, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups[i], errs[i] = dledger.Open(config(i, "127.0.0.1"))
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, g := range groups {
			if g != nil {
				g.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 90*time.Second)
	holds := func(g *dledger.Group, n int64) bool {
		got, err := messagestore.Of(g).MaxOffset("T", 0)
		return err == nil && got == n
	}
	proposeOnLeader(t, ctx, groups, "m0")
	waitUntil(t, ctx, "every node holds m0", func() bool {
		return holds(groups[0], 1) && holds(groups[1], 1) && holds(groups[2], 1)
	})

	// n2 goes; its old address stays silent from now on.
	if err := groups[2].Close(); err != nil {
		t.Fatal(err)
	}
	groups[2] = nil
	for i := 1; i <= 5; i++ {
		proposeOnLeader(t, ctx, groups[:2], fmt.Sprintf("m%d", i))
	}
	// It comes back at 127.0.0.2, same name and port, and its name then
	// answers the new address.
	g2, err := dledger.Open(config(2, "127.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	groups[2] = g2
	before := dns.lookups("n2.test")
	dns.set("n2.test", "127.0.0.2")
	waitUntil(t, ctx, "n2 caught up at its new address", func() bool { return holds(g2, 6) })
	if dns.lookups("n2.test") == before {
		t.Fatal("n2 was reached without resolving its name")
	}

	// It can lead: leadership handed to it, the others follow it and know
	// it by its name.
	waitUntil(t, ctx, "n2 leads", func() bool {
		if g2.IsLeader() {
			return true
		}
		for _, g := range groups[:2] {
			if g.IsLeader() {
				tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := g.TransferLeadership(tctx, "n2")
				cancel()
				if err != nil {
					t.Logf("transfer to n2: %v", err)
				}
			}
		}
		return false
	})
	proposeOnLeader(t, ctx, groups[2:], "m6")
	waitUntil(t, ctx, "n0 and n1 hold m6 from n2", func() bool {
		return holds(groups[0], 7) && holds(groups[1], 7)
	})
	for _, g := range groups[:2] {
		if ev := g.Role(); ev.LeaderID != "n2" || ev.LeaderAddr != peers[2].Addr {
			t.Fatalf("leader known as %s at %q, want n2 at %q", ev.LeaderID, ev.LeaderAddr, peers[2].Addr)
		}
	}
	ni, err := groups[0].AskNodeInfoForTest(peers[2].Addr, 5*time.Second)
	if err != nil || ni.Node != "n2" {
		t.Fatalf("node info from %s: %+v, %v", peers[2].Addr, ni, err)
	}
}
