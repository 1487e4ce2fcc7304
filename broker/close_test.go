package broker_test

import (
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestOffsetCommittedDuringShutdownIsDurable sends UPDATE_CONSUMER_OFFSET
// to a node that is closing, after it has left the name server and before
// its server stops (a client that has not refreshed its route yet), and
// finds the offset on the other nodes, and on the node itself once it is
// back: Close flushes the offsets last, after the server has stopped
// taking requests. Once on a follower (which forwards the commit to the
// leader), once on the leader (which proposes it through raft itself).
func TestOffsetCommittedDuringShutdownIsDurable(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	createTestTopic(t, tc, "CloseTopic", 4)
	c := newTestClient(t)
	const group = "cg_close"

	// during arranges, on node id, a commit of offset off to queue qid
	// while Close is between leaving the name server and stopping the
	// server; and one more accepted by the committer after the server has
	// drained (a request that ran during the drain), to queue qid+1.
	during := func(id string, qid int32, off int64) {
		b := tc.Broker(id)
		addr := tc.Peers[id]
		b.SetCloseHookForTest(func(s broker.CloseStep) {
			switch s {
			case broker.CloseUnregistered:
				if m := memberID(tc, addr); m != -1 {
					t.Errorf("%s still registered as %d when it starts to close", id, m)
				}
				r := c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
					"consumerGroup": group, "topic": "CloseTopic", "queueId": itoa(int64(qid)), "commitOffset": itoa(off)}, nil)
				if r.Code != remoting.Success {
					t.Errorf("commit to closing %s: %d %s", id, r.Code, r.Remark)
				}
			case broker.CloseDrained:
				if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					_ = conn.Close()
					t.Errorf("%s still accepts connections after its server closed", id)
				}
				b.CommitOffsetForTest(group, "CloseTopic", qid+1, off+1, "")
			}
		})
	}
	durable := func(stage string, qid int32, off int64) {
		t.Helper()
		for _, q := range []int32{qid, qid + 1} {
			want := itoa(off + int64(q-qid))
			broker.WaitFor(t, stage+": offset of queue "+itoa(int64(q))+" replicated to every running node", func() bool {
				for _, n := range tc.Raft.Up() {
					if got, ok := n.Group().Metadata().Offset(group, "CloseTopic", q); !ok || itoa(got) != want {
						return false
					}
				}
				return offsetEverywhere(t, tc, c, group, "CloseTopic", q, want)
			})
		}
	}

	leaderID, _, _ := leaderOf(t, tc)
	followerID, _ := followerOf(t, tc, leaderID)
	during(followerID, 0, 7)
	tc.Kill(followerID)
	durable("follower closed", 0, 7)
	tc.Restart(followerID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	durable("follower back", 0, 7)

	leaderID, _, _ = leaderOf(t, tc)
	during(leaderID, 2, 11)
	tc.Kill(leaderID)
	durable("leader closed", 2, 11)
	tc.Restart(leaderID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	durable("leader back", 2, 11)
}
