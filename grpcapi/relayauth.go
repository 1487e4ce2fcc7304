package grpcapi

// The caller's address on a relayed call. The proxy relays a consumer
// call to the leader's gRPC port on its own connection, so the leader
// would see the proxy's address, not the client's: a client that the
// ACL admits by its address alone (globalWhiteRemoteAddresses, an
// account's whiteRemoteAddress) would be admitted by the proxy and
// refused by the leader. So the proxy states the client's address in
// the relayed call and signs the statement with its own account (the
// admin account it reads the groups' rules with, ClusterConfig.
// Credentials), in three metadata entries:
//
//	x-ledgermq-relayed-for:          203.0.113.7:52100   (the client's ip:port)
//	x-ledgermq-relay-date-time:      20240102T030405Z
//	x-ledgermq-relay-authorization:  MQv2-HMAC-SHA1 Credential=<AccessKey>,
//	    SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature=<hex>
//
// where the signature is HMAC-SHA1 keyed with the account's secret key
// over the date-time, a newline and the address. A port checking calls
// (Config.Access) takes the stated address in place of the connection's
// only when the statement's signature verifies for an account of its
// rules (checked from the connection's address, so white lists apply as
// to any call) that is an admin account, the kind that may read and
// change the rules anyway; a call carrying any of the entries otherwise
// is refused UNAUTHORIZED, so a client cannot claim another's address.
// The client's own signature, if any, is still checked, by its own
// account. As for the clients' signature, the date-time is not held
// against the clock: TLS keeps a statement from being replayed by an
// eavesdropper. A proxy without an account states nothing.
//
// A follower relays a consumer call to the leader's gRPC port too
// (forward.go), and states the address it checked the call from in the
// same entries, signed by the node with the group's cluster secret
// (broker ClusterSecret, which the nodes sign what they forward to each
// other over remoting with) under a scheme of its own:
//
//	x-ledgermq-relay-authorization:  LedgerMQ-Node-HMAC-SHA256 Credential=<node id>,
//	    SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature=<hex>
//
// where the signature is Access.NodeRelaySignature (HMAC-SHA256 under a
// key derived from the secret for this statement alone) of the date-time
// and the address. The scheme names which check applies, and the
// signatures differ in length, so a proxy's statement is never taken for
// a node's nor the other way round. A node takes a node's statement only
// when the signature is the one it computes with its own cluster secret;
// the proxy, which holds none, takes none.

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the clients' algorithm
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/ledgermq/ledgermq/remoting"
)

// Metadata keys of a relay's statement.
const (
	mdRelayedFor         = "x-ledgermq-relayed-for"
	mdRelayDateTime      = "x-ledgermq-relay-date-time"
	mdRelayAuthorization = "x-ledgermq-relay-authorization"
	// nodeRelayAlgorithm is the scheme of a node's statement.
	nodeRelayAlgorithm = "LedgerMQ-Node-HMAC-SHA256"
	// dateTimeLayout is the clients' x-mq-date-time layout.
	dateTimeLayout = "20060102T150405Z"
	// maxRelayEntry bounds the address and date-time entries parsed.
	maxRelayEntry = 128
)

// relayClaim is a relay's statement: the client's address, the
// date-time and the signature of the account vouching for them, or, node
// set, of the node (auth.AccessKey its id) signing with the cluster
// secret.
type relayClaim struct {
	forRaw   string
	addr     netip.AddrPort
	dateTime string
	node     bool
	auth     authHeader
}

// parseRelay reads a relay's statement from a call's metadata: stated
// false when the call carries none of its entries; an error when it
// carries some but not a well-formed statement (each entry once, an
// ip:port, a date-time, an authorization signing both).
func parseRelay(md metadata.MD) (relayClaim, bool, error) {
	fors, dts, auths := md.Get(mdRelayedFor), md.Get(mdRelayDateTime), md.Get(mdRelayAuthorization)
	if len(fors) == 0 && len(dts) == 0 && len(auths) == 0 {
		return relayClaim{}, false, nil
	}
	if len(fors) != 1 || len(dts) != 1 || len(auths) != 1 {
		return relayClaim{}, true, fmt.Errorf("a relayed call needs one each of %s, %s and %s", mdRelayedFor, mdRelayDateTime, mdRelayAuthorization)
	}
	c := relayClaim{forRaw: fors[0], dateTime: dts[0]}
	if len(c.forRaw) > maxRelayEntry || len(c.dateTime) > maxRelayEntry {
		return relayClaim{}, true, errors.New("a relay's entries are too long")
	}
	addr, err := netip.ParseAddrPort(c.forRaw)
	if err != nil {
		return relayClaim{}, true, fmt.Errorf("%s: %w", mdRelayedFor, err)
	}
	c.addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	if _, err := time.Parse(dateTimeLayout, c.dateTime); err != nil {
		return relayClaim{}, true, fmt.Errorf("%s: %w", mdRelayDateTime, err)
	}
	if strings.HasPrefix(strings.TrimSpace(auths[0]), nodeRelayAlgorithm) {
		c.node = true
		c.auth, err = parseSignedWith(auths[0], nodeRelayAlgorithm, sha256.Size, mdRelayDateTime, mdRelayedFor)
	} else {
		c.auth, err = parseSigned(auths[0], mdRelayDateTime, mdRelayedFor)
	}
	if err != nil {
		return relayClaim{}, true, fmt.Errorf("%s: %w", mdRelayAuthorization, err)
	}
	return c, true, nil
}

