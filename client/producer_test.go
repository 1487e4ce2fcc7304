package client

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestSendKindsReadBack: sync, async, one-way and batch sends to a real
// 3-node group, on a topic the first send auto-creates; every message is
// read back (pull, and VIEW_MESSAGE_BY_ID for the offset ids) with its
// body, tag, keys and UNIQ_KEY.
func TestSendKindsReadBack(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithGroup("kinds-pg"))
	ctx := ctxGuard(t)
	const topic = "KindsTopic"

	want := map[string]string{} // UNIQ_KEY → body
	var sync []SendResult
	for i := range 10 {
		m := &Message{Topic: topic, Body: []byte(fmt.Sprint("sync-", i)), Tag: "TagA", Keys: []string{fmt.Sprint("key-", i)}}
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != SendOK || res.OffsetMsgID == "" || res.MsgID == "" || res.Queue.Topic != topic || res.Attempts != 1 {
			t.Fatalf("send %d: %+v", i, res)
		}
		want[res.MsgID] = string(m.Body)
		sync = append(sync, res)
	}

	type asyncOut struct {
		res SendResult
		err error
	}
	results := make(chan asyncOut, 10)
	for i := range 10 {
		m := &Message{Topic: topic, Body: []byte(fmt.Sprint("async-", i))}
		if err := p.SendAsync(ctx, m, func(r SendResult, err error) { results <- asyncOut{r, err} }); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		o := <-results
		if o.err != nil {
			t.Fatalf("async send: %v", o.err)
		}
		want[o.res.MsgID] = "" // body checked below by prefix
	}

	for i := range 5 {
		if err := p.SendOneWay(ctx, &Message{Topic: topic, Body: []byte(fmt.Sprint("oneway-", i)), Tag: "TagO"}); err != nil {
			t.Fatalf("one-way %d: %v", i, err)
		}
	}

	var batch []*Message
	for i := range 5 {
		batch = append(batch, &Message{Topic: topic, Body: []byte(fmt.Sprint("batch-", i)), Tag: "TagB",
			Properties: map[string]string{"n": strconv.Itoa(i)}})
	}
	bres, err := p.SendBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(bres.MsgIDs) != 5 || len(bres.OffsetMsgIDs) != 5 || bres.MsgID != bres.MsgIDs[0] {
		t.Fatalf("batch result %+v", bres)
	}
	for i, id := range bres.MsgIDs {
		want[id] = string(batch[i].Body)
	}

	waitLeaderRoute(t, tc, topic)
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]*message.Ext
	waitFor(t, "all 30 messages readable", func() bool {
		got = byUniqKey(readTopic(t, tc, rc, leader, topic))
		return len(got) == 30
	})
	oneway := 0
	for id, ms := range got {
		if len(ms) != 1 {
			t.Fatalf("%s stored %d times", id, len(ms))
		}
		m := ms[0]
		body := string(m.Body)
		switch {
		case strings.HasPrefix(body, "oneway-"):
			oneway++
			if m.Tags() != "TagO" {
				t.Fatalf("one-way tag %q", m.Tags())
			}
			continue
		case strings.HasPrefix(body, "async-"):
		case want[id] != body:
			t.Fatalf("%s: body %q, want %q", id, body, want[id])
		}
		if _, ok := want[id]; !ok {
			t.Fatalf("unexpected message %s %q", id, body)
		}
		if strings.HasPrefix(body, "batch-") && (m.Tags() != "TagB" || m.Property("n") != strings.TrimPrefix(body, "batch-")) {
			t.Fatalf("batch item %q: properties %v", body, m.Properties)
		}
	}
	if oneway != 5 {
		t.Fatalf("%d one-way messages stored, want 5", oneway)
	}
	// The offset ids point at the records: view them by id.
	for _, res := range append(sync[:3], bres) {
		m := viewByID(t, rc, leader, res.OffsetMsgID)
		if m.UniqKey() != res.MsgID || m.QueueID != res.Queue.QueueID || m.QueueOffset != res.QueueOffset {
			t.Fatalf("view %s: %s q%d@%d, result %+v", res.OffsetMsgID, m.UniqKey(), m.QueueID, m.QueueOffset, res)
		}
		if sync[0].MsgID == res.MsgID && (m.Tags() != "TagA" || m.Property(message.PropertyKeys) != "key-0") {
			t.Fatalf("view: tag %q keys %q", m.Tags(), m.Property(message.PropertyKeys))
		}
	}
}

