package console

// The leader changes the console has seen: each ClusterList it reads (the
// sampler's, every SampleEvery, and the cluster page's) is compared with
// the leader and term it saw last for each group; a different leader or
// term is a change. Kept in memory, the last maxLeaderChanges per group.

import (
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/client"
)

// maxLeaderChanges bounds each group's history.
const maxLeaderChanges = 50

// leaderChange is one change seen: the group's leader went from Old ("":
// the first leader the console saw) to New at Term.
type leaderChange struct {
	At       time.Time
	Old, New string
	Term     uint64
}

type leaderSeen struct {
	id   string
	term uint64
}

type leaderLog struct {
	mu   sync.Mutex
	last map[string]leaderSeen
	hist map[string][]leaderChange
}

func newLeaderLog() *leaderLog {
	return &leaderLog{last: map[string]leaderSeen{}, hist: map[string][]leaderChange{}}
}

// observe compares the leaders members name with the last seen. A group
// without a leader now changes nothing: the change is recorded when the
// next leader shows up.
func (l *leaderLog) observe(at time.Time, members []client.MemberStatus) {
	now := map[string]leaderSeen{}
	for _, m := range members {
		if m.Role != "leader" || m.Error != "" {
			continue
		}
		if cur, ok := now[m.BrokerName]; !ok || m.Term > cur.term {
			now[m.BrokerName] = leaderSeen{m.ID, m.Term}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for g, cur := range now {
		prev, seen := l.last[g]
		if seen && (cur.term < prev.term || cur == prev) {
			continue // the same leader, or an older view read late
		}
		l.last[g] = cur
		h := append(l.hist[g], leaderChange{At: at, Old: prev.id, New: cur.id, Term: cur.term})
		if len(h) > maxLeaderChanges {
			h = append([]leaderChange(nil), h[len(h)-maxLeaderChanges:]...)
		}
		l.hist[g] = h
	}
}

// history returns group's changes, newest first.
func (l *leaderLog) history(group string) []leaderChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hist[group]
	out := make([]leaderChange, len(h))
	for i, c := range h {
		out[len(h)-1-i] = c
	}
	return out
}
