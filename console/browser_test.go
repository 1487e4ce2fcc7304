//go:build unix

package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// chromiumPath finds Debian's chromium (or another Chrome), "" when none.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// requireChromium returns the browser's path; without one the test skips,
// or fails when LEDGERMQ_REQUIRE_CHROMIUM is set (CI).
func requireChromium(t *testing.T) string {
	t.Helper()
	p := chromiumPath()
	if p == "" {
		if os.Getenv("LEDGERMQ_REQUIRE_CHROMIUM") != "" {
			t.Fatal("LEDGERMQ_REQUIRE_CHROMIUM is set but no chromium is installed (apt-get install chromium)")
		}
		t.Skip("no chromium (apt-get install chromium; LEDGERMQ_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	return p
}

// browser is a headless Chromium tab and what its pages wrote to the
// console.
type browser struct {
	t    *testing.T
	ctx  context.Context
	dir  string // screenshots
	base string

	mu    sync.Mutex
	page  string
	notes []string // console errors and exceptions, with the page
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	path := requireChromium(t)
	dir := t.TempDir()
	if keep := os.Getenv("LEDGERMQ_CONSOLE_SHOTS"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, dir: dir, base: base}
	messages := chromedp.Console(ctx) // starts the browser
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.notes = append(b.notes, fmt.Sprintf("%s: %s (%s:%d)", b.page, m, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		acancel()
		<-done
	})
	return b
}

// open loads path and waits for its heading.
func (b *browser) open(path string) {
	b.t.Helper()
	b.mu.Lock()
	b.page = path
	b.mu.Unlock()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible("main h1"))
}

// do runs steps, bounded by 20 s.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript predicate every 100 ms until it is true, and
// fails when d passes first; it returns how long it took.
func (b *browser) waitJS(what, expr string, d time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	testwait.ForEvery(b.t, d, 100*time.Millisecond, what+" ("+expr+")", func() bool { return eval[bool](b, expr) })
	return time.Since(start)
}

// shot saves a PNG of the whole page as name.png and logs its path.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// consoleErrors are the errors and exceptions the pages wrote so far.
func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.notes...)
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func browserTest(t *testing.T, c *devCluster, base, topic, group string, sent []client.SendResult) {
	b := newBrowser(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, leader, err := c.admin.WaitGroupLeader(ctx, "") // an election may be under way on a loaded machine
	if err != nil {
		t.Fatal(err)
	}

	// Cluster: the group and its leader, as the admin API says.
	b.open("/cluster")
	b.waitJS("the leader on the cluster page",
		`(document.querySelector('[data-group="broker-a"] .leader')||{}).textContent === `+jsString(leader.Node), 5*time.Second)
	if n := eval[int](b, `document.querySelectorAll('[data-group="broker-a"] tr[data-node]').length`); n != len(c.p.File.Nodes) {
		t.Errorf("cluster page lists %d nodes, want %d", n, len(c.p.File.Nodes))
	}
	b.shot("cluster")

	// Topics: the list has the topic the admin API created; its page the
	// route and queues.
	b.open("/topics")
	b.waitJS("the topic in the list", `!!document.querySelector('a[href="/topics/`+topic+`"]')`, 5*time.Second)
	b.shot("topics")
	b.do("open the topic", chromedp.Click(`a[href="/topics/`+topic+`"]`), chromedp.WaitVisible("#queues"))
	if n := eval[int](b, `document.querySelectorAll('#queues tbody tr').length`); n != 4 {
		t.Errorf("topic page shows %d queues, want 4", n)
	}
	b.shot("topic")

	// Messages: the search form finds a message sent, with its body.
	m := sent[5]
	b.open("/messages")
	b.do("search by id",
		chromedp.Click(`input[name=mode][value=id]`),
		chromedp.SetValue(`input[name=topic]`, topic),
		chromedp.SetValue(`input[name=id]`, m.MsgID),
		chromedp.Click("#search"),
		chromedp.WaitVisible(`article.message[data-msgid="`+m.MsgID+`"]`))
	if body := eval[string](b, `document.querySelector('pre.body-text').textContent`); body != "console body 5 <b>bold</b>" {
		t.Errorf("body shown %q", body)
	}
	// Its trace, or why there is none (these producers trace nothing).
	b.waitJS("the message's trace block", `!!document.querySelector('article.message details.trace, article.message .trace-none')`, 5*time.Second)
	b.shot("messages")
	b.open("/messages")
	b.do("search by key",
		chromedp.Click(`input[name=mode][value=key]`),
		chromedp.SetValue(`input[name=topic]`, topic),
		chromedp.SetValue(`input[name=key]`, "key-7"),
		chromedp.Click("#search"),
		chromedp.WaitVisible(`article.message[data-msgid="`+sent[7].MsgID+`"]`))

	// Pending timers, transactions and POP messages, and the ACL, per
	// broker group: the message held by POP is in flight for its group,
	// not due, invisible until a time shown.
	b.open("/pending")
	b.waitJS("the pending page's group", `!!document.querySelector('section.pending[data-group="broker-a"] .timers-count .count')`+
		` && !!document.querySelector('section.pending[data-group="broker-a"] .transactions-count .count')`, 5*time.Second)
	pop := `document.querySelector('section.pending[data-group="broker-a"] table.pop tr[data-consumer="` + consolePopGroup + `"][data-topic="` + topic + `"]')`
	b.waitJS("the POP group in flight", `!!`+pop+` && `+pop+`.querySelector('.inflight').textContent === '1'`+
		` && `+pop+`.querySelector('.due').textContent === '0' && /^\d{4}-\d\d-\d\d /.test(`+pop+`.querySelector('.oldest').textContent)`, 5*time.Second)
	b.shot("pending")
	b.open("/acl")
	b.waitJS("the ACL page's nodes", `document.querySelectorAll('section.acl[data-group="broker-a"] tr[data-node]').length === `+fmt.Sprint(len(c.p.File.Nodes)), 5*time.Second)
	b.shot("acl")

	// A group with a client online: its progress and its client.
	b.open("/groups/ConsoleReader")
	b.waitJS("the reader's client", `document.querySelectorAll('#clients tbody tr').length === 1 && document.getElementById('total-lag').textContent === '0'`, 5*time.Second)
	b.shot("group-online")

	// Consumer group: reset to the end of each queue, dry run first (which
	// changes nothing), then executed after the confirmation.
	b.open("/groups")
	b.do("open the group", chromedp.Click(`a[href="/groups/`+group+`"]`), chromedp.WaitVisible("#reset-form"))
	b.shot("group")
	b.do("dry run",
		chromedp.SetValue(`#reset-form input[name=topic]`, topic),
		chromedp.Click(`#reset-form input[name=toEnd]`),
		chromedp.Click("#dry-run"),
		chromedp.WaitVisible("#dry-run-result"))
	if n := eval[int](b, `document.querySelectorAll('#reset tbody tr').length`); n != 4 {
		t.Errorf("dry run shows %d queues, want 4", n)
	}
	if pr, err := c.admin.ConsumerProgress(ctx, group, topic); err == nil && pr.TotalLag == 0 {
		t.Errorf("the dry run moved the offsets: %+v", pr)
	}
	b.shot("reset-dry-run")
	// The checkbox is required: unticked, the browser does not submit the
	// form (and the server refuses it: TestResetNeedsTokenAndConfirmation).
	if eval[bool](b, `document.getElementById('execute-form').checkValidity()`) {
		t.Fatal("the execute form is valid without the confirmation")
	}
	b.do("execute", chromedp.Click("#confirm"), chromedp.Click("#execute"), chromedp.WaitVisible("#reset-done"))
	b.shot("reset-executed")
	waitUntil(t, 10*time.Second, "offsets at the end of each queue", func() error {
		pr, err := c.admin.ConsumerProgress(ctx, group, topic)
		if err != nil {
			return err
		}
		if pr.TotalLag != 0 || len(pr.Queues) != 4 {
			return fmt.Errorf("progress %+v", pr)
		}
		return nil
	})
	b.open("/groups/" + group)
	if lag := eval[string](b, `document.getElementById('total-lag').textContent`); lag != "0" {
		t.Errorf("group page shows total lag %s after the reset", lag)
	}

	// The live chart draws a line for the send rate and one for the
	// consume rate, and one per node for the apply lag, here while a
	// producer sends 20 messages a second for 4 s.
	sending := make(chan error, 1)
	go func() { sending <- c.send(topic, 80, 50*time.Millisecond) }()
	b.open("/chart")
	b.waitJS("a send rate above 0", `/: [1-9]/.test(document.getElementById('legend-rate').textContent)`, 10*time.Second)
	b.waitJS("the chart's lines", `document.querySelectorAll('#chart-lag path').length === `+fmt.Sprint(len(c.p.File.Nodes))+
		` && document.querySelectorAll('#chart-rate path').length === 2 && +document.getElementById('chart-rate').getAttribute('data-points') >= 2`, 10*time.Second)
	b.shot("chart")
	if err := <-sending; err != nil {
		t.Fatal(err)
	}

	// Failover: kill -9 the leader; the cluster page (refreshing itself)
	// names the new leader. The time it took is logged (1-2 s measured on
	// 2 cores); the wait is bounded generously, as a condition, not as a
	// speed assertion.
	b.open("/cluster")
	n, ok := c.p.File.NodeByAddr(leader.LeaderAddr)
	if !ok {
		t.Fatalf("leader %s (%s) not in cluster.json", leader.Node, leader.LeaderAddr)
	}
	if err := c.p.Kill9(n.PID); err != nil {
		t.Fatal(err)
	}
	took := b.waitJS("a new leader on the cluster page", `(function(){ var l = document.querySelector('[data-group="broker-a"] .leader');
		return !!l && l.textContent !== '' && l.getAttribute('data-leader') !== '' && l.getAttribute('data-leader') !== `+jsString(leader.Node)+`; })()`, 30*time.Second)
	now := eval[string](b, `document.querySelector('[data-group="broker-a"] .leader').textContent`)
	t.Logf("after kill -9 of leader %s the cluster page named %s in %v", leader.Node, now, took.Round(time.Millisecond))
	b.waitJS("the change in the leader history", `!!document.querySelector('[data-group="broker-a"] tr.change[data-old="`+leader.Node+`"][data-new="`+now+`"]')`, 30*time.Second)
	b.waitJS("the killed node unreachable", `(document.querySelector('tr[data-node="`+leader.Node+`"] .role')||{}).textContent === 'unreachable'`, 30*time.Second)
	b.shot("cluster-after-failover")

	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("browser test took %v", time.Since(start).Round(time.Millisecond))
}
