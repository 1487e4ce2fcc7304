package broker

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// The windows answer what Java's StatsItem computes from the same samples:
// the sum between the first and last sample, per second, per increment.
func TestStatsBookWindows(t *testing.T) {
	clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	s := newStatsBook(clk.Now)
	if _, ok := s.data(statsTopicPutNums, "T"); ok {
		t.Fatal("a statistic exists before its first increment")
	}
	// The first add creates and samples it (zero) at once.
	s.stored("C", "T", 3, 3000)
	d, ok := s.data(statsTopicPutNums, "T")
	if !ok || d.StatsMinute != (protocol.BrokerStatsItem{}) {
		t.Fatalf("after the first add: %+v %v, want zero windows", d, ok)
	}
	for i := 0; i < 9; i++ { // 9 more sends of 3 messages, 1 KiB each
		s.stored("C", "T", 3, 3072)
	}
	clk.now = clk.now.Add(statsSampleEvery)
	s.tick()
	d, _ = s.data(statsTopicPutNums, "T")
	// Samples: (t-10s, 0, 0), (t, 0, 0), (t+10s, 10 sends, 30 messages).
	if want := (protocol.BrokerStatsItem{Sum: 30, Tps: 1.5, Avgpt: 3}); d.StatsMinute != want {
		t.Fatalf("minute after one tick: %+v, want %+v", d.StatsMinute, want)
	}
	size, _ := s.data(statsTopicPutSize, "T")
	if size.StatsMinute.Sum != 3000+9*3072 || size.StatsMinute.Avgpt != float64(3000+9*3072)/10 {
		t.Fatalf("size: %+v", size.StatsMinute)
	}
	// BROKER_PUT_NUMS counts messages, not increments: no average.
	if b, ok := s.data(statsBrokerPutNums, "C"); !ok || b.StatsMinute.Sum != 30 || b.StatsMinute.Avgpt != 0 {
		t.Fatalf("broker put nums: %+v %v", b, ok)
	}
	// The minute window keeps 7 samples: after 8 quiet ticks the sends
	// have left it, while the hour window (sampled every 60 ticks) and
	// the day window (every 360) still have them an hour later.
	for i := 0; i < statsDayEvery-1; i++ {
		clk.now = clk.now.Add(statsSampleEvery)
		s.tick()
	}
	d, _ = s.data(statsTopicPutNums, "T")
	if d.StatsMinute.Sum != 0 || d.StatsMinute.Tps != 0 {
		t.Fatalf("minute window after an hour: %+v", d.StatsMinute)
	}
	if d.StatsHour.Sum != 30 || d.StatsDay.Sum != 30 {
		t.Fatalf("hour %+v, day %+v: want the 30 messages", d.StatsHour, d.StatsDay)
	}

	// Pulls and POP receives count per topic@group; empty ones do not.
	s.served("C", "T", "G", 0, 0)
	if _, ok := s.data(statsGroupGetNums, "T@G"); ok {
		t.Fatal("an empty pull created GROUP_GET_NUMS")
	}
	s.served("C", "T", "G", 5, 500)
	if _, ok := s.data(statsGroupGetSize, "T@G"); !ok {
		t.Fatal("GROUP_GET_SIZE T@G not kept")
	}
	if _, ok := s.data(statsBrokerGetNums, "C"); !ok {
		t.Fatal("BROKER_GET_NUMS C not kept")
	}
}

// Past maxStatsItems new keys are not counted: memory stays bounded.
func TestStatsBookBounded(t *testing.T) {
	s := newStatsBook(time.Now)
	s.count.Store(maxStatsItems)
	s.add(statsTopicPutNums, "one-too-many", 1, 1)
	if _, ok := s.data(statsTopicPutNums, "one-too-many"); ok {
		t.Fatal("a key past the bound was kept")
	}
}

// The handler answers the three windows, or Java's SYSTEM_ERROR for a
// statistic that does not exist.
func TestViewBrokerStatsData(t *testing.T) {
	b := &Broker{stats: newStatsBook(time.Now)}
	b.stats.stored("C", "T", 2, 20)
	ask := func(name, key string) *remoting.Command {
		h := protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}
		return b.viewBrokerStatsData(context.Background(), nil, h.Request())
	}
	resp := ask(statsTopicPutNums, "T")
	if resp.Code != remoting.Success {
		t.Fatalf("TOPIC_PUT_NUMS T: %d %q", resp.Code, resp.Remark)
	}
	if _, err := protocol.DecodeBrokerStatsData(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp = ask(statsTopicPutNums, "other")
	if resp.Code != remoting.SystemError || resp.Remark != "The stats <TOPIC_PUT_NUMS> <other> not exist" {
		t.Fatalf("unknown key: %d %q", resp.Code, resp.Remark)
	}
	resp = b.viewBrokerStatsData(context.Background(), nil, remoting.NewRequest(remoting.ViewBrokerStatsData, map[string]string{"statsName": "X"}, nil))
	if resp.Code == remoting.Success {
		t.Fatal("a request without statsKey was answered")
	}
}
