package console

// The live chart's data: every interval the sampler lists the nodes
// (ClusterList), scrapes each one's /metrics and keeps the last
// maxSamples points of the cluster's send rate (messages stored per
// second, from the leaders' rocketmq_messages_in_total), its consume rate
// (messages served to pulls and POP receives per second, every node's
// rocketmq_messages_out_total) and each node's raft apply lag
// (ledgermq_raft_apply_lag_entries).

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/client"
)

const (
	metricMessagesIn  = "rocketmq_messages_in_total"
	metricMessagesOut = "rocketmq_messages_out_total"
	metricApplyLag    = "ledgermq_raft_apply_lag_entries"
	maxSamples        = 90
)

// Series is one line of a chart.
type Series struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	// Missing marks the points (same index as Values) where the node did
	// not answer; Values holds 0 there and the chart leaves a gap.
	Missing []bool `json:"missing,omitempty"`
}

// Samples is what /api/metrics answers: the times (ms since the epoch)
// and, for each, the send and consume rates and every node's apply lag.
type Samples struct {
	Times       []int64  `json:"times"`
	SendRate    Series   `json:"sendRate"`
	ConsumeRate Series   `json:"consumeRate"`
	ApplyLag    []Series `json:"applyLag"`
	Error       string   `json:"error,omitempty"` // the last sample's error, if any
}

type sampler struct {
	admin Admin
	nodes *nodes
	every time.Duration
	// observe, when set, is given every ClusterList the sampler reads.
	observe func(time.Time, []client.MemberStatus)

	mu      sync.Mutex
	times   []int64
	rate    []float64            // messages stored per second
	orate   []float64            // messages consumed per second
	lag     map[string][]float64 // node label → values, aligned on times
	lagMiss map[string][]bool
	prev    map[string]float64 // node label → last messages-in counter
	prevOut map[string]float64 // node label → last messages-out counter
	prevAt  time.Time
	lastErr string
}

func newSampler(a Admin, n *nodes, every time.Duration) *sampler {
	return &sampler{admin: a, nodes: n, every: every, lag: map[string][]float64{}, lagMiss: map[string][]bool{},
		prev: map[string]float64{}, prevOut: map[string]float64{}}
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample takes one point.
func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.every, time.Second))
	defer cancel()
	now := time.Now()
	members, err := s.admin.ClusterList(ctx)
	if err != nil {
		s.record(now, nil, nil, nil, err.Error())
		return
	}
	if s.observe != nil {
		s.observe(now, members)
	}
	type answer struct {
		label string
		m     map[string]float64
		err   error
	}
	answers := make([]answer, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		answers[i].label = m.BrokerName + "/" + m.ID
		if m.ID == "" {
			answers[i].label = m.BrokerName + "/" + m.ClientAddr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].m, answers[i].err = s.nodes.metrics(ctx, m.ClientAddr, metricMessagesIn, metricMessagesOut, metricApplyLag)
		}()
	}
	wg.Wait()
	in, out, lag := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, a := range answers {
		if a.err != nil {
			continue
		}
		in[a.label] = a.m[metricMessagesIn]
		out[a.label] = a.m[metricMessagesOut]
		lag[a.label] = a.m[metricApplyLag]
	}
	s.record(now, in, out, lag, "")
}

// record appends one point: in and out hold each answering node's
// messages-in and messages-out counters, lag its apply lag.
func (s *sampler) record(now time.Time, in, out, lag map[string]float64, errText string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = errText
	dt := 0.0
	if !s.prevAt.IsZero() {
		dt = now.Sub(s.prevAt).Seconds()
	}
	rate, orate := perSecond(s.prev, in, dt), perSecond(s.prevOut, out, dt)
	if in != nil {
		s.prev, s.prevOut, s.prevAt = in, out, now
	}
	s.times = append(s.times, now.UnixMilli())
	s.rate = append(s.rate, rate)
	s.orate = append(s.orate, orate)
	n := len(s.times)
	for label := range lag {
		if _, ok := s.lag[label]; !ok {
			s.lag[label] = make([]float64, n-1)
			s.lagMiss[label] = make([]bool, n-1)
			for i := range s.lagMiss[label] {
				s.lagMiss[label][i] = true
			}
		}
	}
	for label := range s.lag {
		v, ok := lag[label]
		s.lag[label] = append(s.lag[label], v)
		s.lagMiss[label] = append(s.lagMiss[label], !ok)
	}
	if n > maxSamples {
		cut := n - maxSamples
		s.times, s.rate, s.orate = s.times[cut:], s.rate[cut:], s.orate[cut:]
		for label := range s.lag {
			s.lag[label], s.lagMiss[label] = s.lag[label][cut:], s.lagMiss[label][cut:]
		}
	}
}

// perSecond is how much the counters grew since prev, per second over dt
// (0 for the first sample; a counter that went back, a restarted node,
// counts nothing).
func perSecond(prev, cur map[string]float64, dt float64) float64 {
	if dt <= 0 {
		return 0
	}
	var delta float64
	for label, v := range cur {
		if p, ok := prev[label]; ok && v >= p {
			delta += v - p
		}
	}
	return delta / dt
}

// snapshot copies the points.
func (s *sampler) snapshot() Samples {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Samples{Times: append([]int64{}, s.times...), SendRate: Series{Name: "messages stored / s", Values: append([]float64{}, s.rate...)},
		ConsumeRate: Series{Name: "messages consumed / s", Values: append([]float64{}, s.orate...)},
		ApplyLag:    []Series{}, Error: s.lastErr}
	labels := make([]string, 0, len(s.lag))
	for l := range s.lag {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		out.ApplyLag = append(out.ApplyLag, Series{Name: l, Values: append([]float64{}, s.lag[l]...), Missing: append([]bool{}, s.lagMiss[l]...)})
	}
	return out
}
