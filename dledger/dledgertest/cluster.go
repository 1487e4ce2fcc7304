package dledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/faultnet"
	"github.com/ledgermq/ledgermq/store"
)

// Cluster is a broker group of real raft nodes in this process, talking
// TCP over loopback through a fault-injecting network, each with its own
// temporary directory. Tests of dledger, of the broker and the chaos
// harness use it.
type Cluster struct {
	T testing.TB
	// Net is the fault-injecting network of MakeCluster's nodes; nil for
	// MakeNode's, whose raft layer is in memory (mem).
	Net   *faultnet.Network
	mem   *MemNet
	Nodes []*Node
	mu    sync.Mutex
}

// Node is one member of a Cluster.
type Node struct {
	ID    string
	Addr  string
	Cfg   dledger.Config
	group atomic.Pointer[dledger.Group]
}

// Group is the node's running group, nil while the node is down.
func (n *Node) Group() *dledger.Group { return n.group.Load() }

// ClusterOption adjusts every node's Config before it starts.
type ClusterOption func(i int, c *dledger.Config)

// OneLog makes the CommitLog every node's raft log (dledger.Config.OneLog),
// whatever LEDGERMQ_TEST_TWO_LOG says.
func OneLog(_ int, c *dledger.Config) { c.OneLog = true }

// StoreConfig is a store configuration with small files for tests.
func StoreConfig() store.Config {
	c := store.DefaultConfig("")
	c.SegmentSize = 4 << 20
	c.IndexSlots = 1024
	c.IndexEntries = 1 << 16
	c.MaxMessageSize = 256 << 10
	// Retention by disk use would depend on the test machine's disk (a
	// host at 80 % deletes old segments at once); tests that want it set it.
	c.DiskMaxUsedSpaceRatio = 1
	return c
}

// MakeCluster starts an n-node group and registers its shutdown with
// t.Cleanup. Set LEDGERMQ_TEST_LOG=debug (or info) to see the nodes' logs.
func MakeCluster(t testing.TB, n int, opts ...ClusterOption) *Cluster {
	t.Helper()
	c := &Cluster{T: t, Net: faultnet.NewNetwork()}
	c.make(n, dledger.TimingTest, opts)
	return c
}

// TimingSingle is the timing of MakeNode's one-node group: with no peer
// to lose or to hear from, a short timeout only makes the node elect
// itself at once; its leadership never lapses (it is its own quorum).
var TimingSingle = dledger.Timing{Name: "single", HeartbeatTimeout: 20 * time.Millisecond,
	ElectionTimeout: 20 * time.Millisecond, LeaderLease: 10 * time.Millisecond, CommitTimeout: 5 * time.Millisecond}

// MakeNode starts a one-node group ("n0") on an in-memory raft layer
// (MemNet) with TimingSingle: a real dledger.Group (raft, raft log, FSM
// and store on disk) for tests that need neither replication nor
// failover, without a socket and without a cluster's election time.
// Kill, Restart and Close work as on MakeCluster's groups.
func MakeNode(t testing.TB, opts ...ClusterOption) *Cluster {
	t.Helper()
	c := &Cluster{T: t, mem: NewMemNet()}
	c.make(1, TimingSingle, opts)
	return c
}

// listen opens node id's raft layer: on the fault-injecting network at
// addr, or in memory (where addr is ignored: the node's name is its
// address).
func (c *Cluster) listen(id, addr string) (raft.StreamLayer, error) {
	if c.mem != nil {
		return c.mem.Listen("mem-" + id)
	}
	return c.Net.Listen(id, addr)
}

