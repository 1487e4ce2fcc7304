package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func TestAvoidFor(t *testing.T) {
	for _, tt := range []struct {
		latency time.Duration
		want    time.Duration
	}{
		{0, 0}, {49 * time.Millisecond, 0}, {100 * time.Millisecond, 0}, {549 * time.Millisecond, 0},
		{550 * time.Millisecond, 30 * time.Second}, {999 * time.Millisecond, 30 * time.Second},
		{time.Second, 60 * time.Second}, {2 * time.Second, 120 * time.Second}, {3 * time.Second, 180 * time.Second},
		{15 * time.Second, 600 * time.Second}, {failedLatency, 600 * time.Second},
	} {
		if got := avoidFor(tt.latency); got != tt.want {
			t.Errorf("avoidFor(%v) = %v, want %v", tt.latency, got, tt.want)
		}
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestFaultTable(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	f := newFaultTable(clk.Now)
	if !f.available("a", "a1") {
		t.Fatal("unknown group not available")
	}
	f.update("a", "a1", 10*time.Millisecond, false)
	if !f.available("a", "a1") {
		t.Fatal("fast group avoided")
	}
	f.update("a", "a1", 600*time.Millisecond, false)
	if f.available("a", "a1") {
		t.Fatal("slow group not avoided")
	}
	clk.Advance(30 * time.Second)
	if !f.available("a", "a1") {
		t.Fatal("slow group still avoided after 30 s")
	}
	f.update("a", "a1", 0, true)
	clk.Advance(599 * time.Second)
	if f.available("a", "a1") {
		t.Fatal("failed group available before 600 s")
	}
	// A new leader for the group lifts the fault.
	if !f.available("a", "a2") {
		t.Fatal("failed-over group still avoided")
	}
	clk.Advance(time.Second)
	if !f.available("a", "a1") {
		t.Fatal("failed group avoided after 600 s")
	}

	f.update("a", "a1", 0, true)
	f.update("b", "b1", 2*time.Second, false)
	leaders := map[string]string{"a": "a1", "b": "b1"}
	if got := f.leastBad([]string{"a", "b"}, leaders); got != "b" {
		t.Fatalf("leastBad = %q, want b (available sooner)", got)
	}
	leaders["a"] = "a9"
	if got := f.leastBad([]string{"b", "a"}, leaders); got != "a" {
		t.Fatalf("leastBad = %q, want a (new leader)", got)
	}
	if got := f.leastBad(nil, leaders); got != "" {
		t.Fatalf("leastBad(nil) = %q", got)
	}
}

func TestPublishInfo(t *testing.T) {
	rd := &protocol.TopicRouteData{
		QueueDatas: []protocol.QueueData{
			{BrokerName: "b", WriteQueueNums: 2, ReadQueueNums: 2, Perm: 6},
			{BrokerName: "a", WriteQueueNums: 3, ReadQueueNums: 3, Perm: 6},
			{BrokerName: "ro", WriteQueueNums: 4, ReadQueueNums: 4, Perm: 4},
			{BrokerName: "c", WriteQueueNums: 8, ReadQueueNums: 8, Perm: 7},
			{BrokerName: "lost", WriteQueueNums: 8, Perm: 6},
		},
		BrokerDatas: []protocol.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "a0", 1: "a1"}},
			{BrokerName: "b", BrokerAddrs: map[int64]string{1: "b1"}},
			{BrokerName: "ro", BrokerAddrs: map[int64]string{0: "r0"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{0: "c0"}},
		},
	}
	info := newPublishInfo("T", rd, false)
	if len(info.all) != 3+2+8 || len(info.queues) != 3+8 || !info.waiting {
		t.Fatalf("all %d queues %d waiting %v", len(info.all), len(info.queues), info.waiting)
	}
	if info.all[0] != (Queue{"T", "a", 0}) || info.all[3] != (Queue{"T", "b", 0}) || info.queues[3] != (Queue{"T", "c", 0}) {
		t.Fatalf("order: %v / %v", info.all, info.queues)
	}
	if info.leaders["a"] != "a0" || info.leaders["c"] != "c0" || len(info.leaders) != 2 {
		t.Fatalf("leaders %v", info.leaders)
	}

	def := newPublishInfo("T", rd, true)
	if len(def.queues) != 3+4 || !def.fromDefault {
		t.Fatalf("TBW102 route: %d queues, want the counts capped at 4", len(def.queues))
	}
	if def.sig == info.sig {
		t.Fatal("signature ignores the difference")
	}

	rd.OrderTopicConf = "c:2;a:1;bad;b:x"
	ord := newPublishInfo("T", rd, false)
	if len(ord.all) != 3 || ord.all[0] != (Queue{"T", "a", 0}) || ord.all[2] != (Queue{"T", "c", 1}) {
		t.Fatalf("orderTopicConf queues %v", ord.all)
	}
	if newPublishInfo("T", rd, false).sig != ord.sig {
		t.Fatal("signature not deterministic")
	}
}

