package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/ops"
	"github.com/ledgermq/ledgermq/protocol"
)

// fakeNode serves a node's /status and /metrics; messagesIn is the
// counter its /metrics reports.
func fakeNode(t *testing.T, st ops.Status, messagesIn *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/status":
			_ = json.NewEncoder(w).Encode(st)
		case "/metrics":
			_, _ = io.WriteString(w, "# HELP rocketmq_messages_in_total x\n# TYPE rocketmq_messages_in_total counter\n")
			_, _ = io.WriteString(w, `rocketmq_messages_in_total{topic="a{b}"} `+strings.TrimSpace(jsonNum(float64(messagesIn.Load())/2))+"\n")
			_, _ = io.WriteString(w, `rocketmq_messages_in_total{topic="c"} `+strings.TrimSpace(jsonNum(float64(messagesIn.Load())/2))+"\n")
			_, _ = io.WriteString(w, `rocketmq_messages_out_total{topic="c",consumer_group="g"} `+strings.TrimSpace(jsonNum(float64(messagesIn.Load())*3))+"\n")
			_, _ = io.WriteString(w, "ledgermq_raft_apply_lag_entries 7\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func jsonNum(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func newFake(t *testing.T) (*fakeAdmin, *atomic.Int64) {
	t.Helper()
	in := new(atomic.Int64)
	st := ops.Status{Group: "broker-a", Node: "n0", Role: "leader", Term: 3, Leader: "n0", CommitIndex: 42, AppliedIndex: 42, Recovered: true}
	m := &message.Ext{Message: message.Message{Topic: "Orders", Body: []byte("hello <b>world</b>"),
		Properties: map[string]string{message.PropertyKeys: "k1", message.PropertyUniqKey: "UNIQ1", "note": "<script>alert(1)</script>"}},
		QueueID: 1, QueueOffset: 0, StoreTimestamp: time.Now().UnixMilli(), BornTimestamp: time.Now().UnixMilli(),
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), BornHost: netip.MustParseAddrPort("127.0.0.1:5555")}
	bin := &message.Ext{Message: message.Message{Topic: "Orders", Body: []byte{0xff, 0x00, 0x41}, Properties: map[string]string{message.PropertyUniqKey: "UNIQ2"}},
		QueueID: 1, QueueOffset: 1, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), BornHost: netip.MustParseAddrPort("127.0.0.1:5555")}
	f := &fakeAdmin{
		members: []client.MemberStatus{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", ID: "n0", Voter: true, Role: "leader", Term: 3, LastIndex: 42, CommitIndex: 42, AppliedIndex: 42, ClientAddr: "127.0.0.1:10911", BrokerID: 0},
			{Cluster: "DefaultCluster", BrokerName: "broker-a", ID: "n1", Voter: true, Role: "follower", Term: 3, LastIndex: 42, CommitIndex: 41, AppliedIndex: 40, Lag: 2, ClientAddr: "127.0.0.1:10921", BrokerID: 1},
			{Cluster: "DefaultCluster", BrokerName: "broker-a", ID: "n2", Voter: true, Role: "unreachable", ClientAddr: "127.0.0.1:10931", BrokerID: -1, Error: "dial refused"},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", ID: "n0", Voter: true, Role: "follower", Term: 5, ClientAddr: "127.0.0.1:10941", BrokerID: 1},
		},
		health: &client.HealthReport{Healthy: false, Problems: []string{"group broker-a: n2 (127.0.0.1:10931) does not answer: dial refused"}},
		topics: []string{"Orders", "%RETRY%g1", "<script>alert(1)</script>", "TBW102", "DefaultCluster_REPLY_TOPIC"},
		route: &protocol.TopicRouteData{
			QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
			BrokerDatas: []protocol.BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}}},
		},
		queues: []client.QueueStatus{{BrokerName: "broker-a", QueueID: 0, MinOffset: 0, MaxOffset: 17}, {BrokerName: "broker-a", QueueID: 1, MinOffset: 2, MaxOffset: 5}},
		groups: []client.BrokerGroupConfig{{BrokerName: "broker-a", GroupConfig: protocol.DefaultSubscriptionGroupConfig("g1")}},
		progress: &client.Progress{Group: "g1", TotalLag: 9, Queues: []client.QueueProgress{
			{Topic: "Orders", BrokerName: "broker-a", QueueID: 0, BrokerOffset: 17, ConsumerOffset: 8, Lag: 9}}},
		conns: &client.ConsumerConnections{Group: "g1", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
			Clients: []client.ConsumerClient{{ClientID: "10.0.0.9@1", ClientAddr: "127.0.0.1:6000", Language: "GO", Version: 317}}},
		msgs: []*message.Ext{m, bin},
	}
	f.httpAddr = fakeNode(t, st, in)
	return f, in
}

