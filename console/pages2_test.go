package console

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
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

// The pending page: per broker group its timers, transactions and POP
// state (per consumer group and topic: in flight, due, the oldest
// invisible-until), each list's error in its place.
func TestPendingPage(t *testing.T) {
	f, _ := newFake(t)
	due := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	f.timers = map[string]protocol.PendingTimers{"broker-a": {Count: 3, NextDueMs: due, MaxDelayMs: 3_600_000,
		Timers: []protocol.PendingTimer{{Topic: "<script>alert(1)</script>", QueueID: 2, DueMs: due, MsgID: "TIMER1", ParkedOffset: 7}}}}
	f.trans = map[string]protocol.PendingTransactions{"broker-a": {Count: 1,
		Transactions: []protocol.PendingTransaction{{MsgID: "HALF1", ProducerGroup: "pg<i>", Topic: "Orders", AgeMs: 65_000, CheckTimes: 2, HalfOffset: 11}}},
		"broker-b": {}}
	f.pop = map[string]protocol.PopState{"broker-a": {Count: 2, Rows: []protocol.PopStateRow{
		{Group: "cg<b>", Topic: "Orders", Inflight: 5, Due: 2, OldestInvisibleUntil: due}}}}
	_, ts := newTestServer(t, f, Config{})
	body := wantAll(t, ts.Client(), ts.URL, "/pending",
		`pairs with messages in flight: <span class="count">2</span>`, `data-consumer="cg&lt;b&gt;" data-topic="Orders"`,
		`class="num inflight">5<`, `class="num due">2<`, `class="oldest">2030-01-02 03:04:05.000Z<`, "and 1 more",
		`class="bad pop-error"`,
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

// A topic's put rate is its group leader's TOPIC_PUT_NUMS, per second over
// the last minute and hour.
func TestTopicPutRate(t *testing.T) {
	f, _ := newFake(t)
	f.putStats = &protocol.BrokerStatsData{StatsMinute: protocol.BrokerStatsItem{Tps: 12.5}, StatsHour: protocol.BrokerStatsItem{Tps: 0.75}}
	_, ts := newTestServer(t, f, Config{})
	wantAll(t, ts.Client(), ts.URL, "/topics/Orders", `class="num put-rate">12.5 / 0.75</td>`)
}

func TestACLPage(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	body := wantAll(t, ts.Client(), ts.URL, "/acl", `id="acl-note"`, "ACL off", "not said", "does not answer")
	if strings.Contains(body, "accounts") && strings.Contains(body, "<h3>") {
		t.Errorf("accounts shown with the ACL off:\n%s", body)
	}
	f.config = map[string]string{"acl_enable": "true"}
	f.runtime = map[string]string{"aclHash": "h<1>", "aclIndex": "17", "aclFrom": "n1", "aclFileHash": "f<2>"}
	f.aclConfig = protocol.ClusterACLConfig{GlobalWhiteAddrs: []string{"10.1.*"}, PlainAccessConfigs: []protocol.PlainAccessConfig{
		{AccessKey: "reader<x>", SecretKey: "s3cr3t-value", DefaultTopicPerm: "SUB", TopicPerms: []string{"orders=PUB"}},
		{AccessKey: "boss", SecretKey: "another-s3cr3t", Admin: true, WhiteRemoteAddress: "192.168.*"}}}
	body = wantAll(t, ts.Client(), ts.URL, "/acl", "ACL on in 2 of 3 nodes", `class="ok agree"`, "h&lt;1&gt;", `class="num">17<`, "f&lt;2&gt;", `<span class="ok">on</span>`,
		`data-account="reader&lt;x&gt;"`, "hidden (12 characters)", "orders=PUB", `data-account="boss"`, `<span class="ok">admin</span>`, "192.168.*", "10.1.*")
	if strings.Contains(body, "s3cr3t") {
		t.Errorf("the ACL page shows a secret key:\n%s", body)
	}
}

func TestClusterFormatVerifierAndLeaderChanges(t *testing.T) {
	f, _ := newFake(t)
	f.raft = map[string]protocol.RaftStatus{
		"127.0.0.1:10911": {FormatVersion: 3, MinFormatVersion: 1, MaxFormatVersion: 4, Verifier: &protocol.RaftVerifier{Matched: 12, LastIndex: 40}},
		"127.0.0.1:10921": {FormatVersion: 3, Verifier: &protocol.RaftVerifier{Matched: 5, Mismatched: 1, LastIndex: 38, LastMismatch: "index 38: <b>bytes differ</b>"}},
	}
	_, ts := newTestServer(t, f, Config{})
	c := ts.Client()
	wantAll(t, c, ts.URL, "/cluster", `raft format version <span class="format">3</span>`, "supports 1–4",
		`<span class="ok">matched</span>: 12 matched, 0 mismatched`, `<span class="bad">mismatched</span>: 5 matched, 1 mismatched`,
		"&lt;b&gt;bytes differ&lt;/b&gt;", `class="change" data-old="" data-new="n0"`, "(first seen)")

	// broker-a's leader n0 dies, n1 wins term 4; then an old view (term 3)
	// read late changes nothing.
	members := append([]client.MemberStatus(nil), f.members...)
	members[0].Role, members[0].Error = "unreachable", "dial refused"
	members[1].Role, members[1].Term = "leader", 4
	f.setMembers(members)
	body := wantAll(t, c, ts.URL, "/cluster", `class="change" data-old="n0" data-new="n1"`)
	s, _ := newTestServer(t, f, Config{})
	s.leaders.observe(time.Now(), f.members)
	old := append([]client.MemberStatus(nil), f.members...)
	old[1].Role, old[0].Role, old[0].Error = "follower", "leader", ""
	s.leaders.observe(time.Now(), old)
	if h := s.leaders.history("broker-a"); len(h) != 1 || h[0].New != "n1" || h[0].Term != 4 {
		t.Errorf("history after a late old view: %+v", h)
	}
	if i, j := strings.Index(body, `data-new="n1"`), strings.Index(body, `data-new="n0"`); i < 0 || j < i {
		t.Errorf("changes not newest first:\n%s", body)
	}
}

func TestLeaderLogBounded(t *testing.T) {
	l := newLeaderLog()
	for i := range 2 * maxLeaderChanges {
		id := "n" + string(rune('0'+i%3))
		l.observe(time.Now(), []client.MemberStatus{{BrokerName: "g", ID: id, Role: "leader", Term: uint64(i + 1)}})
		l.observe(time.Now(), []client.MemberStatus{{BrokerName: "g", ID: id, Role: "leader", Term: uint64(i + 1)}})   // no change
		l.observe(time.Now(), []client.MemberStatus{{BrokerName: "g", ID: id, Role: "follower", Term: uint64(i + 2)}}) // no leader: no change
	}
	h := l.history("g")
	if len(h) != maxLeaderChanges || h[0].Term != 2*maxLeaderChanges || h[len(h)-1].Term != maxLeaderChanges+1 {
		t.Fatalf("history: %d changes, newest term %d, oldest %d", len(h), h[0].Term, h[len(h)-1].Term)
	}
	if h[0].Old != h[1].New {
		t.Errorf("newest change's old leader %q, the one before's new %q", h[0].Old, h[1].New)
	}
}

func TestMessageTrace(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	c := ts.Client()
	const byKey = "/messages?search=1&mode=key&topic=Orders&key=k1"
	wantAll(t, c, ts.URL, byKey, `class="muted trace-none"`, "there is no trace topic RMQ_SYS_TRACE_TOPIC")
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.traces = map[string][]client.TraceEvent{"UNIQ1": {
		{Type: "Pub", Group: "pg<1>", ClientHost: "10.0.0.1", Time: at, CostMs: 3, Status: "success", Topic: "Orders", StoreHost: "127.0.0.1:10911"},
		{Type: "SubBefore", Group: "cg", ClientHost: "10.0.0.2", Time: at.Add(time.Second), RetryTimes: 1},
		{Type: "SubAfter", Group: "cg", ClientHost: "10.0.0.2", Time: at.Add(2 * time.Second), CostMs: 9, Status: "failed"},
	}}
	wantAll(t, c, ts.URL, byKey, "trace: 3 events", `data-type="Pub"`, `data-type="SubBefore"`, `data-type="SubAfter"`,
		"pg&lt;1&gt;", "2030-01-02 03:04:05.000Z", `<span class="ok">success</span>`, `<span class="bad">failed</span>`, "retry 1", "stored at 127.0.0.1:10911")
	wantAll(t, c, ts.URL, "/messages?search=1&mode=id&topic=Orders&id=UNIQ2", "holds no event of this message")
}