func TestClassifyCode(t *testing.T) {
	for _, tt := range []struct {
		code    int32
		remark  string
		outcome Outcome
		retry   bool
		certain bool // retried until the send times out
	}{
		{remoting.Success, "", OutcomeOK, false, false},
		{remoting.FlushDiskTimeout, "", OutcomeOK, false, false},
		{remoting.FlushSlaveTimeout, "", OutcomeOK, false, false},
		{remoting.SlaveNotAvailable, "", OutcomeOK, false, false},
		{remoting.SystemError, "dledger: outcome unknown", OutcomeUnknown, true, false},
		{remoting.SystemBusy, "[TOO_MANY_REQUESTS]", OutcomeFailed, true, false},
		{remoting.ServiceNotAvailable, "service not available now: dledger: not the leader", OutcomeFailed, true, true},
		{remoting.ServiceNotAvailable, "service not available now: broker: no leader to serve the request: node n1 knows no writable leader", OutcomeFailed, true, true},
		{remoting.ServiceNotAvailable, "service not available now: broker: no leader to serve the request: forwarding to leader 127.0.0.1:5: remoting: request timed out", OutcomeUnknown, true, false},
		{remoting.ServiceNotAvailable, "service not available now: broker: no leader to serve the request: forwarding to leader 127.0.0.1:5: remoting: connect to 127.0.0.1:5: refused", OutcomeFailed, true, true},
		{remoting.ServiceNotAvailable, "service not available now: dledger: node failed: disk", OutcomeUnknown, true, false},
		{remoting.NoPermission, "", OutcomeFailed, true, false},
		{remoting.TopicNotExist, "", OutcomeFailed, true, false},
		{remoting.NotLeaderForQueue, "", OutcomeFailed, true, true},
		{remoting.GoAway, "", OutcomeFailed, true, true},
		{remoting.MessageIllegal, "", OutcomeFailed, false, false},
		{remoting.InvalidParameter, "", OutcomeFailed, false, false},
		{remoting.RequestCodeNotSupported, "", OutcomeFailed, false, false},
		{remoting.TransactionFailed, "", OutcomeUnknown, false, false},
		{999, "", OutcomeUnknown, false, false},
	} {
		c := classifyCode(tt.code, tt.remark)
		if c.outcome != tt.outcome || c.retry != tt.retry || c.certain != tt.certain {
			t.Errorf("code %d %q: %v retry=%v certain=%v, want %v retry=%v certain=%v",
				tt.code, tt.remark, c.outcome, c.retry, c.certain, tt.outcome, tt.retry, tt.certain)
		}
	}
	if c := classifyCode(remoting.FlushSlaveTimeout, ""); c.status != SendFlushSlaveTimeout {
		t.Errorf("status %v", c.status)
	}
}

