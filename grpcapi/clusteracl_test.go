package grpcapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/protocol"
)

// fakeRules is a source of rules that counts its reads.
type fakeRules struct {
	mu    sync.Mutex
	rules *acl.ACL
	err   error
	reads int
}

func (f *fakeRules) read(context.Context) (*acl.ACL, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.rules, f.err
}

func (f *fakeRules) set(t *testing.T, yml string, err error) {
	t.Helper()
	var rules *acl.ACL
	if yml != "" {
		var perr error
		if rules, perr = acl.Parse([]byte(yml)); perr != nil {
			t.Fatal(perr)
		}
	}
	f.mu.Lock()
	f.rules, f.err = rules, err
	f.mu.Unlock()
}

func (f *fakeRules) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

const (
	rulesAlpha = "accounts:\n  - accessKey: alpha-key\n    secretKey: alpha-secret\n"
	rulesBeta  = rulesAlpha + "  - accessKey: beta-key\n    secretKey: beta-secret\n"
)

// The rules are read on first need, again for an access key they do not
// list (no more than once a gap), kept when a later read fails; with no
// rules ever read, the read's error is the answer.
func TestClusterACLRules(t *testing.T) {
	ctx := context.Background()
	src := &fakeRules{}
	src.set(t, rulesAlpha, nil)
	a := &clusterACL{read: src.read, gap: time.Hour, log: func(string, ...any) {}}
	r, err := a.Rules(ctx, "alpha-key")
	if err != nil || !r.HasAccount("alpha-key") || src.count() != 1 {
		t.Fatalf("first need: %v, %v after %d reads", r, err, src.count())
	}
	src.set(t, rulesBeta, nil)
	if r, err := a.Rules(ctx, "beta-key"); err != nil || r.HasAccount("beta-key") || src.count() != 1 {
		t.Fatalf("an unknown key within the gap: %v, %v after %d reads", r, err, src.count())
	}
	if _, err := a.Rules(ctx, "alpha-key"); err != nil || src.count() != 1 {
		t.Fatalf("a known key: %v after %d reads", err, src.count())
	}
	a.gap = 0
	if r, err := a.Rules(ctx, "beta-key"); err != nil || !r.HasAccount("beta-key") || src.count() != 2 {
		t.Fatalf("an unknown key after the gap: %v after %d reads", err, src.count())
	}
	boom := errors.New("no group answers")
	src.set(t, "", boom)
	if r, err := a.Rules(ctx, "gamma-key"); err != nil || !r.HasAccount("beta-key") || src.count() != 3 {
		t.Fatalf("a failed read keeps the rules: %v after %d reads", err, src.count())
	}

	none := &clusterACL{read: src.read, gap: time.Hour, log: func(string, ...any) {}}
	if _, err := none.Rules(ctx, "alpha-key"); !errors.Is(err, boom) {
		t.Fatalf("no rules ever read: %v", err)
	}
	if _, err := none.Rules(ctx, "alpha-key"); !errors.Is(err, errNoACLSource) {
		t.Fatalf("no rules, no read within the gap: %v", err)
	}
}

// The refresh goroutine reads the rules at start and every refresh, and
// close stops it.
func TestClusterACLRefresh(t *testing.T) {
	src := &fakeRules{}
	src.set(t, rulesAlpha, nil)
	a := newClusterACL(src.read, time.Millisecond, func(string, ...any) {})
	testwait.For(t, 10*time.Second, "three reads", func() bool { return src.count() >= 3 })
	a.close()
	n := src.count()
	if r, err := a.Rules(context.Background(), "alpha-key"); err != nil || !r.HasAccount("alpha-key") || src.count() != n {
		t.Fatalf("after close: %v, %d reads then %d", err, n, src.count())
	}
}

// A GET_BROKER_CLUSTER_ACL_CONFIG answer parses into the rules it
// describes: the same accounts, white lists and permissions.
func TestDescribedRules(t *testing.T) {
	c := protocol.ClusterACLConfig{GlobalWhiteAddrs: []string{"10.0.0.*"}, PlainAccessConfigs: []protocol.PlainAccessConfig{
		{AccessKey: "admin-key", SecretKey: "admin-secret", Admin: true, DefaultTopicPerm: "DENY", TopicPerms: []string{"t=PUB"}},
	}}
	rules, err := describedRules(c).Parse()
	if err != nil {
		t.Fatal(err)
	}
	if acc, err := rules.AuthenticateKey("10.0.0.7:1", "", "T", nil); err != nil || acc != nil {
		t.Fatalf("a globally white-listed address: %v, %v", acc, err)
	}
	acc, err := rules.AuthenticateKey("127.0.0.1:1", "admin-key", "T", func(string) error { return nil })
	if err != nil || !acc.Admin {
		t.Fatalf("admin-key: %+v, %v", acc, err)
	}
	pub := func(topic string) error {
		return rules.Authorize(acc, acl.Request{Code: "T", Resources: []acl.Resource{{Kind: acl.Topic, Name: topic, Perm: acl.Pub}}})
	}
	if err := pub("t"); err != nil {
		t.Fatal(err)
	}
	if err := pub("u"); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("PUB on a topic the default denies: %v", err)
	}
	c.PlainAccessConfigs[0].SecretKey = "short"
	if _, err := describedRules(c).Parse(); !errors.Is(err, acl.ErrBadConfig) {
		t.Fatalf("rules the file would refuse: %v", err)
	}
}

// A GET_BROKER_CLUSTER_ACL_CONFIG body from the network either is refused
// or parses into rules listing every account it names.
func FuzzClusterACLRules(f *testing.F) {
	f.Add([]byte(`{"globalWhiteAddrs":["10.0.0.*"],"plainAccessConfigs":[{"accessKey":"admin-key","secretKey":"admin-secret","admin":true,"defaultTopicPerm":"PUB|SUB","topicPerms":["t=PUB"],"groupPerms":["g=SUB"]}]}`))
	f.Add([]byte(`{"plainAccessConfigs":[{"accessKey":"a: b","secretKey":"'quoted'\n"}]}`))
	f.Add([]byte(`{"plainAccessConfigs":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := protocol.DecodeClusterACLConfig(body)
		if err != nil {
			return
		}
		rules, err := describedRules(c).Parse()
		if err != nil {
			return
		}
		for _, p := range c.PlainAccessConfigs {
			if !rules.HasAccount(p.AccessKey) {
				t.Fatalf("account %q of %s not in the rules", p.AccessKey, body)
			}
		}
	})
}
