package broker

// Access control of the front ends (package grpcapi): a front end settles
// who a call comes from with its own signature (Authenticate, against the
// group's rules in force), then has every remoting request the call
// amounts to checked by the rule of that request's code (Authorize, the
// table of acl.go), and ServeLocal serves a request of an authenticated
// call behind that check instead of the remoting signature's. A node's
// front end relaying a call to the leader's states the client's address,
// signed with the cluster secret (NodeRelaySignature).

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/remoting"
)

// ErrUnauthenticated: a front end's call carries no valid credentials
// (no or a bad signature, an unknown account); it wraps acl.ErrDenied's
// reason. A refusal of an authenticated call wraps acl.ErrDenied alone.
var ErrUnauthenticated = errors.New("unauthenticated")

type identityKey struct{}

// ACLEnabled tells whether the broker checks access (Config.ACLEnable).
func (b *Broker) ACLEnabled() bool { return b.cfg.ACLEnable }

// Authenticate settles who a front end's call from peer comes from:
// the white lists, then the account of accessKey, whose secret key check
// verifies the call's signature with. code names the call in refusals.
// It returns ctx carrying the identity for Authorize and ServeLocal; with
// ACL off, ctx as is. Errors wrap ErrUnauthenticated.
func (b *Broker) Authenticate(ctx context.Context, peer netip.AddrPort, accessKey, code string, check func(secretKey string) error) (context.Context, error) {
	if !b.cfg.ACLEnable {
		return ctx, nil
	}
	st := b.aclInForce()
	if st == nil {
		return ctx, fmt.Errorf("%w: %w: no rules loaded", ErrUnauthenticated, acl.ErrDenied)
	}
	return authenticateWith(ctx, st.rules, peer, accessKey, code, check)
}

// Authorize checks req, a remoting request a front end's call amounts to,
// for the identity Authenticate put in ctx, by the rule of req's code (the
// admin flag, the topics and groups it names); a nil req needs only the
// identity. With ACL off it allows everything.
func (b *Broker) Authorize(ctx context.Context, req *remoting.Command) error {
	if !b.cfg.ACLEnable {
		return nil
	}
	return authorizeIdentity(ctx, req)
}

// nodeRelayLabel derives the key of NodeRelaySignature from the cluster
// secret, so that it signs nothing extNodeSig signs.
const nodeRelayLabel = "ledgermq node relay statement v1"

// NodeRelaySignature is this node's signature of a front end's statement
// that a call it relays to the group's leader, at dateTime, is for a
// client at relayedFor (the leader checks the call from that address,
// package grpcapi's relayauth.go): HMAC-SHA256 over dateTime, a newline
// and relayedFor, keyed with HMAC-SHA256 of nodeRelayLabel under the
// cluster secret. ok is false when the node signs nothing (ACL off or no
// ClusterSecret); a node checks a statement by computing it again.
func (b *Broker) NodeRelaySignature(dateTime, relayedFor string) (sig []byte, ok bool) {
	if !b.cfg.ACLEnable || b.cfg.ClusterSecret == "" {
		return nil, false
	}
	key := hmac.New(sha256.New, []byte(b.cfg.ClusterSecret))
	key.Write([]byte(nodeRelayLabel))
	mac := hmac.New(sha256.New, key.Sum(nil))
	mac.Write([]byte(dateTime))
	mac.Write([]byte{'\n'})
	mac.Write([]byte(relayedFor))
	return mac.Sum(nil), true
}

// Identity is who a front end's call comes from by one set of rules: an
// account, or a white-listed address (no account).
type Identity struct {
	rules *acl.ACL
	acc   *acl.Account
}

// AuthenticateRules settles who a call from peer comes from by rules, as
// Authenticate does by the group's rules in force: for a front end that
// is no broker node (the proxy: package grpcapi's cluster mode), which
// holds each broker group's rules and checks a call by the rules of the
// group that serves it. Errors wrap ErrUnauthenticated.
func AuthenticateRules(rules *acl.ACL, peer netip.AddrPort, accessKey, code string, check func(secretKey string) error) (*Identity, error) {
	addr := ""
	if peer.IsValid() {
		addr = peer.String()
	}
	acc, err := rules.AuthenticateKey(addr, accessKey, code, check)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return &Identity{rules: rules, acc: acc}, nil
}

// Authorize checks req, a remoting request a call amounts to, for id by
// the rule of req's code (acl.go's table: the admin flag, the topics and
// groups it names), as Broker.Authorize does; a nil req needs only the
// identity.
func (id *Identity) Authorize(req *remoting.Command) error {
	if id.acc == nil || req == nil {
		return nil
	}
	rule, ok := aclTable[req.Code]
	if !ok {
		return fmt.Errorf("%w: no access rule for %s", acl.ErrDenied, remoting.RequestCodeName(req.Code))
	}
	if rule.public {
		return nil
	}
	r := acl.Request{Code: remoting.RequestCodeName(req.Code), Admin: rule.admin}
	if rule.resources != nil {
		res, err := rule.resources(req)
		if err != nil {
			return err
		}
		r.Resources = res
	}
	return id.rules.Authorize(id.acc, r)
}

// authenticateWith settles the identity of a call by rules.
func authenticateWith(ctx context.Context, rules *acl.ACL, peer netip.AddrPort, accessKey, code string, check func(secretKey string) error) (context.Context, error) {
	id, err := AuthenticateRules(rules, peer, accessKey, code, check)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, identityKey{}, id), nil
}

// authorizeIdentity checks req for the identity in ctx by the rule of its
// code.
func authorizeIdentity(ctx context.Context, req *remoting.Command) error {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	if !ok {
		return fmt.Errorf("%w: %w: the call was not authenticated", ErrUnauthenticated, acl.ErrDenied)
	}
	return id.Authorize(req)
}

// authenticated tells whether ctx carries an identity of Authenticate.
func authenticated(ctx context.Context) bool {
	_, ok := ctx.Value(identityKey{}).(*Identity)
	return ok
}
