package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestBrokerMetricsStoredPerTopic: sends counted through the cached
// per-topic children (the last topic's, then the map's) land on the
// topic's series, each topic on its own, also when topics alternate.
func TestBrokerMetricsStoredPerTopic(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newBrokerMetrics(reg, prometheus.Labels{"node": "n0"})
	m.Stored("A", 1, 100, 0)
	m.Stored("B", 2, 50, 0)
	m.Stored("A", 3, 300, 0)
	m.Stored("A", 1, 10, 0)
	m.Stored("B", 1, 10, 0)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "topic" && mt.GetCounter() != nil {
					got[f.GetName()+"/"+l.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{
		"rocketmq_messages_in_total/A": 5, "rocketmq_throughput_in_total/A": 410,
		"rocketmq_messages_in_total/B": 3, "rocketmq_throughput_in_total/B": 60,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
