package broker_test

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestPopStateListed: a message POP-received and not acknowledged is
// listed by LEDGERMQ_LIST_POP_STATE (4014) through the admin client as
// one in flight for its group and topic, not yet due; a follower forwards
// the request to the leader; the filters keep their rows only; a bad
// limit is INVALID_PARAMETER.
func TestPopStateListed(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "PopST", 2)
	putTestMessages(t, tc, "PopST", 0, "a", "b")
	req := broker.PopRequest{Group: "cg_popst", Topic: "PopST", Expression: "*", Max: 1, Invisible: time.Hour, Wait: 100 * time.Millisecond}
	before := time.Now()
	broker.WaitFor(t, "the message received", func() bool { // asked of the leader again after an election
		_, b := popReady(t, tc)
		got, err := b.PopMessages(testCtx(t), req)
		return err == nil && len(got) == 1
	})

	ac, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	var st protocol.PopState
	broker.WaitFor(t, "the message in flight listed", func() bool {
		st, err = ac.PopState(testCtx(t), "", protocol.PopStateHeader{Group: "cg_popst"})
		return err == nil && st.Count == 1
	})
	r := st.Rows[0]
	if len(st.Rows) != 1 || r.Group != "cg_popst" || r.Topic != "PopST" || r.Inflight != 1 || r.Due != 0 ||
		r.OldestInvisibleUntil < before.Add(time.Hour).UnixMilli() {
		t.Fatalf("pop state %+v", st)
	}
	if st, err := ac.PopState(testCtx(t), "", protocol.PopStateHeader{Topic: "Other"}); err != nil || st.Count != 0 || len(st.Rows) != 0 {
		t.Fatalf("another topic: %+v %v", st, err)
	}

	c := newProdClient(t)
	leaderID, _, _ := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)
	resp := invoke(t, c, faddr, protocol.PopStateHeader{Topic: "PopST"}.Request())
	if resp.Code == remoting.Success { // an election in between answers otherwise
		if fst, err := protocol.DecodePopState(resp.Body); err != nil || fst.Count != 1 || fst.Rows[0] != r {
			t.Fatalf("asked of a follower: %+v %v", fst, err)
		}
	}
	if resp := ask(t, tc, c, func() *remoting.Command {
		return remoting.NewRequest(remoting.ListPopState, map[string]string{"limit": "0"}, nil)
	}); resp.Code != remoting.InvalidParameter {
		t.Fatalf("a limit of 0: %d %s", resp.Code, resp.Remark)
	}
}
