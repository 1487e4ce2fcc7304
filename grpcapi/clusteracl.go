package grpcapi

// Access control in cluster mode (ClusterConfig.ACL, `ledgermq proxy
// --acl-enable`). The proxy checks every call as a node's gRPC port does
// (auth.go): the same signature, the same table of what each call
// amounts to (broker.Identity.Authorize), against the same rules — the
// plain ACL each broker group replicates through raft, which the proxy
// reads with GET_BROKER_CLUSTER_ACL_CONFIG (an admin request) from every
// group, signed with the proxy's own account (ClusterConfig.Credentials).
//
// Whose rules: the groups' plain_acl.yml may differ, and a request is
// checked against the rules of the group that serves it, as that group
// would check it itself:
//
//	call                                  checked against the rules of
//	------------------------------------  ----------------------------------
//	SendMessage                           the group the message goes to
//	                                      (picked among the groups whose
//	                                      rules let the caller publish to
//	                                      the topic, when any does)
//	EndTransaction                        the group the transaction id names
//	RecallMessage                         the group the recall handle names
//	ReceiveMessage                        the group received from (picked
//	                                      among those whose rules let the
//	                                      caller subscribe, when the client
//	                                      names none)
//	AckMessage, ChangeInvisibleDuration,  the group the receipt handle names
//	  ForwardMessageToDeadLetterQueue
//	PullMessage, UpdateOffset, GetOffset, the group of the message queue
//	  QueryOffset
//	QueryRoute, QueryAssignment,          any group: the call passes when
//	  Heartbeat, Telemetry,               one group's rules admit the
//	  NotifyClientTermination             credentials and allow what it
//	                                      amounts to (Java's proxy checks
//	                                      such calls against the broker it
//	                                      forwards them to, any of them)
//
// So every call is first checked by the interceptor (groupsAccess): it
// passes when one group's rules admit the credentials (an account whose
// signature verifies, or a white-listed address) and allow what the call
// amounts to. A call tied to a group is then checked again by that
// group's rules alone where the group is known (clusterBackend.admits)
// and refused FORBIDDEN, naming the group, when they do not admit it.
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
// admin account (in every group's ACL, with PUB and SUB on the topics and
// groups its clients use), and edits every other account in one place
// per group, the group's plain_acl.yml, as before. Consumer calls relayed
// to a leader's gRPC port still carry the caller's signature, which the
// leader checks again, and the caller's address, vouched for by the
// proxy's account (relayauth.go), so that a client the leader's white
// lists admit by its address is admitted there too.
//
// The rules are kept current: read at start, again every
// ClusterConfig.ACLRefresh, and at once when a call names an access key
// no group's rules list or goes to a group whose rules were never read
// (at most one such read every aclRereadGap, so a stream of unknown keys
// costs one read a second). A read asks every group the name servers
// list at once, each its leader first, then its other nodes; a group
// that does not answer keeps the rules last read from it (the failure is
// logged), a group the name servers no longer list is forgotten. Until
// some group's rules are read, calls are refused UNAUTHORIZED.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// defaultACLRefresh is ClusterConfig.ACLRefresh's default.
	defaultACLRefresh = 30 * time.Second
	// aclRereadGap is the least time between two reads of the rules on an
	// unknown access key or group.
	aclRereadGap = time.Second
	// aclReadTimeout bounds one read of the rules (every group asked at
	// once, each of its nodes in turn).
	aclReadTimeout = 5 * time.Second
)

// errNoACLSource: no broker group answered its ACL rules.
var errNoACLSource = errors.New("grpcapi: no broker group answered its ACL rules")

// groupRules is one group's rules as a read found them, or the error of
// reading them.
type groupRules struct {
	rules *acl.ACL
	err   error
}

// aclSource reads every broker group's rules (clusterBackend.readACL):
// each group the name servers list, with its rules or its error; an
// error when the groups could not be listed.
type aclSource func(ctx context.Context) (map[string]groupRules, error)

