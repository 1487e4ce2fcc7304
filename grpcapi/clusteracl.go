package grpcapi

// Access control in cluster mode (ClusterConfig.ACL, `ledgermq proxy
// --acl-enable`). The proxy checks every call as a node's gRPC port does
// (auth.go, broker.RulesAccess): the same signature, the same table of
// what each call amounts to, against the same rules — the plain ACL the
// broker groups replicate through raft, which the proxy reads with
// GET_BROKER_CLUSTER_ACL_CONFIG (an admin request) from a broker group,
// signed with the proxy's own account (ClusterConfig.Credentials).
//
// Why the proxy reads the rules and holds an account of its own, rather
// than forwarding the caller's identity: a remoting signature covers each
// request's fields and body, which only the holder of the secret key can
// sign, while a RocketMQ 5 client signs only its call's date-time; so a
// proxy that signs remoting requests for the caller needs the caller's
// secret anyway. RocketMQ's own proxy does as this one: it authenticates
// and authorizes each call itself, against the rules it fetches from the
// brokers, and its inner client signs what it sends the brokers with the
// proxy's configured account. An operator therefore gives the proxy one
// admin account (the ACL's, with PUB and SUB on the topics and groups its
// clients use), and edits every other account in one place, the groups'
// plain_acl.yml, as before. Consumer calls relayed to a leader's gRPC port
// still carry the caller's signature, which the leader checks again.
//
// The rules are kept current: read at start, again every
// ClusterConfig.ACLRefresh, and at once when a call names an access key
// they do not list (at most one such read every aclRereadGap, so a
// stream of unknown keys costs one read a second). Reads fail over the
// broker groups in name order, leaders first; until one answers, calls
// are refused UNAUTHORIZED. Rules once read stay in force while later
// reads fail (each failure is logged).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/protocol"
)

const (
	// defaultACLRefresh is ClusterConfig.ACLRefresh's default.
	defaultACLRefresh = 30 * time.Second
	// aclRereadGap is the least time between two reads of the rules on an
	// unknown access key.
	aclRereadGap = time.Second
	// aclReadTimeout bounds one read of the rules (every group tried).
	aclReadTimeout = 5 * time.Second
)

// errNoACLSource: no broker group answered the rules.
var errNoACLSource = errors.New("grpcapi: no broker group answered its ACL rules")

// aclSource reads the groups' rules (clusterBackend.readACL).
type aclSource func(ctx context.Context) (*acl.ACL, error)

// clusterACL is the rules in force in cluster mode and the goroutine that
// keeps them current, owned by the backend (stopped by close).
type clusterACL struct {
	read    aclSource
	refresh time.Duration
	// gap is the least time between two reads on unknown access keys
	// (aclRereadGap).
	gap time.Duration
	log func(msg string, args ...any)

	// readMu is held by the one read under way.
	readMu sync.Mutex
	mu     sync.Mutex
	rules  *acl.ACL
	lastAt time.Time // when the last read was tried

	ctx    context.Context // ends with close: a read under way stops
	cancel context.CancelFunc
	done   chan struct{}
}

// newClusterACL starts keeping the rules current: a first read at once,
// then one every refresh, until close.
func newClusterACL(read aclSource, refresh time.Duration, log func(string, ...any)) *clusterACL {
	if refresh <= 0 {
		refresh = defaultACLRefresh
	}
	a := &clusterACL{read: read, refresh: refresh, gap: aclRereadGap, log: log, done: make(chan struct{})}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	go a.loop()
	return a
}