// viewByID reads one record with VIEW_MESSAGE_BY_ID (33). Any replica
// answers it, so addr need not be the host in the id.
func viewByID(t testing.TB, rc *remoting.Client, addr, offsetMsgID string) *message.Ext {
	t.Helper()
	_, off, err := message.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Invoke(ctxGuard(t), addr, remoting.NewRequest(remoting.ViewMessageByID,
		map[string]string{"offset": strconv.FormatInt(off, 10)}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("view %s: %v %v", offsetMsgID, err, resp)
	}
	m, _, err := message.DecodeRecord(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompressionRoundTrip: a body of 4 KiB or more is stored
// zlib-compressed with sysFlag bit 1 and inflates to what was sent; a
// smaller one, or any with compression off, is stored as is.
func TestCompressionRoundTrip(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	ctx := ctxGuard(t)
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("a compressible body of a RocketMQ message. "), 1500) // ~64 KiB
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()))
	off := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithCompression(0, 0))
	for _, tt := range []struct {
		name       string
		p          *Producer
		body       []byte
		compressed bool
	}{
		{"large", p, big, true},
		{"exactly 4 KiB", p, big[:DefaultCompressThreshold], true},
		{"just under", p, big[:DefaultCompressThreshold-1], false},
		{"compression off", off, big, false},
	} {
		res, err := tt.p.Send(ctx, &Message{Topic: "ZipTopic", Body: tt.body})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		m := viewByID(t, rc, leader, res.OffsetMsgID)
		if got := m.SysFlag&message.SysFlagCompressed != 0; got != tt.compressed {
			t.Fatalf("%s: stored compressed=%v, want %v", tt.name, got, tt.compressed)
		}
		body := m.Body
		if tt.compressed {
			if len(body) >= len(tt.body) {
				t.Fatalf("%s: stored %d bytes for %d", tt.name, len(body), len(tt.body))
			}
			if body, err = inflate(body, DefaultMaxMessageSize); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
		}
		if !bytes.Equal(body, tt.body) {
			t.Fatalf("%s: body does not round-trip", tt.name)
		}
	}
}

// TestOrderedByKey: messages with one ShardingKey all go to one queue,
// with increasing queue offsets, and a consumer reads them in send order,
// while several keys are sent concurrently.
func TestOrderedByKey(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "OrderTopic"
	createTopic(t, tc, rc, topic, 8)
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()))
	ctx := ctxGuard(t)

	const keys, perKey = 6, 25
	queueOf := make([]int32, keys)
	var wg sync.WaitGroup
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("order-", k)
			last := int64(-1)
			for i := range perKey {
				res, err := p.Send(ctx, &Message{Topic: topic, ShardingKey: key, Body: []byte(fmt.Sprintf("%s/%03d", key, i))})
				if err != nil {
					t.Errorf("%s #%d: %v", key, i, err)
					return
				}
				if i == 0 {
					queueOf[k] = res.Queue.QueueID
				} else if res.Queue.QueueID != queueOf[k] {
					t.Errorf("%s #%d went to queue %d, earlier ones to %d", key, i, res.Queue.QueueID, queueOf[k])
					return
				}
				if res.QueueOffset <= last {
					t.Errorf("%s #%d: queue offset %d after %d", key, i, res.QueueOffset, last)
				}
				last = res.QueueOffset
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queues := readTopic(t, tc, rc, leader, topic)
	used := map[int32]bool{}
	for k := range keys {
		key := fmt.Sprint("order-", k)
		used[queueOf[k]] = true
		var seen []string
		for _, m := range queues[queueOf[k]] {
			if m.Property(message.PropertyShardingKey) == key {
				seen = append(seen, string(m.Body))
			}
		}
		if len(seen) != perKey {
			t.Fatalf("%s: %d messages in queue %d, want %d", key, len(seen), queueOf[k], perKey)
		}
		for i, b := range seen {
			if want := fmt.Sprintf("%s/%03d", key, i); b != want {
				t.Fatalf("%s: message %d is %q, want %q", key, i, b, want)
			}
		}
	}
	t.Logf("%d keys over %d of 8 queues", keys, len(used))
}