// clusterACL is the rules in force in cluster mode, by broker group, and
// the goroutine that keeps them current, owned by the backend (stopped by
// close).
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
	// rules by broker group: replaced by each read, never changed in
	// place, so a caller may keep the map it was handed.
	rules  map[string]*acl.ACL
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
// that waited for the read under way takes its outcome). A group whose
// read failed keeps the rules it had, a group no longer listed is
// dropped, and a failure to list the groups keeps every group's.
func (a *clusterACL) reread(ctx context.Context, since time.Time) error {
	a.readMu.Lock()
	defer a.readMu.Unlock()
	a.mu.Lock()
	tried, old := a.lastAt, a.rules
	a.mu.Unlock()
	if tried.After(since) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, aclReadTimeout)
	defer cancel()
	got, err := a.read(rctx)
	var errs []error
	next := old
	if err != nil {
		errs = append(errs, err)
	} else {
		next = make(map[string]*acl.ACL, len(got))
		for _, name := range sortedNames(got) {
			g := got[name]
			if g.err == nil && g.rules != nil {
				next[name] = g.rules
				continue
			}
			errs = append(errs, fmt.Errorf("broker group %s: %w", name, g.err))
			if r := old[name]; r != nil {
				next[name] = r
			}
		}
	}
	a.mu.Lock()
	a.lastAt = time.Now()
	a.rules = next
	a.mu.Unlock()
	if len(errs) == 0 {
		return nil
	}
	err = errors.Join(errs...)
	a.log("reading the broker groups' ACL rules", "error", err)
	return err
}

// Rules are every group's rules to authenticate a call naming accessKey
// with: those in force, read again first when there are none or no
// group's list such an account, and no read was tried in the last gap.
func (a *clusterACL) Rules(ctx context.Context, accessKey string) (map[string]*acl.ACL, error) {
	a.mu.Lock()
	rules, lastAt := a.rules, a.lastAt
	a.mu.Unlock()
	var err error
	if len(rules) == 0 || (accessKey != "" && !anyHasAccount(rules, accessKey)) {
		if lastAt.IsZero() || time.Since(lastAt) >= a.gap {
			err = a.reread(ctx, lastAt)
		}
		a.mu.Lock()
		rules = a.rules
		a.mu.Unlock()
	}
	switch {
	case len(rules) > 0:
		return rules, nil
	case err != nil:
		return nil, err
	}
	return nil, errNoACLSource
}

// groupRulesOf is group's rules in force, read again first when there
// are none and no read was tried in the last gap; nil when there are
// none.
func (a *clusterACL) groupRulesOf(ctx context.Context, group string) *acl.ACL {
	a.mu.Lock()
	r, lastAt := a.rules[group], a.lastAt
	a.mu.Unlock()
	if r != nil || (!lastAt.IsZero() && time.Since(lastAt) < a.gap) {
		return r
	}
	_ = a.reread(ctx, lastAt)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rules[group]
}

func anyHasAccount(rules map[string]*acl.ACL, accessKey string) bool {
	for _, r := range rules {
		if r.HasAccount(accessKey) {
			return true
		}
	}
	return false
}

// sortedNames are m's keys in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// close stops the goroutine (and a read under way) and waits for it.
func (a *clusterACL) close() {
	a.cancel()
	<-a.done
}

// readACL reads the rules of every broker group the name servers know,
// the groups at once, each from its leader first, then its other nodes,
// until one answers.
func (c *clusterBackend) readACL(ctx context.Context) (map[string]groupRules, error) {
	ci, err := c.admin.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("grpcapi: the broker groups: %w", err)
	}
	names := sortedNames(ci.BrokerAddrTable)
	got := make([]groupRules, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		bd := ci.BrokerAddrTable[n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = c.readGroupACL(ctx, bd.BrokerAddrs)
		}()
	}
	wg.Wait()
	out := make(map[string]groupRules, len(names))
	for i, n := range names {
		out[n] = got[i]
	}
	return out, nil
}

