package dledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// nodeSettings are the group-wide settings as this node's store and
// configuration have them.
func nodeSettings(g store.Geometry, maxMessageSize int, delayLevels string) metadata.Settings {
	return metadata.Settings{
		SegmentSize:       g.SegmentSize,
		MaxMessageSize:    maxMessageSize,
		UnitsPerQueueFile: g.UnitsPerQueueFile,
		IndexSlots:        g.IndexSlots,
		IndexEntries:      g.IndexEntries,
		DelayLevels:       delayLevels,
	}
}

func geometryOf(s metadata.Settings) store.Geometry {
	return store.Geometry{SegmentSize: s.SegmentSize, UnitsPerQueueFile: s.UnitsPerQueueFile,
		IndexSlots: s.IndexSlots, IndexEntries: s.IndexEntries}
}

func describe(ds []metadata.Difference) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// adoptOnStart gives a node that starts with the group's settings on
// record the group's values in place of its own configuration's: its
// store's files were written with them (the FSM adopted them before it
// applied anything after them). Each difference is logged.
func adoptOnStart(log hclog.Logger, gs metadata.Settings, sc store.Config, delayLevels string) (store.Config, string) {
	node := nodeSettings(store.Geometry{SegmentSize: sc.SegmentSize, UnitsPerQueueFile: sc.UnitsPerQueueFile,
		IndexSlots: sc.IndexSlots, IndexEntries: sc.IndexEntries}, sc.MaxMessageSize, delayLevels)
	for _, d := range gs.Diff(node) {
		log.Warn("this node's configuration differs from the group's settings; using the group's value",
			"key", d.Key, "group", d.Group, "node", d.Node)
	}
	sc.SegmentSize, sc.UnitsPerQueueFile, sc.IndexSlots, sc.IndexEntries =
		gs.SegmentSize, gs.UnitsPerQueueFile, gs.IndexSlots, gs.IndexEntries
	sc.MaxMessageSize = gs.MaxMessageSize
	if gs.DelayLevels != "" {
		delayLevels = gs.DelayLevels
	}
	return sc, delayLevels
}

// applySettings applies an OpSettings entry: the store takes the group's
// geometry (re-created empty, if it has never been written) and maximum
// message size before the settings are recorded, and the metadata is saved
// at once, so that after a crash the node opens its store with the
// settings its files were written with.
func (f *fsm) applySettings(index uint64, op metadata.Op) applyResult {
	if index <= f.meta.AppliedIndex() {
		return applyResult{}
	}
	if _, ok := f.meta.Settings(); ok && op.Bootstrap {
		// A second leader's bootstrap proposal: the first one stands.
		if _, err := f.meta.Apply(index, op); err != nil {
			return f.stop(index, err)
		}
		return applyResult{}
	}
	gs := *op.Settings
	if err := f.adoptSettings(gs); err != nil {
		return f.stop(index, err)
	}
	if _, err := f.meta.Apply(index, op); err != nil {
		return f.stop(index, err)
	}
	if err := f.meta.Save(f.metaPath); err != nil {
		return f.stop(index, err)
	}
	if gs.DelayLevels != "" && f.delayLevels != "" && gs.DelayLevels != f.delayLevels {
		// The broker reads its delay table at start: a restart adopts the
		// group's (Group.Settings).
		if f.fail != nil {
			f.fail(fmt.Errorf("%w: %w: messageDelayLevel: the group has %q, this node %q; restart the node to adopt the group's value",
				ErrRestartNeeded, ErrSettings, gs.DelayLevels, f.delayLevels))
		}
	}
	return applyResult{}
}

// adoptSettings makes the store follow the group's settings gs.
func (f *fsm) adoptSettings(gs metadata.Settings) error {
	cur := nodeSettings(f.store.Geometry(), f.store.MaxMessageSize(), "")
	if geometryOf(gs) != geometryOf(cur) {
		diffs := gs.Diff(cur)
		if !f.store.Empty() {
			return fmt.Errorf("%w: %s, and this node's store already holds data written with its own values "+
				"(configure the group's values, or rebuild the node with `ledgermq admin raft replace-node`)", ErrSettings, describe(diffs))
		}
		if f.log != nil {
			f.log.Warn("adopting the group's settings; this node's store is empty and is re-created with them", "differences", describe(diffs))
		}
		if err := f.store.Reconfigure(geometryOf(gs)); err != nil {
			return err
		}
	}
	if gs.MaxMessageSize != f.store.MaxMessageSize() {
		if f.log != nil {
			f.log.Info("adopting the group's maximum message size", "group", gs.MaxMessageSize, "node", f.store.MaxMessageSize())
		}
		return f.store.SetMaxMessageSize(gs.MaxMessageSize)
	}
	return nil
}

// Settings returns the group's settings once recorded (the first leader
// records them before it takes any write).
func (g *Group) Settings() (metadata.Settings, bool) { return g.meta.Settings() }

// bootstrapSettings records this leader's settings as the group's when the
// group has none yet, before the leader takes writes. Runs on the role
// goroutine after the barrier, so every entry committed before is applied
// and the check sees what the group agreed.
func (g *Group) bootstrapSettings() error {
	if _, ok := g.meta.Settings(); ok {
		return nil
	}
	s := nodeSettings(g.fsm.store.Geometry(), g.fsm.store.MaxMessageSize(), g.cfg.DelayLevels)
	return g.applyDirect(metadata.Op{Kind: metadata.OpSettings, Bootstrap: true, Settings: &s})
}

// applyDirect proposes a metadata op outside the proposer (the leader is
// not yet taking writes) and waits until it is applied here.
func (g *Group) applyDirect(op metadata.Op) error {
	data, err := encodeMetadataEntry(op)
	if err != nil {
		return err
	}
	fut := g.raft.Apply(data, g.cfg.ApplyTimeout)
	if err := g.awaitRaft(fut); err != nil {
		return mapRaftError(err)
	}
	if res, ok := fut.Response().(applyResult); ok && res.err != nil {
		return res.err
	}
	return nil
}

// ProposeSettings changes the group's settings through raft. The geometry
// (segment size, queue and index file sizes) is fixed once the group
// exists, and the maximum message size may only grow: a smaller one could
// refuse, at apply, a message the leader had accepted under the old value.
// Leader only; ErrSettings names what cannot change.
func (g *Group) ProposeSettings(ctx context.Context, s metadata.Settings) error {
	cur, ok := g.meta.Settings()
	if !ok {
		return fmt.Errorf("%w: the group has not recorded its settings yet", ErrNotReady)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if geometryOf(s) != geometryOf(cur) {
		return fmt.Errorf("%w: %s: the segment size and the queue and index file sizes are fixed when the group is created",
			ErrSettings, describe(cur.Diff(s)))
	}
	if s.MaxMessageSize < cur.MaxMessageSize {
		return fmt.Errorf("%w: maxMessageSize may only grow (the group has %d, proposed %d)", ErrSettings, cur.MaxMessageSize, s.MaxMessageSize)
	}
	err := g.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpSettings, Settings: &s})
	if errors.Is(err, metadata.ErrBadOp) {
		return fmt.Errorf("%w: %w", ErrSettings, err)
	}
	return err
}
