package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/remoting"
)

const credTestACL = `
accounts:
  - accessKey: client-ak
    secretKey: client-sk
    topicPerms: [CredTopic=PUB]
  - accessKey: admin-ak
    secretKey: admin-sk
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

// TestCredentialsSignRequests: against a group with its ACL on, our
// producer sends only with credentials, and only to the topics its
// account may publish to; our admin creates topics only with an admin
// account.
func TestCredentialsSignRequests(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(credTestACL), 0o600); err != nil {
		t.Fatal(err)
	}
	tc := startCluster(t, func(_ int, c *broker.Config) {
		c.ACLEnable, c.ACLFile = true, file
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
	})
	ctx := ctxGuard(t)
	target := Target{Cluster: "DefaultCluster"}
	mkAdmin := func(opts ...AdminOption) *Admin {
		a, err := NewAdmin(append([]AdminOption{WithAdminNameServers(tc.NamesrvAddr())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	topic := TopicConfig{Topic: "CredTopic", ReadQueues: 2, WriteQueues: 2, Perm: 6}
	if _, err := mkAdmin(WithAdminCredentials("client-ak", "client-sk")).CreateTopic(ctx, topic, target); !isNoPermission(err, "needs an admin account") {
		t.Fatalf("create topic as a non-admin: %v", err)
	}
	if _, err := mkAdmin(WithAdminCredentials("admin-ak", "admin-sk")).CreateTopic(ctx, topic, target); err != nil {
		t.Fatalf("create topic as admin: %v", err)
	}
	waitLeaderRoute(t, tc, "CredTopic")

	signed := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithCredentials("client-ak", "client-sk"), WithRetries(0))
	if _, err := signed.Send(ctx, &Message{Topic: "CredTopic", Body: []byte("hello")}); err != nil {
		t.Fatalf("signed send: %v", err)
	}
	unsigned := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithRetries(0))
	if _, err := unsigned.Send(ctx, &Message{Topic: "CredTopic", Body: []byte("hello")}); !isNoPermission(err, "no accessKey") {
		t.Fatalf("unsigned send: %v", err)
	}
	wrong := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithCredentials("client-ak", "not-the-secret"), WithRetries(0))
	if _, err := wrong.Send(ctx, &Message{Topic: "CredTopic", Body: []byte("hello")}); !isNoPermission(err, "signature") {
		t.Fatalf("send with a wrong secret: %v", err)
	}
}

func isNoPermission(err error, remark string) bool {
	var be *BrokerError
	return errors.As(err, &be) && be.Code == remoting.NoPermission && strings.Contains(be.Remark, remark)
}