// readGroupACL reads one group's rules from its nodes (by brokerId, the
// leader, 0, first) until one answers.
func (c *clusterBackend) readGroupACL(ctx context.Context, addrs map[int64]string) groupRules {
	ids := make([]int64, 0, len(addrs))
	for id := range addrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	errs := []error{errNoACLSource}
	for _, id := range ids {
		addr := addrs[id]
		cfg, err := c.admin.ClusterACLConfig(ctx, addr)
		if err == nil {
			var rules *acl.ACL
			if rules, err = describedRules(cfg).Parse(); err == nil {
				return groupRules{rules: rules}
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return groupRules{err: errors.Join(errs...)}
}

// groupsAccess is the Access of cluster mode: a call passes when one
// group's rules admit it; clusterBackend.admits checks it again by the
// rules of the group that serves it.
type groupsAccess struct {
	acl *clusterACL
}

type callerKey struct{}

// caller is a call groupsAccess authenticated: what authenticates it
// again by one group's rules, and the groups whose rules admitted its
// credentials.
type caller struct {
	peer      netip.AddrPort
	accessKey string
	code      string
	check     func(secretKey string) error
	ids       map[string]*broker.Identity
}

// Authenticate admits a call whose credentials some group's rules admit.
// Errors wrap broker.ErrUnauthenticated.
func (g groupsAccess) Authenticate(ctx context.Context, peer netip.AddrPort, accessKey, code string, check func(secretKey string) error) (context.Context, error) {
	all, err := g.acl.Rules(ctx, accessKey)
	if err != nil {
		return ctx, fmt.Errorf("%w: %w: no rules: %w", broker.ErrUnauthenticated, acl.ErrDenied, err)
	}
	c := &caller{peer: peer, accessKey: accessKey, code: code, check: check, ids: map[string]*broker.Identity{}}
	var refusals []error
	for _, name := range sortedNames(all) {
		id, err := broker.AuthenticateRules(all[name], peer, accessKey, code, check)
		if err != nil {
			refusals = append(refusals, fmt.Errorf("broker group %s: %w", name, err))
			continue
		}
		c.ids[name] = id
	}
	if len(c.ids) == 0 {
		return ctx, errors.Join(refusals...)
	}
	return context.WithValue(ctx, callerKey{}, c), nil
}

// Authorize allows req when one of the groups whose rules admitted the
// caller allows it (a nil req: the identity suffices).
func (g groupsAccess) Authorize(ctx context.Context, req *remoting.Command) error {
	c, ok := ctx.Value(callerKey{}).(*caller)
	if !ok {
		return fmt.Errorf("%w: %w: the call was not authenticated", broker.ErrUnauthenticated, acl.ErrDenied)
	}
	var first error
	for _, name := range sortedNames(c.ids) {
		err := c.ids[name].Authorize(req)
		if err == nil {
			return nil
		}
		if first == nil {
			first = fmt.Errorf("broker group %s: %w", name, err)
		}
	}
	return first
}

// NodeRelaySignature: the proxy holds no cluster secret, so it takes no
// node's statement of a caller's address.
func (groupsAccess) NodeRelaySignature(string, string) ([]byte, bool) { return nil, false }

// admits checks req, what a call served by broker group group amounts
// to, by that group's rules alone: nil when the proxy checks no ACL,
// else an error wrapping acl.ErrDenied (and broker.ErrUnauthenticated
// when the group's rules do not admit the caller's credentials).
func (c *clusterBackend) admits(ctx context.Context, group string, req *remoting.Command) error {
	if c.acl == nil {
		return nil
	}
	cl, ok := ctx.Value(callerKey{}).(*caller)
	if !ok {
		return fmt.Errorf("%w: %w: the call was not authenticated", broker.ErrUnauthenticated, acl.ErrDenied)
	}
	rules := c.acl.groupRulesOf(ctx, group)
	if rules == nil {
		return fmt.Errorf("%w: %w: no ACL rules of broker group %q read", broker.ErrUnauthenticated, acl.ErrDenied, group)
	}
	id, err := broker.AuthenticateRules(rules, cl.peer, cl.accessKey, cl.code, cl.check)
	if err == nil {
		err = id.Authorize(req)
	}
	if err != nil {
		return fmt.Errorf("broker group %s: %w", group, err)
	}
	return nil
}

// admitting are the routes whose groups' rules allow req (admits), or
// all of them when none does (the group then picked refuses the call,
// naming why).
func (c *clusterBackend) admitting(ctx context.Context, routes []groupRoute, req *remoting.Command) []groupRoute {
	if c.acl == nil {
		return routes
	}
	var out []groupRoute
	for _, r := range routes {
		if c.admits(ctx, r.name, req) == nil {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return routes
	}
	return out
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
	if len(c.acl.rules) == 0 {
		return errors.New("no ACL rules read from the broker groups yet")
	}
	return nil
}
