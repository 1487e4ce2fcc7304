package metadata

import (
	"fmt"
	"strconv"
)

// Op kinds of group-wide settings and the group's format version.
const (
	// OpSettings records the group's settings (Op.Settings). The first
	// leader proposes one with Bootstrap set before any message; a
	// bootstrap op that finds settings already recorded changes nothing
	// (two leaders racing at bootstrap agree on the first).
	OpSettings = "settings"
	// OpFormatVersion raises the group's format version to Op.Version; an
	// op at or below the current version changes nothing.
	OpFormatVersion = "formatVersion"
	// OpRaftLog makes the CommitLog the group's raft log from the entry
	// that carries it on (OneLogSince): the entries after it are written
	// once, where consumers read them. An op in a group that switched
	// already changes nothing.
	OpRaftLog = "raftLog"
)

// Settings are the settings that change what a replica writes when it
// applies an entry, so every node of a group must use the same values:
// they are fixed when the group is bootstrapped and change only through
// raft.
//
//	key                 store.Config field   changes
//	------------------  -------------------  ------------------------------------
//	segmentSize         SegmentSize          where segments end: physical offsets,
//	                                         offset message ids
//	maxMessageSize      MaxMessageSize       which messages apply takes
//	unitsPerQueueFile   UnitsPerQueueFile    ConsumeQueue file geometry
//	indexSlots          IndexSlots           IndexFile geometry
//	indexEntries        IndexEntries         IndexFile geometry
//	messageDelayLevel   (broker)             delay queues and their schedule
type Settings struct {
	SegmentSize       int64  `json:"segmentSize"`
	MaxMessageSize    int    `json:"maxMessageSize"`
	UnitsPerQueueFile int    `json:"unitsPerQueueFile"`
	IndexSlots        int    `json:"indexSlots"`
	IndexEntries      int    `json:"indexEntries"`
	DelayLevels       string `json:"messageDelayLevel,omitempty"`
}

// maxDelayLevelsLen bounds the delay level text (64 levels of a few bytes).
const maxDelayLevelsLen = 4096

// Validate checks the settings' bounds (the store's own).
func (s Settings) Validate() error {
	switch {
	case s.SegmentSize < 64<<10 || s.SegmentSize > 1<<40:
		return fmt.Errorf("%w: settings: segmentSize %d", ErrBadOp, s.SegmentSize)
	case s.MaxMessageSize < 1 || int64(s.MaxMessageSize)+4096 > s.SegmentSize:
		return fmt.Errorf("%w: settings: maxMessageSize %d must be positive and fit a segment of %d", ErrBadOp, s.MaxMessageSize, s.SegmentSize)
	case s.UnitsPerQueueFile < 1 || s.IndexSlots < 1 || s.IndexEntries < 2:
		return fmt.Errorf("%w: settings: queue or index geometry %d/%d/%d", ErrBadOp, s.UnitsPerQueueFile, s.IndexSlots, s.IndexEntries)
	case len(s.DelayLevels) > maxDelayLevelsLen:
		return fmt.Errorf("%w: settings: messageDelayLevel of %d bytes", ErrBadOp, len(s.DelayLevels))
	}
	return nil
}

// Difference is one key on which two Settings differ.
type Difference struct {
	Key         string
	Group, Node string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: the group has %s, this node %s", d.Key, d.Group, d.Node)
}

// Diff lists the keys on which node differs from group (s), in the table's
// order. An empty DelayLevels on either side is not compared (a node that
// does not know the broker's table).
func (s Settings) Diff(node Settings) []Difference {
	var out []Difference
	add := func(key string, g, n int64) {
		if g != n {
			out = append(out, Difference{Key: key, Group: strconv.FormatInt(g, 10), Node: strconv.FormatInt(n, 10)})
		}
	}
	add("segmentSize", s.SegmentSize, node.SegmentSize)
	add("maxMessageSize", int64(s.MaxMessageSize), int64(node.MaxMessageSize))
	add("unitsPerQueueFile", int64(s.UnitsPerQueueFile), int64(node.UnitsPerQueueFile))
	add("indexSlots", int64(s.IndexSlots), int64(node.IndexSlots))
	add("indexEntries", int64(s.IndexEntries), int64(node.IndexEntries))
	if s.DelayLevels != "" && node.DelayLevels != "" && s.DelayLevels != node.DelayLevels {
		out = append(out, Difference{Key: "messageDelayLevel", Group: strconv.Quote(s.DelayLevels), Node: strconv.Quote(node.DelayLevels)})
	}
	return out
}

// Settings returns the group's settings, if recorded.
func (s *State) Settings() (Settings, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.settings == nil {
		return Settings{}, false
	}
	return *s.settings, true
}

// OneLogSince is the raft index of the OpRaftLog entry from which the
// group's raft log is the CommitLog, or 0 when the group never switched
// (a group created in the two-log layout, or in the one-log layout from
// its start).
func (s *State) OneLogSince() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.oneLogSince
}

// FormatVersion is the group's format version: 1 until raised.
func (s *State) FormatVersion() uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return max(1, s.formatVersion)
}
