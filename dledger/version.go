package dledger

import (
	"fmt"

	"github.com/ledgermq/ledgermq/metadata"
)

// Format versions: what entries a group may carry. A new entry kind or
// layout gets a new version, and the leader proposes it only once the
// group's version (replicated, metadata.State.FormatVersion) allows it; the
// group's version is raised through raft only when every voter reports
// that it supports it (see doc.go, "Versions").
//
//	version  adds
//	-------  --------------------------------------------------------------
//	1        messages, metadata ops, messages and an op (types 1 to 3)
//	2        replica checkpoints (type 4)
const (
	formatVersionMin = 1
	formatVersionMax = 2
)

// applyFormatVersion applies an OpFormatVersion entry. A version above
// what this node supports stops it: the group is about to propose entries
// this binary cannot apply (the leader raises the version only when every
// voter supports it, so this is a node that was downgraded since).
func (f *fsm) applyFormatVersion(index uint64, op metadata.Op) applyResult {
	if op.Version > f.maxVersion() {
		return f.stop(index, fmt.Errorf("%w: the group moves to format version %d, this node supports up to %d; run a newer binary",
			ErrBadEntry, op.Version, f.maxVersion()))
	}
	if _, err := f.meta.Apply(index, op); err != nil {
		return f.stop(index, err)
	}
	return applyResult{}
}

func (f *fsm) maxVersion() uint32 {
	if f.maxFormat != 0 {
		return f.maxFormat
	}
	return formatVersionMax
}
