package dledger

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// Peers by name. A raft address may be a host name ("broker-a-1.broker-a.
// ns.svc.cluster.local:40911"), which a node keeps across restarts where
// its IP changes (a rescheduled Kubernetes pod). Raft keeps addresses as
// they are configured and this node advertises its own as configured
// (never the IP it resolved to), so what raft stores, what a leader sends
// as its address and what the node-info asks dial are names; the TCP
// layer resolves a name at every connection it opens, and a peer that
// comes back at another IP is reached as soon as its name answers the new
// one.

// Resolver answers a host name's addresses. *net.Resolver is one
// (net.DefaultResolver in production); tests answer names of their own.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// maxDialAddrs bounds how many of a name's addresses one dial tries.
const maxDialAddrs = 8

// errNoAddress: a name that resolved to no address.
var errNoAddress = errors.New("no address")

// peerAddr is a raft address as configured, host name or IP, unresolved.
type peerAddr string

func (a peerAddr) Network() string { return "tcp" }
func (a peerAddr) String() string  { return string(a) }

// checkAdvertise checks that addr is a host:port peers can dial: a port,
// and a host name or an IP that is not unspecified (0.0.0.0, ::).
func checkAdvertise(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dledger: advertise address %q: %w", addr, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("dledger: advertise address %q: bad port", addr)
	}
	if host == "" {
		return fmt.Errorf("dledger: advertise address %s is not an address peers can dial", addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return fmt.Errorf("dledger: advertise address %s is not an address peers can dial", addr)
	}
	return nil
}

// dialByName opens a TCP connection to addr ("host:port"). An IP literal
// is dialled as is; a host name is resolved now, with r, and its
// addresses tried in order until one answers, all within ctx.
func dialByName(ctx context.Context, r Resolver, addr string) (net.Conn, error) {
	var d net.Dialer
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	ips, err := r.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: %w", host, errNoAddress)
	}
	var errs []error
	for _, ip := range ips[:min(len(ips), maxDialAddrs)] {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", addr, errors.Join(errs...))
}

// tcpLayer is a TCP stream layer (raft's own cannot be wrapped: it is
// built inside its TCP transport, and it resolves its advertise address
// once), over mutual TLS when tls is set. It dials peers by name
// (dialByName). An accepted TLS connection's handshake runs on its first
// read, which is the mux's sniff and bounded by sniffTimeout; a dialled
// one completes within the dial's timeout, and is verified against the
// name dialled.
type tcpLayer struct {
	ln       net.Listener
	adv      peerAddr
	tls      *RaftTLS
	resolver Resolver
}

func newTCPLayer(bind, adv string, rt *RaftTLS, r Resolver) (*tcpLayer, error) {
	if err := checkAdvertise(adv); err != nil {
		return nil, err
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("dledger: raft transport: %w", err)
	}
	if rt != nil {
		ln = tls.NewListener(ln, rt.Server)
	}
	return &tcpLayer{ln: ln, adv: peerAddr(adv), tls: rt, resolver: r}, nil
}

func (t *tcpLayer) Accept() (net.Conn, error) { return t.ln.Accept() }
func (t *tcpLayer) Close() error              { return t.ln.Close() }

// Addr is the advertise address as configured: raft sends it to its peers
// as this node's (a leader's, a candidate's).
func (t *tcpLayer) Addr() net.Addr { return t.adv }

func (t *tcpLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := dialByName(ctx, t.resolver, string(a))
	if err != nil {
		return nil, fmt.Errorf("dledger: raft %w", err)
	}
	if t.tls == nil {
		return c, nil
	}
	tc := tls.Client(c, tlsconf.ForAddr(t.tls.Client, string(a)))
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("dledger: raft TLS dial %s: %w", a, err)
	}
	return tc, nil
}
