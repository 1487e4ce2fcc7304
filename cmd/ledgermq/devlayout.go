package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// maxDevGroups bounds dev's --groups (broker-a … broker-e).
const maxDevGroups = 5

// devNode is one node's fixed layout.
type devNode struct {
	id, group, addr, raft, http, grpc, dir, conf string
}

// devGroupNames are the brokerNames of n dev groups: broker-a (the one
// group of a plain dev), broker-b, ….
func devGroupNames(n int) []string {
	names := make([]string, n)
	for g := range names {
		names[g] = fmt.Sprintf("broker-%c", 'a'+g)
	}
	names[0] = devBrokerName
	return names
}

// devNodeID is the id of node i of group g: n0, n1, … in the first group
// (as dev has always named them), b0, b1, … in broker-b, and so on. Ids
// are unique across groups, so files, logs and admin commands name a
// node by its id alone.
func devNodeID(g, i int) string {
	if g == 0 {
		return fmt.Sprintf("n%d", i)
	}
	return fmt.Sprintf("%c%d", 'a'+g, i)
}

// planLayout returns every node's group, addresses and paths, group by
// group: those of an earlier run (from DIR/<id>.conf) or, for a group new
// to dir, free loopback ports other than those of avoid (the name
// server's, which is not listening yet) and of the other nodes. A
// directory may gain groups; a group's size never changes.
func planLayout(dir string, groups, n int, avoid ...string) ([]devNode, error) {
	skip := map[int]bool{}
	for _, a := range avoid {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			skip[int(ap.Port())] = true
		}
	}
	exists := func(id string) bool {
		_, err := os.Stat(filepath.Join(dir, id+".conf"))
		return err == nil
	}
	if exists(devNodeID(groups, 0)) {
		return nil, fmt.Errorf("%w: %s holds more than %d groups; use its --groups or another --dir", errDevConfig, dir, groups)
	}
	var out []devNode
	var fresh []int // indexes in out of the nodes of new groups
	for g, name := range devGroupNames(groups) {
		nodes := make([]devNode, n)
		existing := 0
		for i := range nodes {
			id := devNodeID(g, i)
			nodes[i] = devNode{id: id, group: name, dir: filepath.Join(dir, id), conf: filepath.Join(dir, id+".conf")}
			if exists(id) {
				existing++
			}
		}
		if exists(devNodeID(g, n)) || (existing > 0 && existing < n) {
			return nil, fmt.Errorf("%w: %s holds a group of a different size; use its --nodes or another --dir", errDevConfig, dir)
		}
		for i := range nodes {
			if existing == 0 {
				fresh = append(fresh, len(out))
			} else if err := readNodeLayout(&nodes[i], skip); err != nil {
				return nil, err
			}
			out = append(out, nodes[i])
		}
	}
	ports, err := freePorts(4*len(fresh), skip)
	if err != nil {
		return nil, err
	}
	for k, i := range fresh {
		out[i].addr = fmt.Sprintf("127.0.0.1:%d", ports[4*k])
		out[i].raft = fmt.Sprintf("127.0.0.1:%d", ports[4*k+1])
		out[i].http = fmt.Sprintf("127.0.0.1:%d", ports[4*k+2])
		out[i].grpc = fmt.Sprintf("127.0.0.1:%d", ports[4*k+3])
	}
	return out, nil
}

// readNodeLayout fills n's addresses from its config of an earlier run and
// checks they are free; their ports join skip.
func readNodeLayout(n *devNode, skip map[int]bool) error {
	fs := pflag.NewFlagSet("dev", pflag.ContinueOnError)
	addBrokerFlags(fs)
	if err := fs.Set("config", n.conf); err != nil {
		return err
	}
	cfg, err := loadBrokerConfig(fs, false)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errDevConfig, n.conf, err)
	}
	n.addr, n.raft, n.http, n.grpc = cfg.ClientAddr, cfg.RaftBind, cfg.HTTPAddr, cfg.GRPCListen
	for _, a := range []*string{&n.http, &n.grpc} {
		if *a == "" { // a directory of an older dev
			ports, err := freePorts(1, skip)
			if err != nil {
				return err
			}
			skip[ports[0]] = true
			*a = fmt.Sprintf("127.0.0.1:%d", ports[0])
		}
	}
	for _, a := range []string{n.addr, n.raft, n.http, n.grpc} {
		if err := checkFree(a); err != nil {
			return fmt.Errorf("%w: %s keeps address %s from an earlier run, but: %w", errDevConfig, n.id, a, err)
		}
		if ap, err := netip.ParseAddrPort(a); err == nil {
			skip[int(ap.Port())] = true
		}
	}
	return nil
}

// nodeConfText is node n's broker config file; all is every node of every
// group (n's raft peers are those of its group); extra are KEY=VALUE lines
// added at its end (a key dev sets itself cannot be given again: the node
// refuses a config that sets a key twice).
func nodeConfText(n devNode, all []devNode, namesrv, timing string, extra []string) []byte {
	var peers, clients, grpcs []string
	for _, o := range all {
		if o.group != n.group {
			continue
		}
		peers = append(peers, o.id+"-"+o.raft)
		clients = append(clients, o.id+"-"+o.addr)
		grpcs = append(grpcs, o.id+"-"+o.grpc)
	}
	ap := netip.MustParseAddrPort(n.addr)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `ledgermq dev` on every run; edits are lost.\n")
	fmt.Fprintf(&b, "brokerClusterName=DefaultCluster\nbrokerName=%s\n", n.group)
	fmt.Fprintf(&b, "brokerIP1=%s\nlistenPort=%d\n", ap.Addr(), ap.Port())
	fmt.Fprintf(&b, "namesrvAddr=%s\nstorePathRootDir=%s\n", namesrv, escapeProperty(n.dir, false))
	fmt.Fprintf(&b, "registerNameServerPeriod=10000\n")
	fmt.Fprintf(&b, "enableDLegerCommitLog=true\ndLegerGroup=%s\ndLegerSelfId=%s\n", n.group, n.id)
	fmt.Fprintf(&b, "dLegerPeers=%s\n", strings.Join(peers, ";"))
	fmt.Fprintf(&b, "raft.client_addrs=%s\nraft.timing=%s\n", strings.Join(clients, ";"), timing)
	fmt.Fprintf(&b, "http_addr=%s\n", n.http)
	fmt.Fprintf(&b, "grpc_listen=%s\ngrpc_addrs=%s\n", n.grpc, strings.Join(grpcs, ";"))
	// A small raft log segment (raft-wal allocates each one whole), unless
	// --node-conf sets it.
	if !slices.ContainsFunc(extra, func(kv string) bool { return strings.HasPrefix(kv, "raft.segment_size=") }) {
		fmt.Fprintf(&b, "raft.segment_size=%d\n", devRaftSegmentSize)
	}
	for _, kv := range extra {
		fmt.Fprintf(&b, "%s\n", kv)
	}
	return []byte(b.String())
}