func TestClassifyTransport(t *testing.T) {
	for _, tt := range []struct {
		err       error
		outcome   Outcome
		retry     bool
		transport bool
		certain   bool
	}{
		{fmt.Errorf("remoting: connect to x: %w", &dialError{"x", errInjected}), OutcomeFailed, true, true, true},
		{fmt.Errorf("%w: 20 MiB", remoting.ErrFrameTooLarge), OutcomeFailed, false, false, false},
		{fmt.Errorf("%w: peer closed", remoting.ErrConnClosed), OutcomeUnknown, true, true, false},
		{fmt.Errorf("%w: %w", remoting.ErrConnClosed, fmt.Errorf("%w: client closed", remoting.ErrClosed)), OutcomeUnknown, true, true, false},
		{remoting.ErrClosed, OutcomeFailed, false, false, false},
		{remoting.ErrTimeout, OutcomeUnknown, true, true, false},
		{errors.New("something else"), OutcomeUnknown, true, true, false},
	} {
		o, r, tr, c := classifyTransport(tt.err)
		if o != tt.outcome || r != tt.retry || tr != tt.transport || c != tt.certain {
			t.Errorf("%v: %v %v %v %v, want %v %v %v %v", tt.err, o, r, tr, c, tt.outcome, tt.retry, tt.transport, tt.certain)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	unknown := &SendError{Topic: "T", Outcome: OutcomeUnknown, Err: remoting.ErrTimeout}
	failed := &SendError{Topic: "T", Outcome: OutcomeFailed, Err: ErrNoRoute}
	for _, tt := range []struct {
		err  error
		want Outcome
	}{
		{nil, OutcomeOK}, {unknown, OutcomeUnknown}, {fmt.Errorf("wrapped: %w", unknown), OutcomeUnknown},
		{failed, OutcomeFailed}, {errors.New("x"), OutcomeFailed},
	} {
		if got := OutcomeOf(tt.err); got != tt.want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if !errors.Is(unknown, ErrUnknownOutcome) || errors.Is(unknown, ErrSendFailed) || !errors.Is(unknown, remoting.ErrTimeout) {
		t.Error("unknown outcome error matches the wrong sentinels")
	}
	if !errors.Is(failed, ErrSendFailed) || !errors.Is(failed, ErrNoRoute) || errors.Is(failed, ErrUnknownOutcome) {
		t.Error("failed outcome error matches the wrong sentinels")
	}
	if !strings.Contains(unknown.Error(), "may have been stored") || !strings.Contains(failed.Error(), "not stored") {
		t.Errorf("messages: %q / %q", unknown, failed)
	}
}

func TestMessageValidation(t *testing.T) {
	p := newProducer(t, WithNameServers("127.0.0.1:1"), WithMaxMessageSize(1024))
	for _, tt := range []struct {
		name string
		m    *Message
	}{
		{"nil", nil},
		{"empty topic", &Message{Body: []byte("x")}},
		{"bad topic", &Message{Topic: "a b", Body: []byte("x")}},
		{"long topic", &Message{Topic: strings.Repeat("t", 128), Body: []byte("x")}},
		{"template topic", &Message{Topic: protocol.DefaultTopic, Body: []byte("x")}},
		{"empty body", &Message{Topic: "T"}},
		{"large body", &Message{Topic: "T", Body: make([]byte, 1025)}},
		{"separator in tag", &Message{Topic: "T", Body: []byte("x"), Tag: "a\x01b"}},
		{"separator in property", &Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{"k": "v\x02"}}},
		{"empty property name", &Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{"": "v"}}},
		{"negative delay", &Message{Topic: "T", Body: []byte("x"), DelayLevel: -1}},
		{"huge properties", &Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{"k": strings.Repeat("v", 40000)}}},
	} {
		_, err := p.Send(ctxGuard(t), tt.m)
		if !errors.Is(err, ErrInvalidMessage) || !errors.Is(err, ErrSendFailed) {
			t.Errorf("%s: %v, want ErrInvalidMessage and ErrSendFailed", tt.name, err)
		}
	}
	for _, tt := range []struct {
		name string
		msgs []*Message
	}{
		{"empty", nil},
		{"mixed topics", []*Message{{Topic: "A", Body: []byte("x")}, {Topic: "B", Body: []byte("x")}}},
		{"delayed", []*Message{{Topic: "A", Body: []byte("x"), DelayLevel: 2}}},
		{"retry topic", []*Message{{Topic: "%RETRY%g", Body: []byte("x")}}},
		{"nil item", []*Message{{Topic: "A", Body: []byte("x")}, nil}},
		{"too large", []*Message{{Topic: "A", Body: make([]byte, 600)}, {Topic: "A", Body: make([]byte, 600)}}},
	} {
		if _, err := p.SendBatch(ctxGuard(t), tt.msgs); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("batch %s: %v, want ErrInvalidMessage", tt.name, err)
		}
	}
}

