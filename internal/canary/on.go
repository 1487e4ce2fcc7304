//go:build jepsenbroken

package canary

import (
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Built reports whether this binary carries the broken behaviours.
const Built = true

var enabled = strings.Split(os.Getenv(EnvVar), ",")

func on(name string) bool { return slices.Contains(enabled, name) }

// AckBeforeCommit reports whether proposals are answered before commit.
func AckBeforeCommit() bool { return on(AckBeforeCommitName) }

var (
	mu   sync.Mutex
	seen = map[string]bool{}
)

// NoteOffset records that a client committed key's offset to this process.
func NoteOffset(key string) {
	if on(ResetOffsetsName) {
		mu.Lock()
		seen[key] = true
		mu.Unlock()
	}
}

// ForgetsOffset reports whether this process answers offset 0 for key:
// with reset-offsets, until a client commits it here.
func ForgetsOffset(key string) bool {
	if !on(ResetOffsetsName) {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	return !seen[key]
}

// ApplyTwice reports whether the messages entry at raft index is stored
// twice: every 50th.
func ApplyTwice(index uint64) bool { return on(ApplyTwiceName) && index%50 == 0 }

// SkipFsync reports whether skip-fsync is on (WritePath asks it only for
// a store that runs SYNC_FLUSH).
func SkipFsync() bool { return on(SkipFsyncName) }

// uncommittedFor is how long a commit that is never proposed is served.
const uncommittedFor = 100 * time.Millisecond

type ghost struct {
	offset int64
	until  time.Time
}

var ghosts = map[string]ghost{}

// ServeUncommitted reports whether the commit of offset to key is kept
// out of raft (every 3rd offset) and served to reads for a while
// (Uncommitted); it records it if so.
func ServeUncommitted(key string, offset int64) bool {
	if !on(ServeUncommittedName) || offset%3 != 0 {
		return false
	}
	mu.Lock()
	ghosts[key] = ghost{offset, time.Now().Add(uncommittedFor)}
	mu.Unlock()
	return true
}

// Uncommitted is the commit of key being served though raft never got it.
func Uncommitted(key string) (int64, bool) {
	if !on(ServeUncommittedName) {
		return 0, false
	}
	mu.Lock()
	defer mu.Unlock()
	g, ok := ghosts[key]
	if !ok || time.Now().After(g.until) {
		delete(ghosts, key)
		return 0, false
	}
	return g.offset, true
}

// PopAckInMemory reports whether POP acks are answered without raft
// (pop-ack-in-memory).
func PopAckInMemory() bool { return on(PopAckInMemoryName) }

var popAcked = map[string]bool{}

// NotePopAck records a receipt this process acknowledged in memory only.
func NotePopAck(key string) {
	mu.Lock()
	popAcked[key] = true
	mu.Unlock()
}

// PopAcked reports whether this process acknowledged key's receipt in
// memory.
func PopAcked(key string) bool {
	mu.Lock()
	defer mu.Unlock()
	return popAcked[key]
}
