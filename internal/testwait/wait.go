package testwait

import (
	"context"
	"time"
)

// TB is the part of *testing.T and *testing.B the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Interval is how often For and Ctx poll their condition.
const Interval = 5 * time.Millisecond

// For polls cond every Interval until it holds, and fails tb when timeout
// passes first.
func For(tb TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	ForEvery(tb, timeout, Interval, what, cond)
}

// ForEvery is For polling every interval: for conditions that are costly
// to check (processes' files, network round trips).
func ForEvery(tb TB, timeout, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !poll(ctx, interval, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Ctx polls cond every Interval until it holds, and fails tb when ctx
// ends first; describe, if given, adds the state at that moment to the
// failure.
func Ctx(tb TB, ctx context.Context, what string, cond func() bool, describe ...func() string) {
	tb.Helper()
	if poll(ctx, Interval, cond) {
		return
	}
	detail := ""
	for _, d := range describe {
		detail += " (" + d() + ")"
	}
	tb.Fatalf("timed out waiting for %s%s: %v", what, detail, ctx.Err())
}

// poll reports whether cond held before ctx ended.
func poll(ctx context.Context, interval time.Duration, cond func() bool) bool {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// Recv receives a value from ch, and fails tb when timeout passes first.
func Recv[T any](tb TB, ch <-chan T, timeout time.Duration, what string) T {
	tb.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}
