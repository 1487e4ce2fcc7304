package broker_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const aclTestFile = `
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclPub=PUB
      - AclSub=SUB
    groupPerms:
      - cg_acl=SUB
  - accessKey: admin123
    secretKey: admin-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

var (
	aclProducer = auth.Credentials{AccessKey: "producer1", SecretKey: "producer-secret"}
	aclAdmin    = auth.Credentials{AccessKey: "admin123", SecretKey: "admin-secret"}
)

func aclSendExt(topic string) map[string]string {
	return map[string]string{
		"producerGroup": "pg_acl", "topic": topic, "queueId": "0", "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"batch": "false", "properties": "", "bname": "broker-a",
	}
}

// signedCall sends code with ext and body, signed with creds unless its
// access key is "".
func signedCall(t *testing.T, c *testClient, addr string, code int32, ext map[string]string, body []byte, creds auth.Credentials) *remoting.Command {
	t.Helper()
	if creds.AccessKey != "" {
		auth.Sign(ext, body, creds)
	}
	return c.call(t, addr, code, ext, body)
}

func wantRefused(t *testing.T, what string, r *remoting.Command, remark string) {
	t.Helper()
	if r.Code != remoting.NoPermission || !strings.Contains(r.Remark, remark) {
		t.Errorf("%s: %d %q, want NO_PERMISSION naming %q", what, r.Code, r.Remark, remark)
	}
}

// TestACLBroker runs a three-node group with the ACL on: missing, wrong
// and right credentials, per-topic PUB/SUB, per-group SUB, admin requests,
// sends through a follower (node-signed forward), a forged node signature,
// offsets committed on a follower, and a reload of the file.
func TestACLBroker(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(aclTestFile), 0o600); err != nil {
		t.Fatal(err)
	}
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.ACLEnable, c.ACLFile, c.ACLReloadInterval = true, file, 20*time.Millisecond
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
	})
	createTestTopic(t, tc, "AclPub", 4)
	createTestTopic(t, tc, "AclSub", 4)
	createTestTopic(t, tc, "AclOther", 4)
	c := newTestClient(t)
	leaderID, leader, _ := leaderOf(t, tc)
	followerID, follower := followerOf(t, tc, leaderID)

	// Sends: PUB needed on the topic.
	wantRefused(t, "unsigned send", signedCall(t, c, leader, remoting.SendMessage, aclSendExt("AclPub"), []byte("x"), auth.Credentials{}), "no accessKey in SEND_MESSAGE")
	wantRefused(t, "wrong secret", signedCall(t, c, leader, remoting.SendMessage, aclSendExt("AclPub"), []byte("x"),
		auth.Credentials{AccessKey: "producer1", SecretKey: "not-the-secret"}), "signature of SEND_MESSAGE for accessKey producer1")
	wantRefused(t, "unknown account", signedCall(t, c, leader, remoting.SendMessage, aclSendExt("AclPub"), []byte("x"),
		auth.Credentials{AccessKey: "nobody1", SecretKey: "whatever"}), "no account for accessKey nobody1")
	wantRefused(t, "send to SUB topic", signedCall(t, c, leader, remoting.SendMessage, aclSendExt("AclSub"), []byte("x"), aclProducer),
		"No permission to PUB topic AclSub for accessKey producer1")
	wantRefused(t, "send to default DENY topic", signedCall(t, c, leader, remoting.SendMessage, aclSendExt("AclOther"), []byte("x"), aclProducer),
		"No permission to PUB topic AclOther")
	for _, addr := range []string{leader, follower} {
		if r := signedCall(t, c, addr, remoting.SendMessage, aclSendExt("AclPub"), []byte("x"), aclProducer); r.Code != remoting.Success {
			t.Fatalf("signed send to %s: %d %s", addr, r.Code, r.Remark)
		}
	}

	// A request claiming a node signature it does not have.
	forged := aclSendExt("AclPub")
	forged["ledgermqNodeSig"] = "AAAA"
	wantRefused(t, "forged node signature", c.call(t, leader, remoting.SendMessage, forged, []byte("x")), "invalid node signature")

	// Pulls and offsets: SUB on the group and the topic.
	off := func(group, topic string) map[string]string {
		return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "1", "commitOffset": "5"}
	}
	wantRefused(t, "commit for a denied group", signedCall(t, c, leader, remoting.UpdateConsumerOffset, off("cg_other", "AclSub"), nil, aclProducer),
		"No permission to SUB group cg_other")
	wantRefused(t, "commit on a PUB-only topic", signedCall(t, c, leader, remoting.UpdateConsumerOffset, off("cg_acl", "AclPub"), nil, aclProducer),
		"No permission to SUB topic AclPub")
	if r := signedCall(t, c, follower, remoting.UpdateConsumerOffset, off("cg_acl", "AclSub"), nil, aclProducer); r.Code != remoting.Success {
		t.Fatalf("commit on a follower: %d %s", r.Code, r.Remark)
	}
	// The follower forwards the commit to the leader, node-signed.
	broker.WaitFor(t, "offset committed through the follower reaches the group", func() bool {
		got, ok := tc.Raft.Node(leaderID).Group().Metadata().Offset("cg_acl", "AclSub", 1)
		return ok && got == 5
	})
	_ = followerID

	// Admin requests need an admin account.
	topicExt := func(name string) map[string]string {
		return map[string]string{"topic": name, "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG"}
	}
	wantRefused(t, "create topic, not admin", signedCall(t, c, leader, remoting.UpdateAndCreateTopic, topicExt("AclNew"), nil, aclProducer),
		"UPDATE_AND_CREATE_TOPIC needs an admin account, accessKey producer1 is not one")
	if r := signedCall(t, c, follower, remoting.UpdateAndCreateTopic, topicExt("AclNew"), nil, aclAdmin); r.Code != remoting.Success {
		t.Fatalf("create topic as admin through a follower: %d %s", r.Code, r.Remark)
	}
	// The rules as written, secret keys included, only to an admin.
	wantRefused(t, "read the ACL, not admin", signedCall(t, c, follower, remoting.GetBrokerClusterACLConfig, map[string]string{}, nil, aclProducer),
		"GET_BROKER_CLUSTER_ACL_CONFIG needs an admin account, accessKey producer1 is not one")
	r := signedCall(t, c, follower, remoting.GetBrokerClusterACLConfig, map[string]string{}, nil, aclAdmin)
	if r.Code != remoting.Success {
		t.Fatalf("read the ACL as admin: %d %s", r.Code, r.Remark)
	}
	cfg, err := protocol.DecodeClusterACLConfig(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]protocol.PlainAccessConfig{}
	for _, a := range cfg.PlainAccessConfigs {
		accounts[a.AccessKey] = a
	}
	if p := accounts[aclProducer.AccessKey]; p.SecretKey != aclProducer.SecretKey || p.Admin || !slices.Contains(p.TopicPerms, "AclSub=SUB") {
		t.Fatalf("the producer's account read back as %+v", p)
	}
	if a := accounts[aclAdmin.AccessKey]; !a.Admin {
		t.Fatalf("the admin account read back as %+v", a)
	}

	// Reload: grant PUB on AclOther; every node picks the file up.
	granted := strings.Replace(aclTestFile, "      - AclSub=SUB\n", "      - AclSub=SUB\n      - AclOther=PUB|SUB\n", 1)
	if err := os.WriteFile(file, []byte(granted), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{leader, follower} {
		broker.WaitFor(t, "the new ACL file is in force on "+addr, func() bool {
			ext := aclSendExt("AclOther")
			auth.Sign(ext, []byte("x"), aclProducer)
			r := c.call(t, addr, remoting.SendMessage, ext, []byte("x"))
			return r.Code == remoting.Success
		})
	}

	// A file that no longer parses leaves the rules in force.
	if err := os.WriteFile(file, []byte("accounts: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc.Broker(leaderID).ReloadACLForTest()
	ext := aclSendExt("AclOther")
	auth.Sign(ext, []byte("x"), aclProducer)
	if r := c.call(t, leader, remoting.SendMessage, ext, []byte("x")); r.Code != remoting.Success {
		t.Fatalf("after a broken file: %d %s, want the previous rules", r.Code, r.Remark)
	}
}

// startACLNode starts a one-node group with the ACL on, its rules
// aclTestFile.
func startACLNode(t *testing.T) *brokertest.Cluster {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(aclTestFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return brokertest.StartNode(t, func(_ int, c *broker.Config) { c.ACLEnable, c.ACLFile = true, file })
}

// TestACLRefusesEveryUnsignedRequest sends every request code the broker
// serves without credentials, then with a wrong signature, to a node with
// the ACL on: each is refused NO_PERMISSION, except RAFT_STATUS (4001),
// which name servers ask unsigned to confirm a registration.
func TestACLRefusesEveryUnsignedRequest(t *testing.T) {
	tc := startACLNode(t)
	c := newTestClient(t)
	_, addr, _ := leaderOf(t, tc)
	wrong := auth.Credentials{AccessKey: aclProducer.AccessKey, SecretKey: "not-the-secret"}
	var refused []string
	for _, code := range broker.HandlerCodesForTest() {
		name := remoting.RequestCodeName(code)
		for _, creds := range []auth.Credentials{{}, wrong} {
			ext := aclSendExt("AclPub")
			ext["consumerGroup"], ext["group"] = "cg_acl", "cg_acl"
			r := signedCall(t, c, addr, code, ext, nil, creds)
			if code == remoting.RaftStatus {
				if r.Code != remoting.Success {
					t.Errorf("RAFT_STATUS without credentials: %d %q", r.Code, r.Remark)
				}
				continue
			}
			if r.Code != remoting.NoPermission {
				t.Errorf("%s (%d) with credentials %q: answered %d %q, want NO_PERMISSION", name, code, creds.AccessKey, r.Code, r.Remark)
			}
		}
		refused = append(refused, name)
	}
	t.Logf("refused without valid credentials: %s", strings.Join(refused, ", "))
}