func (a *clusterACL) loop() {
	defer close(a.done)
	t := time.NewTicker(a.refresh)
	defer t.Stop()
	for {
		_ = a.reread(a.ctx, time.Now())
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reread reads the rules unless a read was tried after since (a caller
// that waited for the read under way takes its outcome).
func (a *clusterACL) reread(ctx context.Context, since time.Time) error {
	a.readMu.Lock()
	defer a.readMu.Unlock()
	a.mu.Lock()
	tried := a.lastAt
	a.mu.Unlock()
	if tried.After(since) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, aclReadTimeout)
	defer cancel()
	rules, err := a.read(rctx)
	a.mu.Lock()
	a.lastAt = time.Now()
	if err == nil {
		a.rules = rules
	}
	a.mu.Unlock()
	if err != nil {
		a.log("reading the broker groups' ACL rules", "error", err)
	}
	return err
}

// Rules are the rules to authenticate a call naming accessKey with (the
// Rules of broker.RulesAccess): those in force, read again first when
// there are none or they list no such account, and no read was tried in
// the last gap.
func (a *clusterACL) Rules(ctx context.Context, accessKey string) (*acl.ACL, error) {
	a.mu.Lock()
	rules, lastAt := a.rules, a.lastAt
	a.mu.Unlock()
	var err error
	if rules == nil || (accessKey != "" && !rules.HasAccount(accessKey)) {
		if lastAt.IsZero() || time.Since(lastAt) >= a.gap {
			err = a.reread(ctx, lastAt)
		}
		a.mu.Lock()
		rules = a.rules
		a.mu.Unlock()
	}
	switch {
	case rules != nil:
		return rules, nil
	case err != nil:
		return nil, err
	}
	return nil, errNoACLSource
}

// close stops the goroutine (and a read under way) and waits for it.
func (a *clusterACL) close() {
	a.cancel()
	<-a.done
}

// readACL reads the rules from the broker groups the name servers know:
// each group in name order, its leader first, until one answers.
func (c *clusterBackend) readACL(ctx context.Context) (*acl.ACL, error) {
	ci, err := c.admin.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("grpcapi: the broker groups: %w", err)
	}
	names := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	errs := []error{errNoACLSource}
	for _, n := range names {
		bd := ci.BrokerAddrTable[n]
		ids := make([]int64, 0, len(bd.BrokerAddrs))
		for id := range bd.BrokerAddrs {
			ids = append(ids, id)
		}
		slices.Sort(ids) // the leader, brokerId 0, first
		for _, id := range ids {
			addr := bd.BrokerAddrs[id]
			cfg, err := c.admin.ClusterACLConfig(ctx, addr)
			if err == nil {
				var rules *acl.ACL
				if rules, err = describedRules(cfg).Parse(); err == nil {
					return rules, nil
				}
			}
			errs = append(errs, fmt.Errorf("broker group %s at %s: %w", n, addr, err))
			if ctx.Err() != nil {
				return nil, errors.Join(errs...)
			}
		}
	}
	return nil, errors.Join(errs...)
}

// describedRules is a GET_BROKER_CLUSTER_ACL_CONFIG answer as the
// plain_acl.yml it was written from.
func describedRules(c protocol.ClusterACLConfig) acl.Description {
	d := acl.Description{GlobalWhiteAddrs: c.GlobalWhiteAddrs, Accounts: make([]acl.AccountDescription, 0, len(c.PlainAccessConfigs))}
	for _, p := range c.PlainAccessConfigs {
		d.Accounts = append(d.Accounts, acl.AccountDescription{AccessKey: p.AccessKey, SecretKey: p.SecretKey,
			WhiteRemoteAddress: p.WhiteRemoteAddress, Admin: p.Admin, DefaultTopicPerm: p.DefaultTopicPerm,
			DefaultGroupPerm: p.DefaultGroupPerm, TopicPerms: p.TopicPerms, GroupPerms: p.GroupPerms})
	}
	return d
}

// ACLReady is nil when the server can check calls: always, but in cluster
// mode with the ACL on until the groups' rules have been read (a proxy's
// /readyz).
func (s *Server) ACLReady() error {
	c, ok := s.be.(*clusterBackend)
	if !ok || c.acl == nil {
		return nil
	}
	c.acl.mu.Lock()
	defer c.acl.mu.Unlock()
	if c.acl.rules == nil {
		return errors.New("no ACL rules read from the broker groups yet")
	}
	return nil
}