func newTestServer(t *testing.T, a Admin, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	cfg.Admin = a
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestPagesFromFake(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	c := ts.Client()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/cluster", []string{`data-leader="n0"`, `data-group="broker-a"`, `data-group="broker-b"`, `<strong class="bad leader" data-leader="">`, "not healthy", "dial refused", "leader n0, term 3, applied 42", `class="num lag">2<`}},
		{"/cluster?fragment=1", []string{`<div id="live"`, `data-leader="n0"`}},
		{"/topics", []string{`href="/topics/Orders"`, "&lt;script&gt;alert(1)&lt;/script&gt;", "3 system topics hidden"}},
		{"/topics?system=1", []string{`href="/topics/%25RETRY%25g1"`}},
		{"/topics/Orders", []string{"127.0.0.1:10911", `class="num max">17<`, "20 messages stored", `class="num put-rate">-</td>`}},
		{"/groups", []string{`href="/groups/g1"`}},
		{"/groups/g1", []string{`id="total-lag">9<`, "GO", "317", `name="csrf"`}},
		{"/messages", []string{`id="search-form"`}},
		{"/messages?search=1&mode=key&topic=Orders&key=k1", []string{"UNIQ1", "hello &lt;b&gt;world&lt;/b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;"}},
		{"/messages?search=1&mode=id&topic=Orders&id=UNIQ2", []string{"not UTF-8", "ff 00 41"}},
		{"/messages?search=1&mode=offset&topic=Orders&queue=1&offset=0", []string{"UNIQ1"}},
		{"/messages?search=1&mode=id&topic=Orders&id=nope", []string{`id="not-found"`}},
		{"/chart", []string{`id="chart-rate"`, `id="chart-lag"`}},
	} {
		code, body := get(t, c, ts.URL+tc.path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", tc.path, code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in\n%s", tc.path, w, body)
			}
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("GET %s: unescaped script", tc.path)
		}
	}
	for _, bad := range []string{"/messages?search=1&mode=offset&topic=Orders&queue=x", "/messages?search=1&mode=key"} {
		if code, _ := get(t, c, ts.URL+bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
}

// post sends form with the console cookie when cookie is set.
func post(t *testing.T, ts *httptest.Server, path, cookie string, form url.Values, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: cookie})
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestResetNeedsTokenAndConfirmation(t *testing.T) {
	f, _ := newFake(t)
	s, ts := newTestServer(t, f, Config{})
	resp, err := ts.Client().Get(ts.URL + "/groups/g1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != s.token || cookie.SameSite != http.SameSiteStrictMode || !cookie.HttpOnly {
		t.Fatalf("console cookie %+v", cookie)
	}
	form := url.Values{"topic": {"Orders"}, "time": {"2026-01-02T03:04:05"}, csrfField: {s.token}}
	for _, tc := range []struct {
		name, cookie, field, origin string
	}{
		{"no cookie", "", s.token, ""},
		{"no field", s.token, "", ""},
		{"wrong field", s.token, "x" + s.token[1:], ""},
		{"foreign origin", s.token, s.token, "http://evil.example"},
	} {
		fm := url.Values{"topic": {"Orders"}, "time": {"0"}}
		if tc.field != "" {
			fm.Set(csrfField, tc.field)
		}
		if code, _ := post(t, ts, "/groups/g1/reset", tc.cookie, fm, tc.origin); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, code)
		}
	}
	if n := len(f.resetsAsked()); n != 0 {
		t.Fatalf("%d resets reached the admin API without a valid token", n)
	}
	code, body := post(t, ts, "/groups/g1/reset", s.token, form, ts.URL)
	if code != http.StatusOK || !strings.Contains(body, "1 of 2 queues would move") || !strings.Contains(body, `id="execute-form"`) {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	if r := f.resetsAsked(); len(r) != 1 || r[0].Execute || r[0].Timestamp != want || r[0].Topic != "Orders" || r[0].Group != "g1" {
		t.Fatalf("dry run asked %+v", r)
	}
	exec := url.Values{"topic": {"Orders"}, "time": {"1767323045000"}, csrfField: {s.token}}
	if code, _ := post(t, ts, "/groups/g1/reset/execute", s.token, exec, ""); code != http.StatusBadRequest {
		t.Fatalf("execute without confirmation: %d, want 400", code)
	}
	if n := len(f.resetsAsked()); n != 1 {
		t.Fatalf("execute without confirmation reached the admin API")
	}
	exec.Set("confirm", "yes")
	code, body = post(t, ts, "/groups/g1/reset/execute", s.token, exec, "")
	if code != http.StatusOK || !strings.Contains(body, "Reset executed: 1 of 2 queues moved") {
		t.Fatalf("execute: %d\n%s", code, body)
	}
	if r := f.resetsAsked(); len(r) != 2 || !r[1].Execute || r[1].Timestamp != want {
		t.Fatalf("execute asked %+v", r)
	}
	if code, _ := get(t, ts.Client(), ts.URL+"/cluster"); code != http.StatusOK {
		t.Fatal(code)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/cluster", nil)
	resp, err = ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
}

func TestBasicAuth(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{User: "ops", Password: "s3cret"})
	if code, _ := get(t, ts.Client(), ts.URL+"/cluster"); code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", code)
	}
	for _, up := range [][2]string{{"ops", "wrong"}, {"nobody", "s3cret"}, {"ops", "s3cret"}} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/static/console.css", nil)
		req.SetBasicAuth(up[0], up[1])
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusUnauthorized
		if up[1] == "s3cret" && up[0] == "ops" {
			want = http.StatusOK
		}
		if resp.StatusCode != want {
			t.Errorf("%v: %d, want %d", up, resp.StatusCode, want)
		}
	}
	if _, err := New(Config{Admin: f, User: "ops"}); !errors.Is(err, ErrNeedAuth) {
		t.Errorf("user without password: %v", err)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, user, pass string
		ok               bool
	}{
		{"127.0.0.1:8080", "", "", true},
		{"localhost:0", "", "", true},
		{"[::1]:8080", "", "", true},
		{"0.0.0.0:8080", "", "", false},
		{":8080", "", "", false},
		{"10.1.2.3:8080", "", "", false},
		{"0.0.0.0:8080", "ops", "pw", true},
		{"127.0.0.1:8080", "ops", "", false},
		{"nonsense", "", "", false},
	} {
		if err := CheckListen(tc.addr, tc.user, tc.pass); (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q, %q) = %v", tc.addr, tc.user, tc.pass, err)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	resp, err := ts.Client().Get(ts.URL + "/topics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Error("no X-Frame-Options")
	}
}

