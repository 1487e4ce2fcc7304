package grpcapi

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// fakeRules is a source of rules by broker group that counts its reads.
type fakeRules struct {
	mu     sync.Mutex
	groups map[string]groupRules
	err    error
	reads  int
}

func (f *fakeRules) read(context.Context) (map[string]groupRules, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	out := make(map[string]groupRules, len(f.groups))
	for k, v := range f.groups {
		out[k] = v
	}
	return out, nil
}

// set makes broker-a's rules yml, or, with err, broker-a's read fail
// (the only group); yml "" and err nil: the groups cannot be listed.
func (f *fakeRules) set(t *testing.T, yml string, err error) {
	t.Helper()
	f.mu.Lock()
	f.groups, f.err = nil, nil
	f.mu.Unlock()
	if yml == "" && err != nil {
		f.setGroup(t, "broker-a", "", err)
		return
	}
	f.setGroup(t, "broker-a", yml, err)
}

// setGroup sets one group's rules (yml) or read error; yml "" and err
// nil drops the group from the listing.
func (f *fakeRules) setGroup(t *testing.T, group, yml string, err error) {
	t.Helper()
	var rules *acl.ACL
	if yml != "" {
		var perr error
		if rules, perr = acl.Parse([]byte(yml)); perr != nil {
			t.Fatal(perr)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups == nil {
		f.groups = map[string]groupRules{}
	}
	if yml == "" && err == nil {
		delete(f.groups, group)
		return
	}
	f.groups[group] = groupRules{rules: rules, err: err}
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
	if err != nil || !r["broker-a"].HasAccount("alpha-key") || src.count() != 1 {
		t.Fatalf("first need: %v, %v after %d reads", r, err, src.count())
	}
	src.set(t, rulesBeta, nil)
	if r, err := a.Rules(ctx, "beta-key"); err != nil || r["broker-a"].HasAccount("beta-key") || src.count() != 1 {
		t.Fatalf("an unknown key within the gap: %v, %v after %d reads", r, err, src.count())
	}
	if _, err := a.Rules(ctx, "alpha-key"); err != nil || src.count() != 1 {
		t.Fatalf("a known key: %v after %d reads", err, src.count())
	}
	a.gap = 0
	if r, err := a.Rules(ctx, "beta-key"); err != nil || !r["broker-a"].HasAccount("beta-key") || src.count() != 2 {
		t.Fatalf("an unknown key after the gap: %v after %d reads", err, src.count())
	}
	boom := errors.New("no group answers")
	src.set(t, "", boom)
	if r, err := a.Rules(ctx, "gamma-key"); err != nil || !r["broker-a"].HasAccount("beta-key") || src.count() != 3 {
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
	if r, err := a.Rules(context.Background(), "alpha-key"); err != nil || !r["broker-a"].HasAccount("alpha-key") || src.count() != n {
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

const (
	// Two groups whose rules differ: alpha-key may publish to T in
	// broker-a only, beta-key exists in broker-b only, and broker-b
	// white-lists 127.0.0.9.
	rulesGroupA = "accounts:\n  - accessKey: alpha-key\n    secretKey: alpha-secret\n    topicPerms:\n      - T=PUB\n"
	rulesGroupB = "globalWhiteRemoteAddresses:\n  - 127.0.0.9\naccounts:\n" +
		"  - accessKey: alpha-key\n    secretKey: alpha-secret\n    topicPerms:\n      - T=DENY\n" +
		"  - accessKey: beta-key\n    secretKey: beta-secret\n    topicPerms:\n      - T=PUB\n"
)

// Each group's rules are its own: a call passes the port's check when
// one group's rules admit it, and a request is allowed in a group only
// by that group's rules; a group whose read fails keeps its rules, a
// group no longer listed loses them.
func TestClusterACLGroups(t *testing.T) {
	ctx := context.Background()
	src := &fakeRules{}
	src.setGroup(t, "broker-a", rulesGroupA, nil)
	src.setGroup(t, "broker-b", rulesGroupB, nil)
	a := &clusterACL{read: src.read, gap: time.Hour, log: func(string, ...any) {}}
	access := groupsAccess{acl: a}
	be := &clusterBackend{acl: a}
	secretIs := func(want string) func(string) error {
		return func(got string) error {
			if got != want {
				return errors.New("signature does not match")
			}
			return nil
		}
	}
	peer := netip.MustParseAddrPort("127.0.0.1:5000")
	pub := extRequest(remoting.SendMessageV2, "b", "T")
	routes := []groupRoute{{name: "broker-a"}, {name: "broker-b"}}
	names := func(rs []groupRoute) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.name)
		}
		return strings.Join(out, ",")
	}

	actx, err := access.Authenticate(ctx, peer, "alpha-key", "SendMessage", secretIs("alpha-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := access.Authorize(actx, pub); err != nil {
		t.Fatalf("PUB on T, allowed by broker-a: %v", err)
	}
	if err := be.admits(actx, "broker-a", pub); err != nil {
		t.Fatalf("broker-a: %v", err)
	}
	if err := be.admits(actx, "broker-b", pub); !errors.Is(err, acl.ErrDenied) || errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("broker-b denies PUB on T: %v", err)
	}
	if got := names(be.admitting(actx, routes, pub)); got != "broker-a" {
		t.Fatalf("groups admitting the send: %s", got)
	}

	bctx, err := access.Authenticate(ctx, peer, "beta-key", "SendMessage", secretIs("beta-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := be.admits(bctx, "broker-a", pub); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("broker-a does not know beta-key: %v", err)
	}
	if err := be.admits(bctx, "broker-b", pub); err != nil {
		t.Fatalf("broker-b: %v", err)
	}
	if _, err := access.Authenticate(ctx, peer, "beta-key", "SendMessage", secretIs("other")); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("a wrong signature: %v", err)
	}
	if _, err := access.Authenticate(ctx, peer, "", "SendMessage", secretIs("")); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("unsigned from an address no group white-lists: %v", err)
	}

	// White-listed by broker-b only.
	wctx, err := access.Authenticate(ctx, netip.MustParseAddrPort("127.0.0.9:5000"), "", "SendMessage", secretIs(""))
	if err != nil {
		t.Fatalf("an address broker-b white-lists: %v", err)
	}
	if err := be.admits(wctx, "broker-b", pub); err != nil {
		t.Fatalf("broker-b admits its white-listed address: %v", err)
	}
	if err := be.admits(wctx, "broker-a", pub); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("broker-a does not white-list the address: %v", err)
	}

	// broker-b's read fails: its rules stay; broker-b no longer listed:
	// they go.
	a.gap = 0
	src.setGroup(t, "broker-b", "", errors.New("no node answers"))
	if err := a.reread(ctx, time.Now()); err == nil {
		t.Fatal("a failed read of broker-b reported no error")
	}
	if err := be.admits(bctx, "broker-b", pub); err != nil {
		t.Fatalf("broker-b's rules after a failed read: %v", err)
	}
	src.setGroup(t, "broker-b", "", nil)
	if err := a.reread(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := be.admits(bctx, "broker-b", pub); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("a group no longer listed: %v", err)
	}
	if _, err := access.Authenticate(ctx, peer, "beta-key", "SendMessage", secretIs("beta-secret")); !errors.Is(err, broker.ErrUnauthenticated) {
		t.Fatalf("beta-key with broker-b gone: %v", err)
	}
}
