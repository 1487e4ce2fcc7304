package console

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// wantAll fails unless GET path answers 200 with every want and no
// unescaped script.
func wantAll(t *testing.T, c *http.Client, base, path string, want ...string) string {
	t.Helper()
	code, body := get(t, c, base+path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("GET %s: no %q in\n%s", path, w, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Errorf("GET %s: unescaped script", path)
	}
	return body
}

func TestPendingPage(t *testing.T) {
	f, _ := newFake(t)
	due := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	f.timers = map[string]protocol.PendingTimers{"broker-a": {Count: 3, NextDueMs: due, MaxDelayMs: 3_600_000,
		Timers: []protocol.PendingTimer{{Topic: "<script>alert(1)</script>", QueueID: 2, DueMs: due, MsgID: "TIMER1", ParkedOffset: 7}}}}
	f.trans = map[string]protocol.PendingTransactions{"broker-a": {Count: 1,
		Transactions: []protocol.PendingTransaction{{MsgID: "HALF1", ProducerGroup: "pg<i>", Topic: "Orders", AgeMs: 65_000, CheckTimes: 2, HalfOffset: 11}}},
		"broker-b": {}}
	_, ts := newTestServer(t, f, Config{})
	body := wantAll(t, ts.Client(), ts.URL, "/pending",
		`data-group="broker-a"`, `data-group="broker-b"`, `<span class="count">3</span> pending`, "next due 2030-01-02 03:04:05.000Z",
		"1h0m0s", "TIMER1", "&lt;script&gt;alert(1)&lt;/script&gt;", `class="num">7<`, "and 2 more",
		`<span class="count">1</span> undecided`, "HALF1", "pg&lt;i&gt;", "1m5s", `class="num">11<`,
		`<span class="count">0</span> undecided`, `class="bad timers-error"`, "has no reachable leader", `class="on">Pending<`)
	if strings.Count(body, "transactions-error") != 0 {
		t.Errorf("a transactions error shown:\n%s", body)
	}
	wantAll(t, ts.Client(), ts.URL, "/pending?limit=1000", "the first 1000")
	for _, bad := range []string{"/pending?limit=0", "/pending?limit=x", "/pending?limit=1001"} {
		if code, _ := get(t, ts.Client(), ts.URL+bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
}

func TestACLPage(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	body := wantAll(t, ts.Client(), ts.URL, "/acl", `id="acl-note"`, "ACL off", "not said", "does not answer")
	if strings.Contains(body, "secret") {
		t.Errorf("the ACL page names a secret:\n%s", body)
	}
	f.config = map[string]string{"acl_enable": "true"}
	f.runtime = map[string]string{"aclHash": "h<1>", "aclIndex": "17", "aclFrom": "n1", "aclFileHash": "f<2>"}
	wantAll(t, ts.Client(), ts.URL, "/acl", "ACL on in 2 of 3 nodes", `class="ok agree"`, "h&lt;1&gt;", `class="num">17<`, "f&lt;2&gt;", `<span class="ok">on</span>`)
}
