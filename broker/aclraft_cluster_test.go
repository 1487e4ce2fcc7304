package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// aclEdited is aclTestFile after an operator's edit: producer1 may now
// PUB and SUB AclOther, and may no longer PUB AclPub (SUB only).
var aclEdited = strings.Replace(strings.Replace(aclTestFile,
	"      - AclSub=SUB\n", "      - AclSub=SUB\n      - AclOther=PUB|SUB\n", 1),
	"      - AclPub=PUB\n", "      - AclPub=SUB\n", 1)

// aclGroup is a three-node group with the ACL on, each node reading its
// own file (files[i] of node ni), all holding aclTestFile at start.
type aclGroup struct {
	*brokertest.Cluster
	files []string
	c     *testClient
}

func startACLGroup(t *testing.T, raftOpts ...func(int, *dledger.Config)) *aclGroup {
	t.Helper()
	g := startACLGroupNoWait(t, raftOpts...)
	g.waitRules(t, "the group records the rules every node started with", metadata.ACLHash([]byte(aclTestFile)), g.up()...)
	return g
}

// startACLGroupNoWait is startACLGroup without waiting for the group to
// record its first rules.
func startACLGroupNoWait(t *testing.T, raftOpts ...func(int, *dledger.Config)) *aclGroup {
	t.Helper()
	dir := t.TempDir()
	g := &aclGroup{}
	for i := 0; i < 3; i++ {
		f := filepath.Join(dir, fmt.Sprintf("plain_acl_n%d.yml", i))
		writeACL(t, f, aclTestFile)
		g.files = append(g.files, f)
	}
	opt := func(i int, c *broker.Config) {
		c.ACLEnable, c.ACLFile, c.ACLReloadInterval = true, g.files[i], 20*time.Millisecond
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
		if lvl := os.Getenv("LEDGERMQ_TEST_LOG"); lvl != "" {
			c.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.LevelFromString(lvl), Output: os.Stderr})
		}
	}
	opts := make([]dledgertest.ClusterOption, 0, len(raftOpts))
	for _, o := range raftOpts {
		opts = append(opts, o)
	}
	g.Cluster = brokertest.StartClusterWith(t, 3, opt, opts...)
	createTestTopic(t, g.Cluster, "AclPub", 4)
	createTestTopic(t, g.Cluster, "AclSub", 4)
	createTestTopic(t, g.Cluster, "AclOther", 4)
	g.c = newTestClient(t)
	return g
}

