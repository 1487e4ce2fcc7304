//go:build unix

package devcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Raft roles as GET_BROKER_RUNTIME_INFO reports them in raftRole (the
// dledger role names; a leader not yet writable reports candidate).
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// Roles cluster.json gives a node that does not run.
const (
	RoleDown    = "down"    // dev is (re)starting it, or it is not restarted
	RoleStopped = "stopped" // dev has stopped
)

// NodeStatus is one node's answer to GET_BROKER_RUNTIME_INFO (28), plus the
// metadata version from GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) and, where
// the node serves it, the applied index from RAFT_STATUS (4001).
//
// Applied positions to compare across replicas: CommitLogMaxOffset (the
// store's end), MetadataApplied (the index of the last raft entry the
// node's metadata state applied: the subscription table's dataVersion
// counter) and RaftApplied (the index of the last entry the node's FSM
// applied; 0 when the node does not answer RAFT_STATUS).
type NodeStatus struct {
	ID, Addr           string
	Role               string // raftRole: leader, follower, candidate, shutdown
	Term               uint64 // raftTerm
	LeaderID           string // raftLeader: the node ID this node follows
	CommitLogMaxOffset int64
	MetadataApplied    int64
	RaftApplied        uint64
}

// RuntimeInfo asks addr for GET_BROKER_RUNTIME_INFO and returns its table.
func RuntimeInfo(ctx context.Context, c *remoting.Client, addr string) (map[string]string, error) {
	resp, err := c.Invoke(ctx, addr, protocol.BrokerRuntimeInfoRequest())
	if err != nil {
		return nil, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return nil, fmt.Errorf("runtime info of %s: %w", addr, err)
	}
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("runtime info of %s: %w", addr, err)
	}
	return kv.Table, nil
}

// Status asks node n for its raft role and applied positions.
func Status(ctx context.Context, c *remoting.Client, n Node) (NodeStatus, error) {
	s := NodeStatus{ID: n.ID, Addr: n.Addr}
	t, err := RuntimeInfo(ctx, c, n.Addr)
	if err != nil {
		return s, err
	}
	s.Role, s.LeaderID = t["raftRole"], t["raftLeader"]
	if s.Role == "" {
		return s, fmt.Errorf("runtime info of %s (%s) has no raftRole", n.ID, n.Addr)
	}
	if s.Term, err = strconv.ParseUint(t["raftTerm"], 10, 64); err != nil {
		return s, fmt.Errorf("runtime info of %s: raftTerm: %w", n.ID, err)
	}
	if s.CommitLogMaxOffset, err = strconv.ParseInt(t["commitLogMaxOffset"], 10, 64); err != nil {
		return s, fmt.Errorf("runtime info of %s: commitLogMaxOffset: %w", n.ID, err)
	}
	resp, err := c.Invoke(ctx, n.Addr, protocol.AllSubscriptionGroupsRequest())
	if err != nil {
		return s, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return s, fmt.Errorf("subscription groups of %s: %w", n.ID, err)
	}
	w, err := protocol.DecodeSubscriptionGroupWrapper(resp.Body)
	if err != nil {
		return s, fmt.Errorf("subscription groups of %s: %w", n.ID, err)
	}
	s.MetadataApplied = w.DataVersion.Counter
	resp, err = c.Invoke(ctx, n.Addr, protocol.RaftStatusRequest())
	if err != nil {
		return s, err
	}
	if resp.Code == remoting.Success {
		rs, err := protocol.DecodeRaftStatus(resp.Body)
		if err != nil {
			return s, fmt.Errorf("raft status of %s: %w", n.ID, err)
		}
		s.RaftApplied = rs.AppliedIndex
	}
	return s, nil
}

// Serving checks that every node of f is serving: its process is running,
// it answers with a raft role, exactly one node is the writable leader and
// every other node is a follower of it. It returns the nodes' statuses in
// f's order (those it got) and, when the group is not serving, why.
//
// A process that is running but never answers (a node that cannot open its
// raft log or store after a crash) keeps Serving failing, which is the
// point: callers wait on it with a bound and report the node.
func Serving(ctx context.Context, c *remoting.Client, f File) ([]NodeStatus, error) {
	var out []NodeStatus
	var leaders []string
	for _, n := range f.Nodes {
		if !Alive(n.PID) {
			return out, fmt.Errorf("%s: no running process (pid %d)", n.ID, n.PID)
		}
		s, err := Status(ctx, c, n)
		if err != nil {
			return out, fmt.Errorf("%s (pid %d): %w", n.ID, n.PID, err)
		}
		out = append(out, s)
		if s.Role == RoleLeader {
			leaders = append(leaders, s.ID)
		}
	}
	if len(leaders) != 1 {
		return out, fmt.Errorf("%d leaders %v", len(leaders), leaders)
	}
	for _, s := range out {
		if s.Role != RoleLeader && (s.Role != RoleFollower || s.LeaderID != leaders[0]) {
			return out, fmt.Errorf("%s is %s following %q, not a follower of %s", s.ID, s.Role, s.LeaderID, leaders[0])
		}
	}
	return out, nil
}

// Converged reports whether every status shows the same term, CommitLog
// end, metadata position and raft applied index: the replicas have
// applied the same entries.
func Converged(st []NodeStatus) bool {
	return len(st) > 0 && !slices.ContainsFunc(st, func(s NodeStatus) bool {
		return s.Term != st[0].Term || s.CommitLogMaxOffset != st[0].CommitLogMaxOffset ||
			s.MetadataApplied != st[0].MetadataApplied || s.RaftApplied != st[0].RaftApplied
	})
}

// LeaderOf returns the leader's node among statuses from Serving.
func LeaderOf(f File, st []NodeStatus) (Node, bool) {
	for _, s := range st {
		if s.Role == RoleLeader {
			return f.NodeByAddr(s.Addr)
		}
	}
	return Node{}, false
}
