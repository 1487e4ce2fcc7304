//go:build unix

package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// devCluster is a running `ledgermq dev` and an admin API on it.
type devCluster struct {
	p     *devcluster.Process
	admin *client.Admin
}

func startDev(t *testing.T, args ...string) *devCluster {
	t.Helper()
	p := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: args})
	a, err := client.NewAdmin(client.WithAdminNameServers(p.Namesrv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return &devCluster{p: p, admin: a}
}

// startConsole runs a console on a loopback port until the test ends and
// returns its base URL.
func startConsole(t *testing.T, a Admin, cfg Config) string {
	t.Helper()
	cfg.Admin = a
	s, err := New(cfg)
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
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("console Run: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// waitUntil polls cond every 100 ms (testwait) until it returns nil, and
// fails with its last error when d passes first.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	var last error
	testwait.ForEvery(lastErrorTB{t, &last}, d, 100*time.Millisecond, what, func() bool {
		last = cond()
		return last == nil
	})
}

// lastErrorTB adds a condition's last error to testwait's failure.
type lastErrorTB struct {
	t    *testing.T
	last *error
}

func (l lastErrorTB) Helper() { l.t.Helper() }

func (l lastErrorTB) Fatalf(format string, args ...any) {
	l.t.Helper()
	l.t.Fatalf(format+": %v", append(args, *l.last)...)
}

// seed makes what the pages show: a topic of 4 queues with n messages
// (keys key-0…), and a configured consumer group. It returns the sends.
func (c *devCluster) seed(t *testing.T, topic, group string, n int) []client.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.CreateGroup(ctx, client.DefaultGroupConfig(group), client.Target{}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(client.WithNameServers(c.p.Namesrv), client.WithGroup(group+"-producer"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out []client.SendResult
	for i := range n {
		res, err := p.Send(ctx, &client.Message{Topic: topic, Body: fmt.Appendf(nil, "console body %d <b>bold</b>", i), Keys: []string{fmt.Sprintf("key-%d", i)}, Tag: "T"})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		out = append(out, res)
	}
	return out
}

var (
	rowRE   = regexp.MustCompile(`(?s)data-node="([^"]*)">.*?<td class="role">([^<]*)</td><td class="term">(\d+)</td>.*?class="num commit">(\d+)</td><td class="num applied">(\d+)</td><td class="num lag">(\d+)</td>`)
	queueRE = regexp.MustCompile(`(?s)data-queue="([^"]+)">.*?class="num min">(-?\d+)</td><td class="num max">(-?\d+)</td>`)
	progRE  = regexp.MustCompile(`(?s)data-queue="([^"]+)">.*?class="num broker">(-?\d+)</td><td class="num consumer">(-?\d+)</td><td class="num lag">(-?\d+)</td>`)
)

// send sends n messages to topic, one every pause.
func (c *devCluster) send(topic string, n int, pause time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := client.NewProducer(client.WithNameServers(c.p.Namesrv), client.WithGroup("ConsoleLoad"))
	if err != nil {
		return err
	}
	defer p.Close()
	for i := range n {
		if _, err := p.Send(ctx, &client.Message{Topic: topic, Body: fmt.Appendf(nil, "load %d", i)}); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		time.Sleep(pause)
	}
	return nil
}

// startReader runs a push consumer of group on topic from the first
// offset until the test ends, and waits until it has consumed n messages
// and committed them.
func (c *devCluster) startReader(t *testing.T, topic, group string, n int64) {
	t.Helper()
	pc, err := client.NewPushConsumer(client.WithNameServers(c.p.Namesrv), client.WithGroup(group),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithCommitInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, client.Selector{}, func(context.Context, *client.MessageExt) client.ConsumeResult {
		return client.ConsumeSuccess
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitUntil(t, 30*time.Second, group+" consumed every message", func() error {
		pr, err := c.admin.ConsumerProgress(ctx, group, topic)
		if err != nil {
			return err
		}
		var done int64
		for _, q := range pr.Queues {
			done += q.ConsumerOffset
		}
		if done != n || pr.TotalLag != 0 {
			return fmt.Errorf("consumed %d of %d, lag %d", done, n, pr.TotalLag)
		}
		return nil
	})
}

// TestConsoleDevCluster checks the pages against the admin API on a real
// dev cluster, then drives them in a headless Chromium.
func TestConsoleDevCluster(t *testing.T) {
	c := startDev(t)
	const topic, group = "ConsoleTopic", "ConsoleGroup"
	const reader = "ConsoleReader"
	sent := c.seed(t, topic, group, 12)
	c.startReader(t, topic, reader, int64(len(sent)))
	c.holdPop(t, topic, consolePopGroup)
	base := startConsole(t, c.admin, Config{SampleEvery: time.Second, RefreshEvery: time.Second})
	hc := &http.Client{Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	waitUntil(t, 10*time.Second, "dev's console line", func() error {
		if want := "dev: web console: http://" + c.p.File.NamesrvHTTP + "/; or its own process: "; !strings.Contains(c.p.Output(), want) {
			return fmt.Errorf("no %q in dev's output", want)
		}
		return nil
	})
	// The console the name server serves on its HTTP port (dev turns it
	// on) shows the same cluster, beside the name server's own endpoints.
	waitUntil(t, 15*time.Second, "the name server's console showing the group", func() error {
		code, body := get(t, hc, "http://"+c.p.File.NamesrvHTTP+"/cluster")
		if code != http.StatusOK || !strings.Contains(body, `data-group="broker-a"`) || !strings.Contains(body, "ledgermq console") {
			return fmt.Errorf("status %d:\n%.400s", code, body)
		}
		return nil
	})
	if code, body := get(t, hc, "http://"+c.p.File.NamesrvHTTP+"/livez"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("the name server's /livez beside its console: %d %q", code, body)
	}

	t.Run("pages match the admin API", func(t *testing.T) {
		// The cluster: the page's raft columns are ClusterList's. Nothing
		// writes meanwhile, so both reads see the same indices.
		waitUntil(t, 15*time.Second, "cluster page equal to ClusterList", func() error {
			code, body := get(t, hc, base+"/cluster")
			if code != http.StatusOK {
				return fmt.Errorf("status %d", code)
			}
			members, err := c.admin.ClusterList(ctx)
			if err != nil {
				return err
			}
			rows := rowRE.FindAllStringSubmatch(body, -1)
			if len(rows) != len(members) {
				return fmt.Errorf("%d rows for %d members", len(rows), len(members))
			}
			for i, m := range members {
				want := []string{m.ID, m.Role, strconv.FormatUint(m.Term, 10), strconv.FormatUint(m.CommitIndex, 10),
					strconv.FormatUint(m.AppliedIndex, 10), strconv.FormatUint(m.Lag, 10)}
				if got := rows[i][1:]; strings.Join(got, " ") != strings.Join(want, " ") {
					return fmt.Errorf("row %d: page %v, admin API %v", i, got, want)
				}
				if m.Role == "leader" && !strings.Contains(body, `data-leader="`+m.ID+`"`) {
					return fmt.Errorf("leader %s not named", m.ID)
				}
			}
			if !strings.Contains(body, "healthy</span>") || !strings.Contains(body, "leader "+members[0].ID) && !strings.Contains(body, ", term ") {
				return errors.New("no health or /status column")
			}
			return nil
		})

		// A topic: every queue's min and max offsets are TopicStatus's.
		qs, err := c.admin.TopicStatus(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		code, body := get(t, hc, base+"/topics/"+topic)
		if code != http.StatusOK {
			t.Fatalf("topic page: %d\n%s", code, body)
		}
		rows := queueRE.FindAllStringSubmatch(body, -1)
		if len(rows) != len(qs) || len(qs) != 4 {
			t.Fatalf("%d queue rows, TopicStatus %d", len(rows), len(qs))
		}
		// The route's put rate is the leader's TOPIC_PUT_NUMS (the page
		// and the admin API read it within one 10 s sampling period).
		waitUntil(t, 30*time.Second, "the put rate equal to the leader's statistic", func() error {
			rd, err := c.admin.TopicRoute(ctx, topic)
			if err != nil || len(rd.BrokerDatas) == 0 {
				return fmt.Errorf("route: %v", err)
			}
			leader := rd.BrokerDatas[0].BrokerAddrs[0]
			st, err := c.admin.BrokerStats(ctx, leader, "TOPIC_PUT_NUMS", topic)
			if err != nil {
				return err
			}
			_, body := get(t, hc, base+"/topics/"+topic)
			if want := fmt.Sprintf(`class="num put-rate">%.1f / %.2f</td>`, st.StatsMinute.Tps, st.StatsHour.Tps); !strings.Contains(body, want) {
				return fmt.Errorf("no %s on the topic page", want)
			}
			return nil
		})
		var total int64
		for i, q := range qs {
			want := fmt.Sprintf("%s/%d %d %d", q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset)
			if got := strings.Join(rows[i][1:], " "); got != want {
				t.Errorf("queue %d: page %q, TopicStatus %q", i, got, want)
			}
			total += q.MaxOffset - q.MinOffset
		}
		if total != int64(len(sent)) || !strings.Contains(body, fmt.Sprintf("%d messages stored", total)) {
			t.Errorf("%d messages in TopicStatus, %d sent", total, len(sent))
		}

		// A group with a consumer online: its offsets per queue are
		// ConsumerProgress's, its client ConsumerConnections'.
		pr, err := c.admin.ConsumerProgress(ctx, reader, "")
		if err != nil {
			t.Fatal(err)
		}
		conns, err := c.admin.ConsumerConnections(ctx, reader)
		if err != nil {
			t.Fatal(err)
		}
		code, body = get(t, hc, base+"/groups/"+reader)
		rows = progRE.FindAllStringSubmatch(body, -1)
		if code != http.StatusOK || len(rows) != len(pr.Queues) {
			t.Fatalf("group page: %d, %d rows for %d queues\n%s", code, len(rows), len(pr.Queues), body)
		}
		for i, q := range pr.Queues {
			want := fmt.Sprintf("%s/%s/%d %d %d %d", q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag)
			if got := strings.Join(rows[i][1:], " "); got != want {
				t.Errorf("group queue %d: page %q, ConsumerProgress %q", i, got, want)
			}
		}
		for _, cl := range conns.Clients {
			if !strings.Contains(body, "<td>"+cl.ClientID+"</td>") || !strings.Contains(body, fmt.Sprintf("<td>%s</td><td class=\"num\">%d</td>", cl.Language, cl.Version)) {
				t.Errorf("group page lacks client %+v", cl)
			}
		}
		if len(conns.Clients) == 0 {
			t.Error("no client online")
		}

		// The topic and group lists.
		if _, body := get(t, hc, base+"/topics"); !strings.Contains(body, `href="/topics/`+topic+`"`) {
			t.Errorf("topic list lacks %s", topic)
		}
		if _, body := get(t, hc, base+"/groups"); !strings.Contains(body, `href="/groups/`+group+`"`) {
			t.Errorf("group list lacks %s", group)
		}

		// Message search: by id, by key, at an offset, by time.
		for _, q := range []string{
			"mode=id&topic=" + topic + "&id=" + sent[3].MsgID,
			"mode=id&id=" + sent[3].OffsetMsgID,
			"mode=key&topic=" + topic + "&key=key-3",
			fmt.Sprintf("mode=offset&topic=%s&queue=%d&offset=%d", topic, sent[3].Queue.QueueID, sent[3].QueueOffset),
		} {
			code, body := get(t, hc, base+"/messages?search=1&"+q)
			if code != http.StatusOK || !strings.Contains(body, `data-msgid="`+sent[3].MsgID+`"`) || !strings.Contains(body, "console body 3 &lt;b&gt;bold&lt;/b&gt;") {
				t.Errorf("search %s: %d, no message %s\n%s", q, code, sent[3].MsgID, body)
			}
		}
		if _, body := get(t, hc, base+"/messages?search=1&mode=time&topic="+topic+"&max=100"); strings.Count(body, `<article class="message"`) != len(sent) {
			t.Errorf("time range: %d messages, want %d", strings.Count(body, `<article class="message"`), len(sent))
		}

		// Pending: each group's counts are the admin API's (nothing is
		// pending here: no timer or transaction was sent).
		timers, err := c.admin.PendingTimers(ctx, "broker-a", 0)
		if err != nil {
			t.Fatal(err)
		}
		trans, err := c.admin.PendingTransactions(ctx, "broker-a", 0)
		if err != nil {
			t.Fatal(err)
		}
		code, body = get(t, hc, base+"/pending")
		if want := []string{`data-group="broker-a"`, fmt.Sprintf(`<span class="count">%d</span> pending`, timers.Count),
			fmt.Sprintf(`<span class="count">%d</span> undecided`, trans.Count)}; code != http.StatusOK || !containsAll(body, want) {
			t.Errorf("pending page: %d, want %q\n%s", code, want, body)
		}
		if strings.Contains(body, "timers-error") || strings.Contains(body, "transactions-error") {
			t.Errorf("pending page shows an error\n%s", body)
		}
		// ACL: off in dev; every node answers.
		if code, body = get(t, hc, base+"/acl"); code != http.StatusOK || !strings.Contains(body, "ACL off") || strings.Count(body, `<td class="acl-on">`) != len(c.p.File.Nodes) {
			t.Errorf("ACL page: %d\n%s", code, body)
		}
		// The cluster page's format version is the leader's RAFT_STATUS's;
		// its first leader is in the history.
		_, ls, err := c.admin.WaitGroupLeader(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		_, body = get(t, hc, base+"/cluster")
		if ls.FormatVersion != 0 && !strings.Contains(body, fmt.Sprintf(`raft format version <span class="format">%d</span>`, ls.FormatVersion)) {
			t.Errorf("cluster page lacks format version %d", ls.FormatVersion)
		}
		if !strings.Contains(body, `data-new="`+ls.Node+`"`) {
			t.Errorf("leader history lacks %s", ls.Node)
		}

		// The chart's samples name every node once they have been read.
		waitUntil(t, 15*time.Second, "samples of every node", func() error {
			_, body := get(t, hc, base+"/api/metrics")
			for _, n := range c.p.File.Nodes {
				if !strings.Contains(body, `"name":"broker-a/`+n.ID+`"`) {
					return fmt.Errorf("no series of %s in %s", n.ID, body)
				}
			}
			return nil
		})
	})

	t.Run("a traced message's trace", func(t *testing.T) {
		// Before the trace topic exists the card says there is none.
		if _, body := get(t, hc, base+"/messages?search=1&mode=id&topic="+topic+"&id="+sent[0].MsgID); !strings.Contains(body, "there is no trace topic") {
			t.Errorf("no \"no trace topic\" on the card:\n%s", body)
		}
		if _, err := c.admin.CreateTopic(ctx, client.TopicConfig{Topic: client.DefaultTraceTopic, ReadQueues: 1, WriteQueues: 1}, client.Target{}); err != nil {
			t.Fatal(err)
		}
		p, err := client.NewProducer(client.WithNameServers(c.p.Namesrv), client.WithGroup("ConsoleTraced"), client.WithTrace(""))
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte("traced"), Keys: []string{"traced"}})
		_ = p.Close() // flushes the trace batch
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 15*time.Second, "the Pub event on the message's card", func() error {
			_, body := get(t, hc, base+"/messages?search=1&mode=id&topic="+topic+"&id="+res.MsgID)
			if !strings.Contains(body, `data-type="Pub"`) || !strings.Contains(body, "<td>ConsoleTraced</td>") {
				return errorf("no Pub event by ConsoleTraced:\n%s", body)
			}
			return nil
		})
		if _, body := get(t, hc, base+"/messages?search=1&mode=id&topic="+topic+"&id="+sent[0].MsgID); !strings.Contains(body, "holds no event of this message") {
			t.Errorf("an untraced message's card:\n%s", body)
		}
	})

	t.Run("chromium", func(t *testing.T) {
		browserTest(t, c, base, topic, group, sent)
	})
}

// containsAll reports whether s holds every one of want.
func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// errorf is fmt.Errorf, for conditions' errors.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
