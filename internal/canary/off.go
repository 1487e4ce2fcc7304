//go:build !jepsenbroken

package canary

// Built reports whether this binary carries the broken behaviours.
const Built = false

// AckBeforeCommit: never in a plain build.
func AckBeforeCommit() bool { return false }

// NoteOffset does nothing in a plain build.
func NoteOffset(string) {}

// ForgetsOffset: never in a plain build.
func ForgetsOffset(string) bool { return false }

// ApplyTwice: never in a plain build.
func ApplyTwice(uint64) bool { return false }

// SkipFsync: never in a plain build.
func SkipFsync() bool { return false }

// ServeUncommitted: never in a plain build.
func ServeUncommitted(string, int64) bool { return false }

// Uncommitted: never in a plain build.
func Uncommitted(string) (int64, bool) { return 0, false }

// PopAckInMemory: never in a plain build.
func PopAckInMemory() bool { return false }

// NotePopAck does nothing in a plain build.
func NotePopAck(string) {}

// PopAcked: never in a plain build.
func PopAcked(string) bool { return false }
