package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The broker's statistics as RocketMQ's BrokerStatsManager keeps them, for
// VIEW_BROKER_STATS_DATA (315: mqadmin statsAll, rocketmq-dashboard,
// rocketmq-exporter). Each statistic, named and keyed as Java names and
// keys it, holds a running sum and a count of increments; it is sampled
// every 10 s (the last minute: 7 samples), every 10 minutes (the last hour:
// 7) and every hour (the last day: 25), and a window answers the sum between
// its first and last sample, that sum per second, and the sum per increment.
// A statistic exists from its first increment; until then (and for names
// this broker does not keep) the answer is SYSTEM_ERROR "The stats <name>
// <key> not exist", as Java's. The counts are this node's: like the
// Prometheus metrics they start at zero when the node starts.
//
//	name             key           one increment
//	---------------  ------------  --------------------------------------------
//	TOPIC_PUT_NUMS   topic         a send: its messages
//	TOPIC_PUT_SIZE   topic         a send: its bodies' bytes
//	GROUP_GET_NUMS   topic@group   a pull or POP receive: its messages
//	GROUP_GET_SIZE   topic@group   the same: its bodies' bytes
//	SNDBCK_PUT_NUMS  topic@group   a consumer's send-back: 1
//	BROKER_PUT_NUMS  cluster name  messages stored (no increment count)
//	BROKER_GET_NUMS  cluster name  messages pulled (no increment count)
const (
	statsTopicPutNums  = "TOPIC_PUT_NUMS"
	statsTopicPutSize  = "TOPIC_PUT_SIZE"
	statsGroupGetNums  = "GROUP_GET_NUMS"
	statsGroupGetSize  = "GROUP_GET_SIZE"
	statsSendBackNums  = "SNDBCK_PUT_NUMS"
	statsBrokerPutNums = "BROKER_PUT_NUMS"
	statsBrokerGetNums = "BROKER_GET_NUMS"

	// statsSampleEvery is the minute window's sampling period; the hour
	// window samples every statsHourEvery of them, the day window every
	// statsDayEvery.
	statsSampleEvery = 10 * time.Second
	statsHourEvery   = 60
	statsDayEvery    = 360
	// maxStatsItems bounds the statistics kept: keys past it (a flood of
	// topics or groups) are not counted.
	maxStatsItems = 100_000
)

// statsID names one statistic.
type statsID struct{ name, key string }

// statsSample is one sample of a statistic: when, its increment count and
// its sum.
type statsSample struct {
	at           int64 // ms
	times, value int64
}

// statsItem is one statistic.
type statsItem struct {
	value, times atomic.Int64

	mu                sync.Mutex
	minute, hour, day []statsSample
}

// statsBook is the broker's statistics. add is safe for concurrent use
// and takes no lock once a statistic exists; the sampler (a part with its
// own Start and Stop) samples every statistic every statsSampleEvery.
type statsBook struct {
	lifecycle
	clock func() time.Time
	items sync.Map // statsID → *statsItem
	count atomic.Int64
	ticks int64 // sampler rounds, for the hour and day windows; the sampler's
	// puts holds each topic's TOPIC_PUT_NUMS and TOPIC_PUT_SIZE
	// (topic → *[2]*statsItem) once both exist, and brokerPut the last
	// cluster's BROKER_PUT_NUMS: a send finds its three statistics with
	// one lookup by topic instead of three by name and key. Both hold
	// only items the book holds (none is ever removed).
	puts      sync.Map
	brokerPut atomic.Pointer[clusterItem]
}

// clusterItem is a cluster's BROKER_PUT_NUMS.
type clusterItem struct {
	cluster string
	item    *statsItem
}

func newStatsBook(clock func() time.Time) *statsBook {
	return &statsBook{clock: clock}
}

// add adds value (and times increments) to the statistic name/key,
// creating it — sampled at once, as Java's — on its first add.
func (s *statsBook) add(name, key string, value, times int64) {
	if it := s.item(name, key); it != nil {
		it.value.Add(value)
		it.times.Add(times)
	}
}

// item is the statistic name/key, created — sampled at once, as Java's —
// when it does not exist yet; nil when it does not and the book is full.
func (s *statsBook) item(name, key string) *statsItem {
	id := statsID{name, key}
	v, ok := s.items.Load(id)
	if !ok {
		if s.count.Load() >= maxStatsItems {
			return nil
		}
		it := &statsItem{}
		it.sample(s.clock().UnixMilli(), true, true, true)
		if v, ok = s.items.LoadOrStore(id, it); !ok {
			s.count.Add(1)
		}
	}
	return v.(*statsItem)
}

// Start runs the sampler.
func (s *statsBook) Start() {
	s.run(func(ctx context.Context) { tickEvery(ctx, statsSampleEvery, s.tick) })
}