func (c *Cluster) make(n int, timing dledger.Timing, opts []ClusterOption) {
	t := c.T
	// The directory is taken before Close is registered: cleanups run last
	// in, first out, so the nodes stop before their files are removed.
	base := t.TempDir()
	t.Cleanup(c.Close)
	layers := make([]raft.StreamLayer, n)
	var peers []dledger.Peer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		l, err := c.listen(id, "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen %s: %v", id, err)
		}
		layers[i] = l
		peers = append(peers, dledger.Peer{ID: id, Addr: l.Addr().String()})
	}
	var logger hclog.Logger = hclog.NewNullLogger()
	if lvl := os.Getenv("LEDGERMQ_TEST_LOG"); lvl != "" {
		logger = hclog.New(&hclog.LoggerOptions{Level: hclog.LevelFromString(lvl), Output: os.Stderr})
	}
	for i := 0; i < n; i++ {
		cfg := dledger.Config{
			Group:     "g",
			NodeID:    peers[i].ID,
			Peers:     peers,
			DataDir:   filepath.Join(base, peers[i].ID),
			Timing:    timing,
			StoreHost: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10911+10*i)),
			Store:     StoreConfig(),
			Stores:    messagestore.Opener{},
			Logger:    logger.With("node", peers[i].ID),
			// The CommitLog is the raft log, as with the product's
			// default (raft.log = commitlog); LEDGERMQ_TEST_TWO_LOG=1
			// runs every group test in the wal layout instead.
			OneLog: os.Getenv("LEDGERMQ_TEST_TWO_LOG") != "1",
		}
		for _, o := range opts {
			o(i, &cfg)
		}
		c.Nodes = append(c.Nodes, &Node{ID: peers[i].ID, Addr: peers[i].Addr, Cfg: cfg})
	}
	// All at once, as a new group's processes start: a node without data
	// opens once a majority of its group has answered (its layout).
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, node := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(node, layers[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %s: %v", c.Nodes[i].ID, err)
		}
	}
}

func (c *Cluster) start(n *Node, l raft.StreamLayer) error {
	cfg := n.Cfg
	cfg.StreamLayer = l
	g, err := dledger.Open(cfg)
	if err != nil {
		l.Close()
		return err
	}
	n.group.Store(g)
	return nil
}

// Node returns the node with the given id.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Up returns the nodes that are running.
func (c *Cluster) Up() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.Nodes {
		if n.Group() != nil {
			out = append(out, n)
		}
	}
	return out
}

// Leader waits until exactly one running node is a writable leader and
// returns it.
func (c *Cluster) Leader(ctx context.Context) (*Node, error) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		var leaders []*Node
		for _, n := range c.Up() {
			if g := n.Group(); g != nil && g.IsLeader() {
				leaders = append(leaders, n)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dledgertest: no single leader (%d): %w", len(leaders), ctx.Err())
		case <-t.C:
		}
	}
}

// Kill stops a node as kill -9 would (no flush, no clean checkpoint, no
// leadership transfer) and cuts its connections.
func (c *Cluster) Kill(id string) error {
	n := c.Node(id)
	g := n.group.Swap(nil)
	if g == nil {
		return nil
	}
	if c.Net != nil {
		c.Net.Kill(id)
	}
	return g.Kill()
}

// Stop closes a node gracefully.
func (c *Cluster) Stop(id string) error {
	n := c.Node(id)
	g := n.group.Swap(nil)
	if g == nil {
		return nil
	}
	return g.Close()
}

// Restart starts a stopped or killed node again on its address and data.
func (c *Cluster) Restart(id string) error {
	n := c.Node(id)
	l, err := c.listen(id, n.Addr)
	if err != nil {
		return err
	}
	return c.start(n, l)
}

// Wipe deletes a stopped node's data directory (a replaced disk).
func (c *Cluster) Wipe(id string) error {
	return os.RemoveAll(c.Node(id).Cfg.DataDir)
}

// Close kills every running node.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		_ = c.Kill(n.ID)
	}
	if c.Net != nil {
		c.Net.Close()
	}
}