// signRelay is the signature of a relay's statement with secretKey.
func signRelay(secretKey, dateTime, relayedFor string) []byte {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write([]byte(dateTime))
	mac.Write([]byte{'\n'})
	mac.Write([]byte(relayedFor))
	return mac.Sum(nil)
}

// relayStatement is ctx with the statement that the call is relayed for
// a client at from, signed with the account accessKey/secretKey.
func relayStatement(ctx context.Context, from netip.AddrPort, accessKey, secretKey string, now time.Time) context.Context {
	dt := now.UTC().Format(dateTimeLayout)
	sig := hex.EncodeToString(signRelay(secretKey, dt, from.String()))
	return metadata.AppendToOutgoingContext(ctx, mdRelayedFor, from.String(), mdRelayDateTime, dt,
		mdRelayAuthorization, authAlgorithm+" Credential="+accessKey+", SignedHeaders="+mdRelayDateTime+";"+mdRelayedFor+", Signature="+sig)
}

// nodeStatement is ctx with node's statement that the call is relayed for
// a client at from, signed with signNode (Access.NodeRelaySignature); ctx
// as is when signNode has no secret to sign with.
func nodeStatement(ctx context.Context, from netip.AddrPort, node string, now time.Time,
	signNode func(dateTime, relayedFor string) ([]byte, bool)) context.Context {
	dt := now.UTC().Format(dateTimeLayout)
	sig, ok := signNode(dt, from.String())
	if !ok {
		return ctx
	}
	if node == "" {
		node = "node" // the Credential names someone
	}
	return metadata.AppendToOutgoingContext(ctx, mdRelayedFor, from.String(), mdRelayDateTime, dt,
		mdRelayAuthorization, nodeRelayAlgorithm+" Credential="+node+", SignedHeaders="+mdRelayDateTime+";"+mdRelayedFor+
			", Signature="+hex.EncodeToString(sig))
}

// checkedFromKey is the context key of the address a call was checked
// from (authenticate).
type checkedFromKey struct{}

// checkedFrom is the address ctx's call was checked from: the one a relay
// vouched for, else the connection's.
func checkedFrom(ctx context.Context) netip.AddrPort {
	if a, ok := ctx.Value(checkedFromKey{}).(netip.AddrPort); ok {
		return a
	}
	return peerOf(ctx)
}

// callerAddr is the address a call is checked from: the client's a relay
// states and vouches for, else the connection's.
func (s *Server) callerAddr(ctx context.Context, md metadata.MD, fullMethod string) (netip.AddrPort, error) {
	peer := peerOf(ctx)
	c, stated, err := parseRelay(md)
	switch {
	case err != nil:
		return peer, fmt.Errorf("the relay's statement: %w", err)
	case !stated:
		return peer, nil
	}
	if c.node {
		want, ok := s.cfg.Access.NodeRelaySignature(c.dateTime, c.forRaw)
		switch {
		case !ok:
			return peer, fmt.Errorf("node %s vouching for %s: no cluster secret here to check a node's statement with", c.auth.AccessKey, c.forRaw)
		case !hmac.Equal(c.auth.Signature, want):
			return peer, fmt.Errorf("node %s vouching for %s: the signature does not match the cluster secret", c.auth.AccessKey, c.forRaw)
		}
		return c.addr, nil
	}
	check := func(secretKey string) error {
		if !hmac.Equal(c.auth.Signature, signRelay(secretKey, c.dateTime, c.forRaw)) {
			return errors.New("the relay's signature does not match")
		}
		return nil
	}
	rctx, err := s.cfg.Access.Authenticate(ctx, peer, c.auth.AccessKey, "relay of "+methodName(fullMethod), check)
	if err != nil {
		return peer, fmt.Errorf("the relay vouching for %s: %w", c.forRaw, err)
	}
	// An admin account's request stands for "may vouch".
	if err := s.cfg.Access.Authorize(rctx, extRequest(remoting.GetBrokerClusterACLConfig)); err != nil {
		return peer, fmt.Errorf("the relay's account %s may not vouch for a caller's address (an admin account may): %w", c.auth.AccessKey, err)
	}
	return c.addr, nil
}

// relayContext is the context of a consumer call relayed to a leader: the
// client's signature (relayContext) and, when the proxy has an account,
// its statement of the client's address.
func (c *clusterBackend) relayContext(ctx context.Context) context.Context {
	out := relayContext(ctx, "")
	creds := c.cfg.Credentials
	if from := peerOf(ctx); creds.AccessKey != "" && from.IsValid() {
		out = relayStatement(out, from, creds.AccessKey, creds.SecretKey, time.Now())
	}
	return out
}
