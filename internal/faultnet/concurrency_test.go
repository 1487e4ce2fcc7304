package faultnet

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentDialAndFaults runs dialers that echo through the network
// while another goroutine flips faults, then checks that a healed network
// works for every pair and that shutdown leaves nothing running.
func TestConcurrentDialAndFaults(t *testing.T) {
	nw := NewNetwork()
	ids := []string{"n0", "n1", "n2"}
	layers := make([]*Layer, len(ids))
	servers := make([]*echoServer, len(ids))
	for i, id := range ids {
		layers[i] = mustListen(t, nw, id)
		servers[i] = startEcho(layers[i])
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var echoed, faulted atomic.Int64
	attempts := func() int64 { return echoed.Load() + faulted.Load() }
	errc := make(chan error, 16)
	const dialers = 6
	for w := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				from := layers[rng.IntN(len(layers))]
				to := layers[rng.IntN(len(layers))]
				switch err := echoOnce(from, to, fmt.Sprintf("w%d", w)); {
				case err == nil:
					echoed.Add(1)
				case expectedFaultErr(err):
					faulted.Add(1)
				default:
					errc <- fmt.Errorf("%s -> %s: %w", from.ID(), to.ID(), err)
					return
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(42, 42))
	for range 200 {
		// Let the dialers make progress between fault changes.
		target := attempts() + 3
		waitFor(t, "dialer progress", func() bool { return attempts() >= target || len(errc) > 0 })
		a, b := ids[rng.IntN(3)], ids[rng.IntN(3)]
		switch rng.IntN(7) {
		case 0:
			if err := nw.Partition([]string{a}); err != nil {
				t.Fatal(err)
			}
		case 1:
			nw.Heal()
		case 2:
			nw.Isolate(a)
		case 3:
			nw.Rejoin(a)
		case 4:
			nw.Block(a, b)
		case 5:
			nw.Unblock(a, b)
		case 6:
			if err := nw.SetDelay(a, b, time.Duration(rng.IntN(2))*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		_ = nw.Stats(a, b)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d echoes completed, %d ended by a fault", echoed.Load(), faulted.Load())
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	nw.Heal()
	for _, a := range layers {
		for _, b := range layers {
			if err := echoOnce(a, b, "healed"); err != nil {
				t.Errorf("after Heal %s -> %s: %v", a.ID(), b.ID(), err)
			}
		}
	}

	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		s.wait()
	}
}

// echoOnce dials to from from, sends msg to the echo server and reads it
// back.
func echoOnce(from, to *Layer, msg string) error {
	c, err := from.Dial(addrOf(to), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(waitTimeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return fmt.Errorf("echo %q, want %q", buf, msg)
	}
	return nil
}

// expectedFaultErr reports whether err is one a fault may legitimately
// cause: a refused dial, a cut connection, or the echo side's end being cut
// (seen by the dialer as EOF or a reset).
func expectedFaultErr(err error) bool {
	switch {
	case errors.Is(err, ErrUnreachable), errors.Is(err, ErrCut),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed):
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return true // connection reset or refused by a closing peer
	}
	return false
}
