package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/ops"
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

// TestStatusJSONKeys: every key of a name server's and a broker node's
// /status is lowerCamelCase, nested ones too.
func TestStatusJSONKeys(t *testing.T) {
	key := regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				if !key.MatchString(k) {
					t.Errorf("%s: key %q is not lowerCamelCase", path, k)
				}
				walk(path+"."+k, x)
			}
		}
	}
	for name, v := range map[string]any{"namesrv": namesrvStatus{Stopping: true}, "broker": ops.Status{Failed: "x", DiskError: "x", Stopping: true}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		walk(name, m)
	}
}
