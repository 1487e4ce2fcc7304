//go:build unix

package jepsen

import (
	"errors"
	"fmt"

	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// Power loss (NemPower): the targets are killed with SIGKILL, then every
// file their durable-length report (internal/syncreport, switched on by
// store.sync_report in every node's config when the plan has a power
// fault) records is cut back to what an fsync made durable, which drops
// what the page cache held and the disk did not; the healing restarts
// them. Targets "all" is every node at once.

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
