//go:build unix

package jepsen

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/remoting"
)

// A hostile attacker holds a stalled frame open, and dials again when the
// server closes it for stalling, until the fault heals.
func TestHostileAttackerRedials(t *testing.T) {
	s := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0",
		Limits: remoting.Limits{FrameTimeout: 20 * time.Millisecond, MinReadRate: 1 << 40}})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	prefix, err := remoting.StallFramePrefix(remoting.SendMessage, 1<<20, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &hostileAttack{cancel: cancel}
	a.wg.Add(1)
	go a.attacker(ctx, s.Addr().String(), prefix)
	t.Cleanup(a.stop)
	testwait.For(t, 10*time.Second, "the server closing the attacker twice", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.closed >= 2 && a.opened > a.closed
	})
	a.stop()
	if st := s.Stats(); st.StalledCloses < 2 {
		t.Fatalf("%+v", st)
	}
}
