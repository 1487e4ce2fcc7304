//go:build unix

package jepsen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// Power loss (NemPower): the targets are killed with SIGKILL, then every
// file their durable-length report (internal/syncreport, switched on by
// store.sync_report in every node's config when the plan has a power
// fault) records is cut back to what an fsync made durable, which drops
// what the page cache held and the disk did not, and the node's boot
// record says that the machine has booted since (dledger.MarkPowerLoss:
// under ASYNC_FLUSH the node then abstains from votes until it has caught
// up); the healing restarts them. Targets "all" is every node at once.

// TargetAll selects every node (power faults).
const TargetAll = "all"

// power kills targets, cuts their files and returns the restart.
func (n *nemesis) power(targets []string) (func() error, error) {
	var errs []error
	for _, t := range targets {
		errs = append(errs, n.c.Kill(t))
	}
	for _, t := range targets {
		nd := n.c.node(t)
		if nd == nil {
			errs = append(errs, fmt.Errorf("%w: no node %q", ErrCluster, t))
			continue
		}
		st, err := syncreport.Cut(nd.Dir)
		if err == nil {
			err = dledger.MarkPowerLoss(nd.Dir)
		}
		ev := stepEvent(NemPower, n.c.eventGroup(t), []string{t},
			fmt.Sprintf("cut %s: %d files cut back, %d bytes dropped, %d untracked files kept, %d recorded files gone",
				t, st.Files, st.Dropped, st.Untracked, st.Missing), err)
		errs = append(errs, err)
		n.h.Add(ev)
		n.log("nemesis: %s", ev.Detail)
	}
	return n.restarter(targets), errors.Join(errs...)
}

// needsSyncReport reports whether p has a power fault (its nodes then
// record what their fsyncs made durable).
func needsSyncReport(p Plan) bool {
	for _, f := range p.Faults {
		if f.Kind == NemPower {
			return true
		}
	}
	return false
}

// powerToMinority narrows every power fault of p on all of a group's nodes
// to its leader unless nodeConf makes the nodes fsync every append
// (SYNC_FLUSH), and returns how many it narrowed. Under ASYNC_FLUSH (the
// default) an acknowledged entry is durable on a majority only in page
// caches: a node that loses its own recovers it from the others
// (dledger's abstention), but a power loss of most of the group at once
// may lose it, which the mode allows.
func powerToMinority(p *Plan, nodeConf []string) int {
	if syncFlush(nodeConf) {
		return 0
	}
	n := 0
	p.Faults = slices.Clone(p.Faults) // the caller's plan stays as it was
	for i := range p.Faults {
		f := &p.Faults[i]
		if f.Kind == NemPower && slices.Contains(f.Targets, TargetAll) {
			f.Targets = []string{TargetLeader}
			n++
		}
	}
	return n
}

// syncFlush reports whether the KEY=VALUE lines of nodeConf set the flush
// mode to SYNC_FLUSH (the last setting wins, as in a config file).
func syncFlush(nodeConf []string) bool {
	sync := false
	for _, kv := range nodeConf {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "store.flush_disk_type", "flushDiskType":
			sync = strings.EqualFold(strings.TrimSpace(v), "SYNC_FLUSH") || strings.EqualFold(strings.TrimSpace(v), "SYNC")
		}
	}
	return sync
}