func TestSumMetrics(t *testing.T) {
	in := `# HELP x y
rocketmq_messages_in_total{topic="a",x="}\" {"} 3
rocketmq_messages_in_total{topic="b"} 4.5
rocketmq_messages_in_total_other 100
ledgermq_raft_apply_lag_entries 2 1700000000000
garbage
`
	got := sumMetrics(strings.NewReader(in), metricMessagesIn, metricApplyLag, "absent")
	if got[metricMessagesIn] != 7.5 || got[metricApplyLag] != 2 {
		t.Fatalf("%v", got)
	}
	if _, ok := got["absent"]; ok {
		t.Fatal("absent metric reported")
	}
}

func TestResolveHTTPAddr(t *testing.T) {
	for _, tc := range []struct{ setting, client, want string }{
		{"127.0.0.1:9000", "127.0.0.1:10911", "127.0.0.1:9000"},
		{"0.0.0.0:9000", "10.0.0.5:10911", "10.0.0.5:9000"},
		{":9000", "10.0.0.5:10911", "10.0.0.5:9000"},
		{"127.0.0.1:0", "127.0.0.1:10911", ""},
		{"", "127.0.0.1:10911", ""},
	} {
		got, err := resolveHTTPAddr(tc.setting, tc.client)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("resolveHTTPAddr(%q, %q) = %q, %v", tc.setting, tc.client, got, err)
		}
	}
}

func TestSamplerAndRun(t *testing.T) {
	f, in := newFake(t)
	s, err := New(Config{Admin: f, SampleEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var sm Samples
	testwait.ForEvery(t, 10*time.Second, 60*time.Millisecond, "three samples, one with a send rate", func() bool {
		in.Add(10)
		code, body := get(t, http.DefaultClient, "http://"+ln.Addr().String()+"/api/metrics")
		if code != http.StatusOK {
			t.Fatalf("/api/metrics: %d", code)
		}
		if err := json.Unmarshal([]byte(body), &sm); err != nil {
			t.Fatal(err)
		}
		return len(sm.Times) >= 3 && slices.Max(sm.SendRate.Values) > 0
	})
	if len(sm.Times) < 3 || len(sm.SendRate.Values) != len(sm.Times) {
		t.Fatalf("samples %+v", sm)
	}
	if slices.Max(sm.SendRate.Values) <= 0 {
		t.Errorf("send rate %v while the counter grows", sm.SendRate.Values)
	}
	if len(sm.ConsumeRate.Values) != len(sm.Times) || slices.Max(sm.ConsumeRate.Values) <= 0 {
		t.Errorf("consume rate %v while the counter grows", sm.ConsumeRate.Values)
	}
	if len(sm.ApplyLag) != 4 || sm.ApplyLag[0].Values[len(sm.Times)-1] != 7 {
		t.Fatalf("apply lag %+v", sm.ApplyLag)
	}
}