func TestMessageProperties(t *testing.T) {
	m := &Message{Topic: "T", Body: []byte("x"), Tag: "TagA", Keys: []string{"k1", "k2"}, DelayLevel: 3,
		ShardingKey: "order-1", Properties: map[string]string{"user": "v"}}
	p, err := m.properties("ID1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "v", message.PropertyTags: "TagA", message.PropertyKeys: "k1 k2",
		message.PropertyDelayLevel: "3", message.PropertyShardingKey: "order-1", message.PropertyUniqKey: "ID1"}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("properties %v, want %v", p, want)
	}
	if len(m.Properties) != 1 {
		t.Fatal("properties modified the message")
	}
	m.Properties[message.PropertyUniqKey] = "MINE"
	if p, _ := m.properties("ID2", nil); p[message.PropertyUniqKey] != "MINE" {
		t.Fatal("a UNIQ_KEY the user set was replaced")
	}
}

func TestEncodeBatch(t *testing.T) {
	items := []batchItem{
		{flag: 7, body: []byte("hello"), props: message.EncodeProperties(map[string]string{"TAGS": "a"})},
		{flag: -1, body: []byte{0, 1, 2}, props: nil},
	}
	b := encodeBatch(items)
	if len(b) != batchSize(items) {
		t.Fatalf("%d bytes, batchSize says %d", len(b), batchSize(items))
	}
	be := binary.BigEndian
	off := 0
	for i, it := range items {
		size := int(be.Uint32(b[off:]))
		if size != batchItemOverhead+len(it.body)+len(it.props) {
			t.Fatalf("item %d size %d", i, size)
		}
		if be.Uint32(b[off+4:]) != 0 || be.Uint32(b[off+8:]) != 0 || int32(be.Uint32(b[off+12:])) != it.flag {
			t.Fatalf("item %d magic/crc/flag", i)
		}
		n := int(be.Uint32(b[off+16:]))
		if !bytes.Equal(b[off+20:off+20+n], it.body) {
			t.Fatalf("item %d body", i)
		}
		pn := int(be.Uint16(b[off+20+n:]))
		if !bytes.Equal(b[off+22+n:off+22+n+pn], it.props) {
			t.Fatalf("item %d properties", i)
		}
		off += size
	}
}

func TestCompressRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("ledgermq compresses bodies over 4 KiB "), 500)
	z, err := compress(body, DefaultCompressLevel)
	if err != nil {
		t.Fatal(err)
	}
	if len(z) >= len(body) {
		t.Fatalf("compressed %d bytes to %d", len(body), len(z))
	}
	out, err := inflate(z, len(body))
	if err != nil || !bytes.Equal(out, body) {
		t.Fatalf("inflate: %v", err)
	}
	if _, err := inflate(z, len(body)-1); err == nil {
		t.Fatal("inflate ignored its limit")
	}
	if _, err := inflate([]byte("not zlib"), 100); err == nil {
		t.Fatal("inflate accepted garbage")
	}
}

func TestHashSelector(t *testing.T) {
	qs := []Queue{{"T", "a", 0}, {"T", "a", 1}, {"T", "b", 0}}
	s := HashSelector()
	for _, key := range []string{"", "k1", "order-42"} {
		q := s.Select(&Message{ShardingKey: key}, qs)
		for range 10 {
			if s.Select(&Message{ShardingKey: key}, qs) != q {
				t.Fatalf("key %q moves between queues", key)
			}
		}
	}
	seen := map[Queue]bool{}
	for i := range 100 {
		seen[s.Select(&Message{ShardingKey: fmt.Sprint("k", i)}, qs)] = true
	}
	if len(seen) != len(qs) {
		t.Fatalf("100 keys use %d of %d queues", len(seen), len(qs))
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"no name server", nil},
		{"bad name server", []Option{WithNameServers("localhost")}},
		{"empty group", []Option{WithNameServers("127.0.0.1:1"), WithGroup("")}},
		{"negative retries", []Option{WithNameServers("127.0.0.1:1"), WithRetries(-1)}},
		{"zero timeout", []Option{WithNameServers("127.0.0.1:1"), WithSendTimeout(0)}},
		{"zero refresh", []Option{WithNameServers("127.0.0.1:1"), WithRouteRefreshInterval(0)}},
		{"bad zlib level", []Option{WithNameServers("127.0.0.1:1"), WithCompression(10, 12)}},
		{"zero async", []Option{WithNameServers("127.0.0.1:1"), WithMaxAsyncInFlight(0)}},
	} {
		if p, err := NewProducer(tt.opts...); !errors.Is(err, ErrConfig) {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("%s: %v, want ErrConfig", tt.name, err)
		}
	}
}
