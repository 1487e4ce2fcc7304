package testwait

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a failure instead of stopping the test.
type fakeTB struct{ failed string }

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestFor(t *testing.T) {
	var n atomic.Int32
	For(t, time.Second, "the third poll", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("polled %d times", n.Load())
	}
	f := &fakeTB{}
	ForEvery(f, 20*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	if !strings.Contains(f.failed, "timed out after 20ms waiting for never") {
		t.Fatalf("failure %q", f.failed)
	}
}

func TestCtx(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f := &fakeTB{}
	Ctx(f, ctx, "never", func() bool { return false }, func() string { return "state x" })
	if !strings.Contains(f.failed, "timed out waiting for never (state x)") {
		t.Fatalf("failure %q", f.failed)
	}
	f = &fakeTB{}
	Ctx(f, context.Background(), "at once", func() bool { return true })
	if f.failed != "" {
		t.Fatalf("failed: %s", f.failed)
	}
}
