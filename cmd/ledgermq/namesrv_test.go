package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNamesrvCommandServesRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetArgs([]string{"namesrv", "--listen", "127.0.0.1:0", "--log-level", "error"})
	cmd.SetOut(out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no listen line in %q", out.String())
		}
		if _, rest, ok := strings.Cut(out.String(), "namesrv listening on "); ok {
			addr = strings.TrimSpace(rest)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := remoting.NewClient(remoting.ClientConfig{})
	defer c.Close()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	resp, err := c.Invoke(rctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "Nope"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.TopicNotExist {
		t.Fatalf("route of an unknown topic: code %d", resp.Code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("namesrv exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("namesrv did not stop")
	}
}

func TestCheckConfig(t *testing.T) {
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetArgs([]string{"namesrv", "--check-config", "--listen", "127.0.0.1:9999"})
	cmd.SetOut(out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "127.0.0.1:9999") {
		t.Fatalf("check-config output %q", out.String())
	}
}
