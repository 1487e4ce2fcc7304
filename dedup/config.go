package dedup

import "time"

// Defaults and limits of a Config.
const (
	// DefaultWindow is the retention when Config.Window is not set: two
	// minutes, as JetStream's default duplicate window, longer than a
	// client's send timeout plus its retries across a leader change.
	DefaultWindow = 2 * time.Minute
	// DefaultMaxEntries is the entry limit when Config.MaxEntries is not
	// set: about 25 MB of window at 32-hex keys (doc.go, Memory), and two
	// minutes of a group storing up to 1 600 messages a second.
	DefaultMaxEntries = 200_000
	// MaxEntriesLimit is the largest MaxEntries a window takes: New clamps
	// to it and Restore rejects a snapshot above it.
	MaxEntriesLimit = 1 << 26
)

// Bounds of what is recorded. A topic or key outside them is not recorded
// (Add ignores it, Lookup misses): such a message is stored, never dropped.
const (
	// MaxTopicLen is the longest topic, in bytes, that is recorded: the
	// longest RocketMQ topic (protocol.ValidateTopic), so every topic the
	// broker stores is.
	MaxTopicLen = 127
	// MaxKeyLen is the longest UNIQ_KEY, in bytes, that is recorded
	// (RocketMQ clients send 32 hex characters).
	MaxKeyLen = 128
)

// Config is the replicated configuration of a Window. Every replica must
// hold the same one at the same log position: it is carried in snapshots,
// and a change goes through SetConfig at an agreed position (a raft entry).
type Config struct {
	// Window is the retention: an entry stays until the newest store time
	// added is more than Window after its own. It bounds every window a
	// Lookup can apply, so it must be at least the longest per-topic
	// window in use. Zero or less means DefaultWindow; it is kept in whole
	// milliseconds (truncated, and at least 1 ms).
	Window time.Duration
	// MaxEntries bounds the number of entries: past it the oldest leave
	// first. Zero or less means DefaultMaxEntries; above MaxEntriesLimit
	// means MaxEntriesLimit.
	MaxEntries int
}

// normalized returns c with its defaults and limits applied.
func (c Config) normalized() Config {
	switch {
	case c.Window <= 0:
		c.Window = DefaultWindow
	case c.Window < time.Millisecond:
		c.Window = time.Millisecond
	default:
		c.Window = c.Window.Truncate(time.Millisecond)
	}
	switch {
	case c.MaxEntries <= 0:
		c.MaxEntries = DefaultMaxEntries
	case c.MaxEntries > MaxEntriesLimit:
		c.MaxEntries = MaxEntriesLimit
	}
	return c
}

// windowMillis is a Lookup window in whole milliseconds, never above the
// retention (ms); zero or less means off.
func windowMillis(window time.Duration, retention int64) int64 {
	return min(int64(window/time.Millisecond), retention)
}

// olderThan reports whether later − earlier > limit (limit ≥ 0) without
// overflowing, whatever the two times are: a difference that would not
// fit an int64 is greater than any limit, a negative one is not.
func olderThan(later, earlier, limit int64) bool {
	if later <= earlier {
		return false
	}
	return uint64(later)-uint64(earlier) > uint64(limit)
}
