package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// newPullConsumer returns a pull consumer closed by the test's cleanup.
func newPullConsumer(t testing.TB, opts ...Option) *PullConsumer {
	t.Helper()
	c, err := NewPullConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// sendN sends n messages "prefix-i" to topic and returns their results by
// body.
func sendN(t testing.TB, p *Producer, topic, prefix string, n int, tag func(int) string) map[string]SendResult {
	t.Helper()
	out := map[string]SendResult{}
	for i := range n {
		m := &Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if tag != nil {
			m.Tag = tag(i)
		}
		res, err := p.Send(ctxGuard(t), m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		out[string(m.Body)] = res
	}
	return out
}

// pollAll polls c until every body of want was returned, and returns
// what was returned by body (counting copies).
func pollAll(t testing.TB, c *PullConsumer, want map[string]SendResult) map[string][]*MessageExt {
	t.Helper()
	got := map[string][]*MessageExt{}
	ctx := ctxGuard(t)
	waitFor(t, fmt.Sprintf("%d messages polled", len(want)), func() bool {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		msgs, _ := c.Poll(pctx)
		cancel()
		for _, m := range msgs {
			got[string(m.Body)] = append(got[string(m.Body)], m)
		}
		for b := range want {
			if len(got[b]) == 0 {
				return false
			}
		}
		return true
	})
	return got
}

func TestPullConsumerPollCommitResume(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "PullTopic"
	createTopic(t, tc, rc, topic, 4)
	ns := WithNameServers(tc.NamesrvAddr())
	p := newProducer(t, ns)
	sent := sendN(t, p, topic, "a", 20, nil)
	big := bytes.Repeat([]byte("z"), 3*DefaultCompressThreshold)
	if _, err := p.Send(ctxGuard(t), &Message{Topic: topic, Body: big}); err != nil {
		t.Fatal(err)
	}
	sent[string(big)] = SendResult{}

	c := newPullConsumer(t, ns, WithGroup("pull-g"), WithLongPollTimeout(2*time.Second))
	qs, err := c.Queues(ctxGuard(t), topic)
	if err != nil || len(qs) != 4 {
		t.Fatalf("queues %v, %v", qs, err)
	}
	c.Assign(qs)
	got := pollAll(t, c, sent)
	for b, ms := range got {
		if len(ms) != 1 {
			t.Fatalf("%.20s polled %d times", b, len(ms))
		}
		m := ms[0]
		if r, ok := sent[b]; ok && r.MsgID != "" && (m.MsgID != r.MsgID || m.QueueOffset != r.QueueOffset || m.Queue != r.Queue) {
			t.Fatalf("%s: got %s %v@%d, sent %s %v@%d", b, m.MsgID, m.Queue, m.QueueOffset, r.MsgID, r.Queue, r.QueueOffset)
		}
	}
	if err := c.Commit(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
	maxOf := map[Queue]int64{}
	for _, ms := range got {
		maxOf[ms[0].Queue] = max(maxOf[ms[0].Queue], ms[0].QueueOffset+1)
	}
	for q, want := range maxOf {
		off, err := c.Committed(ctxGuard(t), q)
		if err != nil || off != want {
			t.Fatalf("committed %v = %d, %v; want %d", q, off, err, want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Poll(ctxGuard(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}

	// A new member of the group resumes after the committed offsets.
	more := sendN(t, p, topic, "b", 8, nil)
	c2 := newPullConsumer(t, ns, WithGroup("pull-g"), WithLongPollTimeout(2*time.Second))
	c2.Assign(qs)
	got2 := pollAll(t, c2, more)
	for b := range got2 {
		if !strings.HasPrefix(b, "b-") {
			t.Fatalf("resumed consumer got %.20s again", b)
		}
	}
}

func TestPullConsumerSeek(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "SeekTopic"
	createTopic(t, tc, rc, topic, 1)
	ns := WithNameServers(tc.NamesrvAddr())
	p := newProducer(t, ns)
	first := sendN(t, p, topic, "old", 5, nil)
	c := newPullConsumer(t, ns, WithGroup("seek-g"), WithLongPollTimeout(time.Second))
	qs, err := c.Queues(ctxGuard(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	q := qs[0]
	c.Assign(qs)
	pollAll(t, c, first)

	// Back to offset 2: the last three again.
	if err := c.Seek(q, 2); err != nil {
		t.Fatal(err)
	}
	want := map[string]SendResult{}
	for b, r := range first {
		if r.QueueOffset >= 2 {
			want[b] = r
		}
	}
	for b, ms := range pollAll(t, c, want) {
		if first[b].QueueOffset < 2 {
			t.Fatalf("after seek to 2 got offset %d", ms[0].QueueOffset)
		}
	}

	// To a time after the first batch: only what is sent later.
	// Every first-batch message was stored before mark; the second batch
	// is sent once the clock has passed it (store times are in ms).
	mark := time.Now().Add(time.Millisecond)
	waitFor(t, "the clock to pass the mark", func() bool { return time.Now().After(mark) })
	second := sendN(t, p, topic, "new", 3, nil)
	off, err := c.SeekToTime(ctxGuard(t), q, mark)
	if err != nil {
		t.Fatal(err)
	}
	if off != 5 {
		t.Fatalf("seek to time: offset %d, want 5", off)
	}
	for b := range pollAll(t, c, second) {
		if !strings.HasPrefix(b, "new-") {
			t.Fatalf("after seek to time got %s", b)
		}
	}

	// Past the end: PULL_OFFSET_MOVED brings the consumer back to the end.
	if err := c.Seek(q, 1000); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctxGuard(t), 300*time.Millisecond)
	msgs, _ := c.Poll(pctx)
	cancel()
	if len(msgs) != 0 {
		t.Fatalf("past the end: %d messages", len(msgs))
	}
	third := sendN(t, p, topic, "late", 1, nil)
	pollAll(t, c, third)
	if err := c.Commit(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
	if off, err := c.Committed(ctxGuard(t), q); err != nil || off != 9 {
		t.Fatalf("committed %d, %v; want 9", off, err)
	}
	if err := c.Seek(Queue{Topic: "x", BrokerName: "y"}, 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("seek on an unassigned queue: %v", err)
	}
}
