package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
)

// maxDevGroups bounds dev's --groups (broker-a … broker-e).
const maxDevGroups = procs.MaxGroups

// devNode is one node's fixed layout.
type devNode struct {
	id, group, addr, raft, http, grpc, dir, conf string
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
	if exists(procs.NodeID(groups, 0)) {
		return nil, fmt.Errorf("%w: %s holds more than %d groups; use its --groups or another --dir", errDevConfig, dir, groups)
	}
	var out []devNode
	var fresh []int // indexes in out of the nodes of new groups
	for g, name := range procs.GroupNames(groups) {
		nodes := make([]devNode, n)
		existing := 0
		for i := range nodes {
			id := procs.NodeID(g, i)
			nodes[i] = devNode{id: id, group: name, dir: filepath.Join(dir, id), conf: filepath.Join(dir, id+".conf")}
			if exists(id) {
				existing++
			}
		}
		if exists(procs.NodeID(g, n)) || (existing > 0 && existing < n) {
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
			*a = procs.Loopback(ports[0])
		}
	}
	for _, a := range []string{n.addr, n.raft, n.http, n.grpc} {
		if err := procs.CheckFree(a); err != nil {
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
	// A small raft log segment (raft-wal allocates each one whole), unless
	// --node-conf sets it.
	var lines []string
	if !slices.ContainsFunc(extra, func(kv string) bool { return strings.HasPrefix(kv, "raft.segment_size=") }) {
		lines = append(lines, fmt.Sprintf("raft.segment_size=%d", devRaftSegmentSize))
	}
	return procs.NodeConfig{
		Header: "Written by `ledgermq dev` on every run; edits are lost.",
		Group:  n.group, ID: n.id, Advertised: n.addr, Namesrv: namesrv, StoreDir: n.dir,
		RegisterPeriodMS: 10000, Peers: peers, ClientAddrs: clients, Timing: timing, HTTP: n.http,
		GRPCListen: n.grpc, GRPCAddrs: grpcs, Extra: append(lines, extra...),
	}.Text()
}