// writeACL replaces the file's content (a new modification time or size:
// the edit changes the file's length).
func writeACL(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (g *aclGroup) up() []string {
	var ids []string
	for _, n := range g.Raft.Up() {
		ids = append(ids, n.ID)
	}
	return ids
}

func (g *aclGroup) nodeIndex(id string) int {
	var i int
	fmt.Sscanf(id, "n%d", &i)
	return i
}

// tryCall is call that reports a transport error as nil (a node that
// restarts).
func (g *aclGroup) tryCall(t *testing.T, addr string, code int32, ext map[string]string, body []byte, creds auth.Credentials) *remoting.Command {
	t.Helper()
	if creds.AccessKey != "" {
		auth.Sign(ext, body, creds)
	}
	resp, err := g.c.Invoke(testCtx(t), addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		return nil
	}
	return resp
}

// ruleInfo reads node id's rules in force from GET_BROKER_RUNTIME_INFO.
func (g *aclGroup) ruleInfo(t *testing.T, id string) (hash, index, file string, ok bool) {
	t.Helper()
	r := g.tryCall(t, g.Peers[id], remoting.GetBrokerRuntimeInfo, map[string]string{}, nil, aclAdmin)
	if r == nil || r.Code != remoting.Success {
		return "", "", "", false
	}
	kv, err := protocol.DecodeKVTable(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return kv.Table["aclHash"], kv.Table["aclIndex"], kv.Table["aclFileHash"], true
}

// waitRules waits until each node in ids enforces the group's rules of
// hash.
func (g *aclGroup) waitRules(t *testing.T, what, hash string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		broker.WaitFor(t, what+" on "+id, func() bool {
			h, idx, _, ok := g.ruleInfo(t, id)
			return ok && h == hash && idx != "0"
		})
	}
}

// sendCode sends one message to topic through node id's own port as
// producer1 and returns the answer's code (-1: no answer).
func (g *aclGroup) sendCode(t *testing.T, id, topic string) (int32, string) {
	t.Helper()
	r := g.tryCall(t, g.Peers[id], remoting.SendMessage, aclSendExt(topic), []byte("x"), aclProducer)
	if r == nil {
		return -1, ""
	}
	return r.Code, r.Remark
}

// wantEdited checks that node id decides as aclEdited says: AclOther
// accepted, AclPub refused.
func (g *aclGroup) wantEdited(t *testing.T, id string) {
	t.Helper()
	if code, remark := g.sendCode(t, id, "AclOther"); code != remoting.Success {
		t.Errorf("%s: send to AclOther: %d %q, want it accepted by the edited rules", id, code, remark)
	}
	if code, remark := g.sendCode(t, id, "AclPub"); code != remoting.NoPermission || !strings.Contains(remark, "No permission to PUB topic AclPub") {
		t.Errorf("%s: send to AclPub: %d %q, want NO_PERMISSION from the edited rules", id, code, remark)
	}
}

// TestACLEditOnOneNodeReachesEveryNode: an operator edits the file of one
// follower only; every node, checked on its own port, then decides by the
// edited rules (each checks a client's request itself: a follower before it
// forwards).
func TestACLEditOnOneNodeReachesEveryNode(t *testing.T) {
	g := startACLGroup(t)
	leaderID, _, _ := leaderOf(t, g.Cluster)
	followerID, _ := followerOf(t, g.Cluster, leaderID)
	start := time.Now()
	writeACL(t, g.files[g.nodeIndex(followerID)], aclEdited)
	for _, id := range g.up() {
		broker.WaitFor(t, "the edit made on "+followerID+" is in force on "+id, func() bool {
			code, _ := g.sendCode(t, id, "AclOther")
			return code == remoting.Success
		})
		g.wantEdited(t, id)
	}
	t.Logf("an edit of %s's file in force on every node after %v (files checked every 20ms)", followerID, time.Since(start).Round(time.Millisecond))
	g.waitRules(t, "the edited rules are the group's", metadata.ACLHash([]byte(aclEdited)), g.up()...)
	// The leader's file is unchanged: the node says so.
	if _, _, file, _ := g.ruleInfo(t, leaderID); file != metadata.ACLHash([]byte(aclTestFile)) {
		t.Errorf("leader's file hash %s, want its own unedited file's", file)
	}

	// LEDGERMQ_UPDATE_ACL from a client: an admin account's only, and a
	// file that does not parse is refused before anything is proposed.
	wantRefused(t, "rules from a non-admin account", g.tryCall(t, g.Peers[leaderID], remoting.UpdateACL, map[string]string{}, []byte(aclTestFile), aclProducer),
		"needs an admin account")
	if r := g.tryCall(t, g.Peers[followerID], remoting.UpdateACL, map[string]string{}, []byte("accounts: [\n"), aclAdmin); r == nil || r.Code != remoting.InvalidParameter {
		t.Fatalf("rules that do not parse: %+v", r)
	}
	if h, _, _, _ := g.ruleInfo(t, leaderID); h != metadata.ACLHash([]byte(aclEdited)) {
		t.Fatalf("rules %s after refused updates", h)
	}
}

// TestACLEditWhileTheGroupStarts: an edit made on a follower while the
// group is still recording its first rules (the nodes' start proposals of
// the old file not yet applied) is not undone by them: the start proposals
// carry an older file.
func TestACLEditWhileTheGroupStarts(t *testing.T) {
	g := startACLGroupNoWait(t)
	leaderID, _, _ := leaderOf(t, g.Cluster)
	followerID, _ := followerOf(t, g.Cluster, leaderID)
	writeACL(t, g.files[g.nodeIndex(followerID)], aclEdited)
	edited := metadata.ACLHash([]byte(aclEdited))
	g.waitRules(t, "the edit is the group's", edited, g.up()...)
	for _, id := range g.up() {
		broker.WaitFor(t, id+" has no proposal left", func() bool {
			pending, _ := g.Broker(id).ACLPendingForTest()
			return !pending
		})
	}
	for _, id := range g.up() {
		if h, _, _, _ := g.ruleInfo(t, id); h != edited {
			t.Errorf("%s: rules %s once every start proposal is made, want the edit %s", id, h, edited)
		}
		g.wantEdited(t, id)
	}
}

// TestACLChangeSurvivesLeaderKill is the failover of the issue: the
// operator edits the leader's file only, the leader is killed, and the new
// leader enforces the edited rules (before, each node enforced its own
// file, and the new leader the old rules).
func TestACLChangeSurvivesLeaderKill(t *testing.T) {
	g := startACLGroup(t)
	leaderID, _, _ := leaderOf(t, g.Cluster)
	writeACL(t, g.files[g.nodeIndex(leaderID)], aclEdited)
	broker.WaitFor(t, "the edit is in force on the leader", func() bool {
		code, _ := g.sendCode(t, leaderID, "AclOther")
		return code == remoting.Success
	})
	killed := time.Now()
	g.Kill(leaderID)
	newID, _, _ := leaderOf(t, g.Cluster)
	if newID == leaderID {
		t.Fatal("the killed node still leads")
	}
	broker.WaitFor(t, "the new leader "+newID+" accepts what the edit allows", func() bool {
		code, _ := g.sendCode(t, newID, "AclOther")
		return code == remoting.Success
	})
	t.Logf("new leader %s accepted what the edit allows %v after the kill", newID, time.Since(killed).Round(time.Millisecond))
	g.wantEdited(t, newID)
	for _, id := range g.up() {
		g.wantEdited(t, id)
	}
}

// TestACLStaleFileRestartDoesNotRollBack: a node down while the rules were
// edited elsewhere restarts with its stale file; its start proposal changes
// nothing (its file is older than the edit's), and every node keeps the
// edited rules, at the same raft index. A file edited while its node was
// down (newer than the rules in force) is applied when the node starts.
func TestACLStaleFileRestartDoesNotRollBack(t *testing.T) {
	g := startACLGroup(t)
	leaderID, _, _ := leaderOf(t, g.Cluster)
	staleID, _ := followerOf(t, g.Cluster, leaderID)
	// A first edit on the leader, applied by every node, then a second one
	// while the stale node is down.
	first := aclTestFile + "globalWhiteRemoteAddresses:\n  - 10.9.9.9\n"
	writeACL(t, g.files[g.nodeIndex(leaderID)], first)
	g.waitRules(t, "the first edit is the group's", metadata.ACLHash([]byte(first)), g.up()...)
	g.Kill(staleID)
	writeACL(t, g.files[g.nodeIndex(leaderID)], aclEdited)
	edited := metadata.ACLHash([]byte(aclEdited))
	g.waitRules(t, "the edit is the group's", edited, g.up()...)
	_, index, _, _ := g.ruleInfo(t, leaderID)

	g.Restart(staleID)
	broker.WaitFor(t, staleID+" proposed its file at start", func() bool {
		pending, proposed := g.Broker(staleID).ACLPendingForTest()
		return !pending && proposed > 0
	})
	g.waitRules(t, "the restarted node enforces the edit", edited, staleID)
	for _, id := range g.up() {
		h, idx, _, _ := g.ruleInfo(t, id)
		if h != edited || idx != index {
			t.Errorf("%s: rules %s at index %s after the stale node's restart, want %s at %s", id, h, idx, edited, index)
		}
		g.wantEdited(t, id)
	}
	if _, _, file, _ := g.ruleInfo(t, staleID); file != metadata.ACLHash([]byte(aclTestFile)) {
		t.Fatalf("the restarted node's file hash %s, want its stale file's", file)
	}

	// Edited while the node is down: a newer file, applied at its start.
	g.Kill(staleID)
	whileDown := aclEdited + "    whiteRemoteAddress: 10.0.0.1\n"
	writeACL(t, g.files[g.nodeIndex(staleID)], whileDown)
	g.Restart(staleID)
	g.waitRules(t, "the edit made while the node was down is the group's", metadata.ACLHash([]byte(whileDown)), g.up()...)
}

// TestACLSnapshotRestoredNode: a follower whose disk is replaced catches
// up through a snapshot (the leader compacted its log past the edit) and
// enforces the group's edited rules, although its own file is stale.
func TestACLSnapshotRestoredNode(t *testing.T) {
	g := startACLGroup(t, func(_ int, c *dledger.Config) {
		c.SnapshotThreshold = 64
		c.TrailingLogs = 32
		c.SnapshotInterval = 20 * time.Millisecond
		c.RaftSegmentSize = 64 << 10
	})
	leaderID, _, _ := leaderOf(t, g.Cluster)
	victim, _ := followerOf(t, g.Cluster, leaderID)
	g.Kill(victim)
	if err := g.Raft.Wipe(victim); err != nil {
		t.Fatal(err)
	}
	writeACL(t, g.files[g.nodeIndex(leaderID)], aclEdited)
	edited := metadata.ACLHash([]byte(aclEdited))
	g.waitRules(t, "the edit is the group's", edited, g.up()...)
	lg := g.Raft.Node(leaderID).Group()
	editIndex := lg.AppliedIndex()
	// Entries past the edit until the leader's snapshot holds it and its
	// log has moved past its first segments.
	pad := []byte(strings.Repeat("p", 2<<10))
	for i := 0; ; i++ {
		r := g.tryCall(t, g.Peers[leaderID], remoting.SendMessage, aclSendExt("AclOther"), pad, aclProducer)
		if r == nil || r.Code != remoting.Success {
			t.Fatalf("send %d: %+v", i, r)
		}
		snap, _ := strconv.ParseUint(lg.Raft().Stats()["last_snapshot_index"], 10, 64)
		if snap > editIndex && i >= 300 {
			break
		}
	}
	g.Restart(victim)
	vg := g.Raft.Node(victim).Group()
	broker.WaitFor(t, victim+" restored a snapshot", func() bool { return vg.SnapshotStats().Restored > 0 })
	g.waitRules(t, "the restored node enforces the edit", edited, victim)
	g.wantEdited(t, victim)
	if _, _, file, _ := g.ruleInfo(t, victim); file != metadata.ACLHash([]byte(aclTestFile)) {
		t.Fatalf("the restored node's file hash %s, want its stale file's", file)
	}
}
