package procs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Errors of WaitListening.
var (
	ErrExited       = errors.New("procs: process exited at start-up")
	ErrNotListening = errors.New("procs: not listening")
)

// FreePorts picks n distinct free loopback ports, none of skip. The
// ports stay held (listened on) until release is called, so that a
// caller picking more ports meanwhile (a proxy of each) cannot get one
// of them; release is safe to call more than once.
func FreePorts(n int, skip map[int]bool) (ports []int, release func(), err error) {
	var ls []net.Listener
	release = func() {
		for _, l := range ls {
			l.Close()
		}
		ls = nil
	}
	ports = make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			release()
			return nil, func() {}, fmt.Errorf("procs: a free port: %w", err)
		}
		ls = append(ls, l)
		if p := l.Addr().(*net.TCPAddr).Port; !skip[p] {
			ports = append(ports, p)
		}
	}
	return ports, release, nil
}

// Loopback is 127.0.0.1:port.
func Loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// PortOf is addr's port, 0 when it has none.
func PortOf(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0
	}
	return int(ap.Port())
}

// CheckFree reports whether addr can be listened on.
func CheckFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return l.Close()
}

// waitPoll paces WaitListening's dials.
const waitPoll = 50 * time.Millisecond

// WaitListening waits until addr accepts connections. It fails with
// ErrExited once exited is closed (the process that should listen has
// ended), with ErrNotListening after timeout (0: no bound but ctx), and
// with ctx's error when ctx ends.
func WaitListening(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("%w on %s after %v", ErrNotListening, addr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return ErrExited
		case <-tick.C:
		}
	}
}
