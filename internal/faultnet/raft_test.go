package faultnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// countFSM counts applied entries.
type countFSM struct {
	mu sync.Mutex
	n  uint64
}

func (f *countFSM) Apply(*raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.n
}

func (f *countFSM) count() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	return countSnapshot(f.count()), nil
}

func (f *countFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = binary.BigEndian.Uint64(b[:])
	return nil
}

type countSnapshot uint64

func (s countSnapshot) Persist(sink raft.SnapshotSink) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(s))
	if _, err := sink.Write(b[:]); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnapshot) Release() {}

// syncBuffer collects the cluster's logs; they are printed only if the test
// fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type raftNode struct {
	id    string
	layer *Layer
	trans *raft.NetworkTransport
	fsm   *countFSM
	r     *raft.Raft
}

// startRaftCluster starts n raft nodes over faultnet Layers, bootstrapped
// as one voting configuration. Cleanup shuts everything down.
func startRaftCluster(t *testing.T, nw *Network, n int) []*raftNode {
	t.Helper()
	logs := &syncBuffer{}
	nodes := make([]*raftNode, n)
	var servers []raft.Server
	for i := range nodes {
		id := fmt.Sprintf("n%d", i)
		l := mustListen(t, nw, id)
		nodes[i] = &raftNode{
			id:    id,
			layer: l,
			trans: raft.NewNetworkTransport(l, 3, time.Second, logs),
			fsm:   &countFSM{},
		}
		servers = append(servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(id),
			Address:  addrOf(l),
		})
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd.r != nil {
				if err := nd.r.Shutdown().Error(); err != nil {
					t.Errorf("shutdown %s: %v", nd.id, err)
				}
			}
			_ = nd.trans.Close()
		}
		if t.Failed() {
			t.Logf("raft logs:\n%s", logs.String())
		}
	})
	for _, nd := range nodes {
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(nd.id)
		conf.HeartbeatTimeout = 250 * time.Millisecond
		conf.ElectionTimeout = 250 * time.Millisecond
		conf.LeaderLeaseTimeout = 125 * time.Millisecond
		conf.CommitTimeout = 10 * time.Millisecond
		conf.Logger = hclog.New(&hclog.LoggerOptions{
			Name:   "raft-" + nd.id,
			Output: logs,
			Level:  hclog.Info,
		})
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, store, store, snaps, nd.trans,
			raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap %s: %v", nd.id, err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, store, store, snaps, nd.trans)
		if err != nil {
			t.Fatalf("NewRaft %s: %v", nd.id, err)
		}
		nd.r = r
	}
	return nodes
}

// waitLeader waits until exactly one node among candidates is leader and
// returns it.
func waitLeader(t *testing.T, candidates []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitFor(t, "a single leader", func() bool {
		leader = nil
		for _, nd := range candidates {
			if nd.r.State() == raft.Leader {
				if leader != nil {
					return false
				}
				leader = nd
			}
		}
		return leader != nil
	})
	return leader
}

func applyN(t *testing.T, nd *raftNode, n int) {
	t.Helper()
	for i := range n {
		if err := nd.r.Apply([]byte{byte(i)}, 2*time.Second).Error(); err != nil {
			t.Fatalf("Apply on %s: %v", nd.id, err)
		}
	}
}

// TestRaftIsolateLeader runs a 3-node raft group over faultnet, isolates
// its leader, checks the majority moves on while the old leader cannot
// commit, heals, and checks all replicas converge.
func TestRaftIsolateLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("raft cluster test")
	}
	nw := newTestNetwork(t)
	nodes := startRaftCluster(t, nw, 3)

	old := waitLeader(t, nodes)
	applyN(t, old, 10)

	nw.Isolate(old.id)
	err := old.r.Apply([]byte("lost"), 2*time.Second).Error()
	if err == nil {
		t.Fatalf("isolated leader %s committed an entry", old.id)
	}
	if !errors.Is(err, raft.ErrLeadershipLost) && !errors.Is(err, raft.ErrNotLeader) &&
		!errors.Is(err, raft.ErrEnqueueTimeout) {
		t.Fatalf("Apply on isolated leader: unexpected error %v", err)
	}

	var rest []*raftNode
	for _, nd := range nodes {
		if nd != old {
			rest = append(rest, nd)
		}
	}
	next := waitLeader(t, rest)
	applyN(t, next, 10)
	if s := nw.Stats(old.id, next.id); s.Refused == 0 && s.Cut == 0 {
		t.Errorf("isolation of %s left no trace on the link to %s: %+v", old.id, next.id, s)
	}

	nw.Heal()
	waitFor(t, "old leader to follow", func() bool { return old.r.State() == raft.Follower })
	waitFor(t, "replicas to converge on 20 entries", func() bool {
		for _, nd := range nodes {
			if nd.fsm.count() != 20 {
				return false
			}
		}
		return true
	})
	// The group still works with all three members.
	leader := waitLeader(t, nodes)
	applyN(t, leader, 1)
	waitFor(t, "replicas to converge on 21 entries", func() bool {
		for _, nd := range nodes {
			if nd.fsm.count() != 21 {
				return false
			}
		}
		return true
	})
}