// Stop ends the sampler.
func (s *statsBook) Stop() { s.halt() }

// tick samples every statistic's minute window, and its hour and day
// windows when their period has come round.
func (s *statsBook) tick() {
	s.ticks++
	now := s.clock().UnixMilli()
	hour, day := s.ticks%statsHourEvery == 0, s.ticks%statsDayEvery == 0
	s.items.Range(func(_, v any) bool {
		v.(*statsItem).sample(now, true, hour, day)
		return true
	})
}

// sample appends the current sum to the windows named; a window's first
// sample is preceded by a zero one a period earlier, as Java's.
func (it *statsItem) sample(now int64, minute, hour, day bool) {
	cur := statsSample{at: now, times: it.times.Load(), value: it.value.Load()}
	it.mu.Lock()
	defer it.mu.Unlock()
	if minute {
		it.minute = appendSample(it.minute, cur, statsSampleEvery, 7)
	}
	if hour {
		it.hour = appendSample(it.hour, cur, statsSampleEvery*statsHourEvery, 7)
	}
	if day {
		it.day = appendSample(it.day, cur, statsSampleEvery*statsDayEvery, 25)
	}
}

func appendSample(list []statsSample, cur statsSample, period time.Duration, keep int) []statsSample {
	if len(list) == 0 {
		list = append(list, statsSample{at: cur.at - period.Milliseconds()})
	}
	list = append(list, cur)
	if len(list) > keep {
		list = append(list[:0], list[len(list)-keep:]...)
	}
	return list
}

// window is what one window answers: the sum between its first and last
// sample, per second, and per increment.
func window(list []statsSample) protocol.BrokerStatsItem {
	var w protocol.BrokerStatsItem
	if len(list) == 0 {
		return w
	}
	first, last := list[0], list[len(list)-1]
	w.Sum = last.value - first.value
	if ms := last.at - first.at; ms > 0 {
		w.Tps = float64(w.Sum) * 1000 / float64(ms)
	}
	if n := last.times - first.times; n > 0 {
		w.Avgpt = float64(w.Sum) / float64(n)
	}
	return w
}

// data is the statistic's three windows, or false when it does not exist.
func (s *statsBook) data(name, key string) (protocol.BrokerStatsData, bool) {
	v, ok := s.items.Load(statsID{name, key})
	if !ok {
		return protocol.BrokerStatsData{}, false
	}
	it := v.(*statsItem)
	it.mu.Lock()
	defer it.mu.Unlock()
	return protocol.BrokerStatsData{StatsMinute: window(it.minute), StatsHour: window(it.hour), StatsDay: window(it.day)}, true
}

// stored counts a send of msgs messages with bytes of bodies to topic.
func (s *statsBook) stored(cluster, topic string, msgs, bytes int) {
	if v, ok := s.puts.Load(topic); ok {
		its := v.(*[2]*statsItem)
		its[0].value.Add(int64(msgs))
		its[0].times.Add(1)
		its[1].value.Add(int64(bytes))
		its[1].times.Add(1)
	} else {
		nums, size := s.item(statsTopicPutNums, topic), s.item(statsTopicPutSize, topic)
		for _, a := range [...]struct {
			it *statsItem
			v  int64
		}{{nums, int64(msgs)}, {size, int64(bytes)}} {
			if a.it != nil {
				a.it.value.Add(a.v)
				a.it.times.Add(1)
			}
		}
		if nums != nil && size != nil {
			s.puts.Store(topic, &[2]*statsItem{nums, size})
		}
	}
	if c := s.brokerPut.Load(); c != nil && c.cluster == cluster {
		c.item.value.Add(int64(msgs))
		return
	}
	if it := s.item(statsBrokerPutNums, cluster); it != nil {
		it.value.Add(int64(msgs))
		s.brokerPut.Store(&clusterItem{cluster: cluster, item: it})
	}
}

// served counts msgs messages with bytes of bodies handed to group from
// topic by one pull or receive.
func (s *statsBook) served(cluster, topic, group string, msgs, bytes int) {
	if msgs <= 0 {
		return
	}
	key := topic + "@" + group
	s.add(statsGroupGetNums, key, int64(msgs), 1)
	s.add(statsGroupGetSize, key, int64(bytes), 1)
	s.add(statsBrokerGetNums, cluster, int64(msgs), 0)
}

// viewBrokerStatsData answers VIEW_BROKER_STATS_DATA (315).
func (b *Broker) viewBrokerStatsData(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ViewBrokerStatsDataRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	d, ok := b.stats.data(h.StatsName, h.StatsKey)
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", h.StatsName, h.StatsKey))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = d.Encode()
	return resp
}