// WaitConverged waits until every running node's FSM has applied what the
// leader's has after a barrier, so their stores can be compared.
func (c *Cluster) WaitConverged(ctx context.Context) error {
	var leader *Node
	for {
		var err error
		if leader, err = c.Leader(ctx); err != nil {
			return err
		}
		err = leader.Group().Raft().Barrier(time.Until(deadlineOf(ctx))).Error()
		if err == nil {
			break
		}
		if ctx.Err() != nil || !(errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrNotLeader)) {
			return fmt.Errorf("dledgertest: barrier: %w", err)
		}
		// Leadership moved (a loaded machine): ask the next leader.
	}
	want := leader.Group().AppliedIndex()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		done := true
		for _, n := range c.Up() {
			if g := n.Group(); g != nil && g.AppliedIndex() < want {
				done = false
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			var at []string
			for _, n := range c.Up() {
				if g := n.Group(); g != nil {
					at = append(at, fmt.Sprintf("%s applied %d (%s, %v)", n.ID, g.AppliedIndex(), g.Raft().State(), g.Err()))
				}
			}
			return fmt.Errorf("dledgertest: cluster did not converge on %d: %s: %w", want, strings.Join(at, ", "), ctx.Err())
		case <-t.C:
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

// CompareReplicas checks that every running node's CommitLog bytes are
// identical and that every queue reads back the same records (I2). Call it
// after WaitConverged.
func (c *Cluster) CompareReplicas() error {
	up := c.Up()
	if len(up) < 2 {
		return nil
	}
	ref := up[0]
	// With one log a node's CommitLog also holds entries appended and not
	// yet applied, which the others may not have received yet: compare
	// the applied bytes, which every converged node has.
	limit := int64(math.MaxInt64)
	for _, n := range up {
		limit = min(limit, messagestore.Of(n.Group()).AppliedEnd())
	}
	refLog, err := commitLogBytes(messagestore.Of(ref.Group()), limit)
	if err != nil {
		return err
	}
	refQueues, err := queueSnapshot(messagestore.Of(ref.Group()))
	if err != nil {
		return err
	}
	for _, n := range up[1:] {
		b, err := commitLogBytes(messagestore.Of(n.Group()), limit)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, refLog) {
			at := 0
			for at < len(b) && at < len(refLog) && b[at] == refLog[at] {
				at++
			}
			return fmt.Errorf("dledgertest: commitlog of %s (%d bytes) differs from %s (%d bytes) at byte %d",
				n.ID, len(b), ref.ID, len(refLog), at)
		}
		q, err := queueSnapshot(messagestore.Of(n.Group()))
		if err != nil {
			return err
		}
		if q != refQueues {
			return fmt.Errorf("dledgertest: queues of %s differ from %s", n.ID, ref.ID)
		}
	}
	return nil
}

// errScanDone ends a scan at its limit.
var errScanDone = errors.New("dledgertest: scan limit reached")

// commitLogBytes reads a store's CommitLog below limit through its API.
func commitLogBytes(s *store.Store, limit int64) ([]byte, error) {
	var out []byte
	err := s.ScanCommitLog(s.MinPhysicalOffset(), func(off int64, payload []byte) error {
		if off >= limit {
			return errScanDone
		}
		out = fmt.Appendf(out, "%d:", off)
		out = append(out, payload...)
		return nil
	})
	if errors.Is(err, errScanDone) {
		err = nil
	}
	return out, err
}

// queueSnapshot renders every queue's records (offset → physical offset).
func queueSnapshot(s *store.Store) (string, error) {
	topics, err := s.Topics()
	if err != nil {
		return "", err
	}
	sort.Strings(topics)
	var b bytes.Buffer
	for _, t := range topics {
		for q := int32(0); ; q++ {
			max, err := s.MaxOffset(t, q)
			if err != nil || max == 0 {
				break
			}
			for off := int64(0); off < max; {
				res, err := s.Get(t, q, off, 64, nil)
				if err != nil {
					return "", err
				}
				for _, r := range res.Records {
					fmt.Fprintf(&b, "%s/%d@%d=%d ", t, q, r.QueueOffset, r.PhysicalOffset)
				}
				next := res.NextBeginOffset
				res.Release()
				if next <= off {
					break
				}
				off = next
			}
		}
	}
	return b.String(), nil
}

// AddNode starts a new node with no state (it bootstraps nothing) on a new
// address; the leader then adds it with Group.AddNode.
func (c *Cluster) AddNode(id string) *Node {
	c.T.Helper()
	l, err := c.listen(id, "127.0.0.1:0")
	if err != nil {
		c.T.Fatalf("listen %s: %v", id, err)
	}
	ref := c.Nodes[0].Cfg
	cfg := ref
	cfg.NodeID = id
	cfg.Peers = nil
	cfg.PreferredLeader = ""
	cfg.DataDir = filepath.Join(filepath.Dir(ref.DataDir), id)
	cfg.StoreHost = netip.AddrPortFrom(ref.StoreHost.Addr(), ref.StoreHost.Port()+uint16(10*len(c.Nodes)))
	n := &Node{ID: id, Addr: l.Addr().String(), Cfg: cfg}
	c.mu.Lock()
	c.Nodes = append(c.Nodes, n)
	c.mu.Unlock()
	if err := c.start(n, l); err != nil {
		c.T.Fatalf("start %s: %v", id, err)
	}
	return n
}
