package dledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Every node of a group runs the same layout: all with the CommitLog as
// the raft log, or all with raft-wal beside it. Physical offsets, and so
// the CommitLog bytes replicas compare, differ between the two, so a node
// must never store entries in the other layout from its group's.
//
// A node that holds data keeps its data's layout (chooseLayout). A node
// with none — a new group's, a replaced disk's, a member added later —
// asks the other members for theirs before it stores anything
// (groupLayout): the raft port's node info carries each node's layout, or
// says the node holds no data yet and which layout it is configured for.
// The node takes the layout of the members that hold data; when none
// does and a majority of the group (itself included) answered that it
// holds none, the group is new and the node takes its configuration,
// which every such member must share (it refuses to start otherwise).
// Until then it waits, asking again: a new group's members start one by
// one, and a replaced node can do nothing without a majority anyway.

// Layout names, as node info carries them.
const (
	layoutWAL       = "wal"
	layoutCommitLog = "commitlog"
)

// Values of Group.layout.
const (
	layoutUndecided int32 = iota
	layoutIsWAL
	layoutIsCommitLog
)

// ErrLayoutConflict: the members of a new group are configured with
// different layouts (raft.log).
var ErrLayoutConflict = errors.New("dledger: the members of a new group are configured with different raft log layouts")

// hasNoData reports whether the node's raft directory holds neither
// raft's term and vote (one log) nor a snapshot; with no raft-wal and no
// CommitLog either (chooseLayout), the node holds no data.
func hasNoData(raftDir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(raftDir, stableFileName)); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	held, err := dirHasEntries(filepath.Join(raftDir, snapshotsDirName))
	return !held, err
}

// layoutVote is what one member's node info says of the group's layout.
type layoutVote int

const (
	voteUnknown   layoutVote = iota // an older binary that cannot tell
	voteWAL                         // holds data in the wal layout
	voteCommitLog                   // holds data in the commitlog layout
	voteFresh                       // holds no data yet (its wish: nodeInfo.OneLog)
)

func voteOf(ni nodeInfo) layoutVote {
	switch {
	case ni.Layout == layoutWAL:
		return voteWAL
	case ni.Layout == layoutCommitLog:
		return voteCommitLog
	case ni.Fresh:
		return voteFresh
	case !ni.OneLog:
		// A release before layouts were reported, not configured for one
		// log: its data, if any, is in the wal layout, and a new node of
		// it would create the wal layout too.
		return voteWAL
	}
	return voteUnknown
}

// decideLayout is groupLayout's rule, given the answers of the members
// that answered (members counts the whole group, this node included).
// decided is false while the node must ask again.
func decideLayout(wantOneLog bool, members int, answers []nodeInfo) (oneLog, decided bool, err error) {
	var wal, clog, fresh int
	var differ []string
	for _, ni := range answers {
		switch voteOf(ni) {
		case voteWAL:
			wal++
		case voteCommitLog:
			clog++
		case voteFresh:
			fresh++
			if ni.OneLog != wantOneLog {
				differ = append(differ, ni.Node)
			}
		}
	}
	switch {
	case wal > 0:
		// Members that differ are a group switching to one log (some
		// converted, some not yet): the wal layout learns of the switch
		// and converts (restartIfSwitched); the other way has no path.
		return false, true, nil
	case clog > 0:
		return true, true, nil
	case 2*(fresh+1) <= members:
		return false, false, nil
	case len(differ) > 0:
		return false, false, fmt.Errorf("%w: %v configured otherwise than this node (one log %v); set raft.log alike on every member", ErrLayoutConflict, differ, wantOneLog)
	}
	return wantOneLog, true, nil
}

// groupLayout asks the other members until decideLayout decides (see
// above). It returns early only when the group is closed.
func (g *Group) groupLayout() (bool, error) {
	var others []Peer
	for _, p := range g.cfg.Peers {
		if p.ID != g.cfg.NodeID {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return g.cfg.OneLog, nil
	}
	wait := 50 * time.Millisecond
	lastLog := time.Now()
	for {
		answers, lastErr := g.askMembers(others)
		oneLog, ok, err := decideLayout(g.cfg.OneLog, len(others)+1, answers)
		if err != nil || ok {
			if ok {
				g.log.Info("a node without data takes its group's raft log layout", "one_log", oneLog,
					"configured", g.cfg.OneLog, "answers", len(answers))
			}
			return oneLog, err
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			g.log.Warn("this node holds no data and waits for the group's members to tell their raft log layout",
				"members", len(others)+1, "answered", len(answers), "last_error", lastErr)
		}
		t := time.NewTimer(wait)
		select {
		case <-g.ctx.Done():
			t.Stop()
			return false, fmt.Errorf("dledger: closed while learning the group's layout: %w", g.ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// askMembers asks each of peers for its node info at once and returns the
// answers received and one of the errors met.
func (g *Group) askMembers(peers []Peer) ([]nodeInfo, error) {
	var (
		mu      sync.Mutex
		out     []nodeInfo
		lastErr error
		wg      sync.WaitGroup
	)
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ni, err := g.mux.askNodeInfo(p.Addr, g.cfg.Timing.ElectionTimeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = fmt.Errorf("%s: %w", p.ID, err)
				return
			}
			out = append(out, ni)
		}()
	}
	wg.Wait()
	return out, lastErr
}
