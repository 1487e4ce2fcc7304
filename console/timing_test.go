//go:build unix

package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
)

// TestConsolePageTimings logs how long each page takes to render with
// 1 000 topics on a dev cluster (created through the admin API). It
// measures and asserts nothing about wall-clock time: the pages must only
// answer 200 and list every topic.
func TestConsolePageTimings(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1 000 topics on a dev cluster")
	}
	const topics = 1000
	c := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	names := make(chan string)
	var wg sync.WaitGroup
	errs := make(chan error, topics)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, err := c.admin.CreateTopic(ctx, client.TopicConfig{Topic: name, ReadQueues: 4, WriteQueues: 4}, client.Target{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
				}
			}
		}()
	}
	for i := range topics {
		names <- fmt.Sprintf("Timing-%04d", i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d topics created through the admin API in %v", topics, time.Since(start).Round(time.Millisecond))
	sent := c.seed(t, "Timing-0500", "TimingGroup", 20)
	c.startReader(t, "Timing-0500", "TimingReader", int64(len(sent)))

	base := startConsole(t, c.admin, Config{})
	hc := &http.Client{Timeout: time.Minute}
	code, body := get(t, hc, base+"/topics")
	if n := strings.Count(body, `href="/topics/Timing-`); code != http.StatusOK || n != topics {
		t.Fatalf("/topics: %d, %d of %d topics listed", code, n, topics)
	}
	const runs = 5
	for _, path := range []string{
		"/cluster", "/cluster?fragment=1", "/topics", "/topics?system=1&filter=Timing-05", "/topics/Timing-0500",
		"/groups", "/groups/TimingReader", "/messages?search=1&mode=key&topic=Timing-0500&key=key-7",
		"/messages?search=1&mode=time&topic=Timing-0500", "/chart", "/api/metrics", "/pending", "/acl",
	} {
		var took []time.Duration
		size := 0
		for range runs {
			t0 := time.Now()
			code, body := get(t, hc, base+path)
			took = append(took, time.Since(t0))
			if code != http.StatusOK {
				t.Fatalf("%s: %d\n%s", path, code, body)
			}
			size = len(body)
		}
		slices.Sort(took)
		t.Logf("page %-58s median %8v  min %8v  max %8v  %7d bytes", path, took[runs/2].Round(10*time.Microsecond),
			took[0].Round(10*time.Microsecond), took[runs-1].Round(10*time.Microsecond), size)
	}
}
