package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/routing"
)

// TestRegistrationWithNamesrvACL: a three-node group registers with a name
// server whose ACL is on (and which has the cluster secret) when its
// nodes sign with an account of the file (NamesrvCredentials) as well as
// the secret; the node without the account is refused and never routed,
// while the name server without an ACL takes all three.
func TestRegistrationWithNamesrvACL(t *testing.T) {
	const secret = "a-cluster-secret-for-tests"
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte("accounts:\n  - accessKey: broker-node\n    secretKey: broker-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secured, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0", Secret: secret, ACLEnable: true, ACLFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := secured.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = secured.Close(ctx)
	})
	tc := brokertest.StartCluster(t, 3, func(i int, c *broker.Config) {
		c.NamesrvAddrs = append(c.NamesrvAddrs, secured.Addr().String())
		c.ClusterSecret = secret
		if i != 2 {
			c.NamesrvCredentials = auth.Credentials{AccessKey: "broker-node", SecretKey: "broker-secret"}
		}
	})
	members := func() map[string]int64 {
		out := map[string]int64{}
		for _, m := range secured.Table().Members() {
			out[m.Addr] = m.BrokerID
		}
		return out
	}
	_, leaderAddr, _ := leaderOf(t, tc)
	broker.WaitUntil(t, 10*time.Second, "the two nodes with the account registered, the other refused", func() bool {
		ms := members()
		_, wrong := ms[tc.Peers["n2"]]
		return len(ms) == 2 && !wrong && (ms[leaderAddr] == 0 || leaderAddr == tc.Peers["n2"]) && secured.Stats().Refused > 0
	})
	if leaderAddr != tc.Peers["n2"] {
		if _, ok := secured.Table().Route("TBW102"); !ok {
			t.Fatal("the leader's topics are not routed by the name server with the ACL")
		}
	}
	broker.WaitUntil(t, 10*time.Second, "all three on the name server without an ACL", func() bool { return len(tc.Namesrv.Table().Members()) == 3 })
	if _, ok := members()[tc.Peers["n2"]]; ok {
		t.Fatal("the node without an account registered")
	}
	for _, id := range []string{"n0", "n1"} {
		addr := tc.Peers[id]
		tc.Kill(id)
		if _, ok := members()[addr]; ok {
			t.Fatalf("%s still registered after Close", id)
		}
	}
}
