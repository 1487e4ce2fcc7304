package main

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/ledgermq/ledgermq/dledger"
)

// parsePeers parses DLedger's "n0-host:port;n1-host:port" (also
// ","-separated). The id ends at the first '-'.
func parsePeers(s string) ([]dledger.Peer, error) {
	var out []dledger.Peer
	seen := map[string]bool{}
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "-")
		if !ok || id == "" || seen[id] {
			return nil, fmt.Errorf("%q: want unique id-host:port entries", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %s is not host:port", part, addr)
		}
		seen[id] = true
		out = append(out, dledger.Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// validHost reports whether h is an IP address or a DNS host name
// (dot-separated labels of letters, digits and inner hyphens).
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// peerWarnings warns of raft peers given as IP addresses on Kubernetes
// (inKubernetes: KUBERNETES_SERVICE_HOST is set). A group keeps the
// addresses it was bootstrapped with in raft's configuration, which only a
// membership change rewrites: a pod rescheduled with another IP is then
// unreachable to its group under its old address. The pods' stable names
// (the headless Service's, deploy/kubernetes/) are re-resolved at every
// dial. Loopback addresses (one machine) are never warned of.
func peerWarnings(peers []dledger.Peer, inKubernetes bool) []string {
	if !inKubernetes {
		return nil
	}
	var ips []string
	for _, p := range peers {
		host, _, err := net.SplitHostPort(p.Addr)
		if err != nil {
			continue
		}
		if ip, err := netip.ParseAddr(host); err == nil && !ip.IsLoopback() {
			ips = append(ips, p.ID+"-"+p.Addr)
		}
	}
	if len(ips) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("raft.peers %s are IP addresses on Kubernetes: the group keeps them in raft's configuration, "+
		"so a pod rescheduled with another IP cannot rejoin under its old one until a membership change replaces it; "+
		"name the peers by their headless Service's pod names (deploy/kubernetes/)", strings.Join(ips, ";"))}
}
