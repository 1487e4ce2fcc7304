package remoting

import (
	"fmt"
	"slices"
	"time"
)

// watchStalls is the server's stall watcher, owned by the Server (started
// by Start, ended by Close). While readers wait for the budget it closes
// the connections whose incomplete frames hold budget and have received
// nothing for StallGrace, the longest silent first, until what they hold
// covers what the waiters need.
func (s *Server) watchStalls() {
	defer s.connWG.Done()
	grace := s.cfg.Limits.StallGrace
	t := time.NewTicker(min(max(grace/4, time.Millisecond), 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case now := <-t.C:
			s.closeStalled(now)
		}
	}
}

// closeStalled closes stalled connections holding budget when readers are
// waiting for it; it returns how many it closed.
func (s *Server) closeStalled(now time.Time) int {
	need := s.budget.stats().shortfall
	if need == 0 {
		return 0
	}
	grace := s.cfg.Limits.StallGrace
	at := int64(now.Sub(monoEpoch)) // the clock of Conn.lastRead
	type stalled struct {
		c        *Conn
		held     int64
		lastRead int64
	}
	var cands []stalled
	s.mu.Lock()
	for c := range s.conns {
		held, last := c.frameHeld.Load(), c.lastRead.Load()
		if held > 0 && time.Duration(at-last) >= grace {
			cands = append(cands, stalled{c, held, last})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(cands, func(a, b stalled) int { return int(min(max(a.lastRead-b.lastRead, -1), 1)) })
	closed := 0
	for _, x := range cands {
		if need <= 0 {
			break
		}
		if x.c.Closed() {
			continue
		}
		need -= x.held
		closed++
		silent := time.Duration(at - x.lastRead).Round(time.Millisecond)
		s.stalledCloses.Add(1) // counted before the peer can see the close
		s.logger.Warn("closing a connection silent inside a frame while the read budget is short",
			"peer", x.c.RemoteAddr(), "conn", x.c.id, "holds", x.held, "silent", silent)
		x.c.closeWith(fmt.Errorf("%w: silent for %s holding %d bytes of the read budget", ErrStalled, silent, x.held))
	}
	return closed
}

// ReadHealth is nil while the server reads new requests, and says why not
// when small frames have waited for the read budget without a break for
// StarvedAfter: the reserve is used up and ordinary requests are not read
// (a readiness probe reports it). Safe for concurrent use.
func (s *Server) ReadHealth() error {
	b := s.budget.stats()
	if b.starvedSince.IsZero() {
		return nil
	}
	d := s.budget.now().Sub(b.starvedSince)
	if d < s.cfg.Limits.StarvedAfter {
		return nil
	}
	return fmt.Errorf("remoting: %d requests waiting to be read for %s: %d of %d bytes of the read budget held",
		b.smallWaiting, d.Round(time.Second), b.held, s.budget.limit)
}
