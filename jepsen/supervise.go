//go:build unix

package jepsen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
)

// superviseDelay is how long after a node exits on its own it is started
// again (a service manager's restart delay).
const superviseDelay = time.Second

// supervisor makes the harness the nodes' service manager in a run with
// disk-full faults: a node that exits on its own (one that cannot apply a
// committed entry for want of space stops itself, docs/invariants.md I8, and
// exits for its supervisor to start it again) is started again
// superviseDelay after it exited, or once its disk has space again if it
// is full then. Not on a full disk: a tmpfs, unlike a disk, faults a read
// through a mapping of a page it cannot allocate (SIGBUS in the
// CommitLog's recovery scan), which says nothing about the broker. Each
// exit and restart is a disk-full "step" in the history. Kills and stops
// by the harness are not restarted.
type supervisor struct {
	ctx context.Context
	c   *Cluster
	h   *History
	log func(string, ...any)

	mu      sync.Mutex
	full    map[string]bool // disks filled now
	waiting map[string]bool // exited while full: start once freed
}

func supervise(ctx context.Context, c *Cluster, h *History, log func(string, ...any)) *supervisor {
	s := &supervisor{ctx: ctx, c: c, h: h, log: log, full: map[string]bool{}, waiting: map[string]bool{}}
	for _, nd := range c.Nodes {
		id := nd.ID
		nd.proc.OnExit(func(e procs.Exit) {
			if !e.Expected {
				s.exited(id, e.Err)
			}
		})
	}
	return s
}

func (s *supervisor) step(id, detail, err string) {
	ev := stepEvent(NemDiskFull, s.c.eventGroup(id), []string{id}, detail, nil)
	ev.Error = err
	s.h.Add(ev)
	s.log("nemesis: %s%s", detail, map[bool]string{true: "", false: ": " + err}[err == ""])
}

func (s *supervisor) exited(id string, werr error) {
	s.mu.Lock()
	full := s.full[id]
	if full {
		s.waiting[id] = true
	}
	s.mu.Unlock()
	if full {
		s.step(id, fmt.Sprintf("supervise: %s exited on its own (%v); starting it again when its disk has space", id, werr), "")
		return
	}
	s.step(id, fmt.Sprintf("supervise: %s exited on its own (%v); starting it again in %v", id, werr, superviseDelay), "")
	go func() {
		t := time.NewTimer(superviseDelay)
		defer t.Stop()
		select {
		case <-s.ctx.Done():
		case <-t.C:
			s.start(id)
		}
	}()
}

// start starts id unless the cluster stops, it runs, or its disk is full.
func (s *supervisor) start(id string) {
	s.mu.Lock()
	if s.full[id] {
		s.waiting[id] = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if s.c.stopping.Load() || s.c.Running(id) {
		return
	}
	if err := s.c.Restart(id); err != nil {
		s.step(id, "supervise: start "+id, err.Error())
	}
}

// filled and freed bracket a full disk of id.
func (s *supervisor) filled(id string) {
	s.mu.Lock()
	s.full[id] = true
	s.mu.Unlock()
}

func (s *supervisor) freed(id string) {
	s.mu.Lock()
	delete(s.full, id)
	wait := s.waiting[id]
	delete(s.waiting, id)
	s.mu.Unlock()
	if wait {
		s.step(id, "supervise: starting "+id+" again: its disk has space", "")
		s.start(id)
	}
}
