package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

func newAdmin(t testing.TB, ns string) *Admin {
	t.Helper()
	a, err := NewAdmin(WithAdminNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// TestAdminAPI drives the Admin methods against a 3-node group: topics,
// groups, messages, offsets, cluster and raft, and their typed errors.
// (cmd/ledgermq's TestAdminCLI covers the same paths through the CLI.)
func TestAdminAPI(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxGuard(t)
	a := newAdmin(t, tc.NamesrvAddr())

	if _, err := NewAdmin(); !errors.Is(err, ErrConfig) {
		t.Fatalf("no name server: %v", err)
	}
	groups, err := a.CreateTopic(ctx, TopicConfig{Topic: "AdminAPI", ReadQueues: 1, WriteQueues: 1}, Target{Cluster: "DefaultCluster"})
	if err != nil || len(groups) != 1 {
		t.Fatalf("create: %v %v", groups, err)
	}
	if _, err := a.CreateTopic(ctx, TopicConfig{Topic: "X"}, Target{Cluster: "nope"}); !errors.Is(err, ErrNoSuchBroker) {
		t.Fatalf("unknown cluster: %v", err)
	}
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()))
	res, err := p.Send(ctx, &Message{Topic: "AdminAPI", Body: []byte("hello"), Keys: []string{"k1"}})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	if m, err := a.MessageByID(ctx, "", res.OffsetMsgID); err != nil || string(m.Body) != "hello" {
		t.Fatalf("by id: %v %v", m, err)
	}
	if m, err := a.MessageByID(ctx, "AdminAPI", res.MsgID); err != nil || string(m.Body) != "hello" {
		t.Fatalf("by uniq key: %v %v", m, err)
	}
	if _, err := a.MessageByID(ctx, "AdminAPI", "0123456789ABCDEF0123456789ABCDEF"); !errors.Is(err, ErrNoSuchMessage) {
		t.Fatalf("unknown id: %v", err)
	}
	if ms, err := a.MessagesByKey(ctx, "AdminAPI", "k1", 0, before, time.Time{}); err != nil || len(ms) != 1 {
		t.Fatalf("by key: %v %v", ms, err)
	}
	if m, err := a.MessageAtOffset(ctx, "AdminAPI", "", 0, res.QueueOffset); err != nil || string(m.Body) != "hello" {
		t.Fatalf("at offset: %v %v", m, err)
	}
	if _, err := a.MessageAtOffset(ctx, "AdminAPI", "", 0, res.QueueOffset+5); !errors.Is(err, ErrNoSuchMessage) {
		t.Fatalf("past the end: %v", err)
	}
	if ms, err := a.MessagesByTime(ctx, "AdminAPI", before, time.Now().Add(time.Minute), 0); err != nil || len(ms) != 1 {
		t.Fatalf("by time: %v %v", ms, err)
	}
	if qs, err := a.TopicStatus(ctx, "AdminAPI"); err != nil || len(qs) != 1 || qs[0].MaxOffset != 1 {
		t.Fatalf("status: %+v %v", qs, err)
	}
	if _, err := a.TopicStatus(ctx, "NoSuch"); !errors.Is(err, ErrNoSuchTopic) {
		t.Fatalf("status of unknown topic: %v", err)
	}

	if _, err := a.CreateGroup(ctx, DefaultGroupConfig("AdminAPIGroup"), Target{}); err != nil {
		t.Fatal(err)
	}
	// A configured group with no offsets: the dry run shows the move, the
	// execution makes it.
	rs, err := a.ResetOffsetByTime(ctx, ResetRequest{Group: "AdminAPIGroup", Topic: "AdminAPI", Timestamp: -1})
	if err != nil || len(rs) != 1 || rs[0].Old != 0 || rs[0].New != 1 {
		t.Fatalf("dry run: %+v %v", rs, err)
	}
	if rs, err = a.ResetOffsetByTime(ctx, ResetRequest{Group: "AdminAPIGroup", Topic: "AdminAPI", Timestamp: -1, Execute: true}); err != nil || rs[0].New != 1 {
		t.Fatalf("reset: %+v %v", rs, err)
	}
	waitFor(t, "the reset offset", func() bool {
		pr, err := a.ConsumerProgress(ctx, "AdminAPIGroup", "AdminAPI")
		return err == nil && pr.Queues[0].ConsumerOffset == 1 && pr.TotalLag == 0
	})
	if _, err := a.ResetOffsetByTime(ctx, ResetRequest{Group: "NoSuchGroup", Topic: "AdminAPI", Timestamp: -1, Execute: true}); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("reset of an unknown group: %v", err)
	}
	if _, err := a.ConsumerConnections(ctx, "AdminAPIGroup"); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("connections of an offline group: %v", err)
	}
	if err := a.DeleteGroup(ctx, "AdminAPIGroup", Target{}); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteGroup(ctx, "AdminAPIGroup", Target{}); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("second delete: %v", err)
	}

	// Raft: transfer leadership, remove a follower and add it back.
	g, ls, err := a.GroupLeader(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var follower protocol.RaftMember
	for _, m := range ls.Members {
		if m.ID != ls.Node {
			follower = m
		}
	}
	// raft gives a transfer up after an election timeout when the target
	// has not caught up by then (a loaded machine): ask again, a bounded
	// number of times.
	var from, now protocol.RaftStatus
	for attempt := 0; attempt < 5; attempt++ {
		from, now, err = a.TransferLeader(ctx, g, follower.ID)
		if err == nil || !strings.Contains(err.Error(), "leadership transfer timeout") {
			break
		}
	}
	if err != nil || from.Node != ls.Node || now.Node != follower.ID {
		t.Fatalf("transfer: %s → %s, %v", from.Node, now.Node, err)
	}
	if err := a.RemoveNode(ctx, g, follower.ID); err == nil {
		t.Fatal("the leader removed itself")
	}
	if err := a.RemoveNode(ctx, g, from.Node); err != nil {
		t.Fatal(err)
	}
	old, _ := ls.Member(from.Node)
	if st, err := a.AddNode(ctx, g, protocol.RaftMember{ID: old.ID, RaftAddr: old.RaftAddr, ClientAddr: ls.LeaderAddr}, AddNodeOptions{}); err != nil {
		t.Fatalf("add back: %+v %v", st, err)
	}
	waitFor(t, "a healthy cluster", func() bool {
		rep, err := a.Health(ctx, 0)
		return err == nil && rep.Healthy
	})
	if err := a.DeleteTopic(ctx, "AdminAPI", Target{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TopicRoute(ctx, "AdminAPI"); !errors.Is(err, ErrNoSuchTopic) {
		t.Fatalf("route after delete: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ListTopics(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}
