package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestBrokerMetricsStoredPerTopic: sends counted through the cached
// per-topic children land on the topic's series, each topic on its own.
func TestBrokerMetricsStoredPerTopic(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newBrokerMetrics(reg, prometheus.Labels{"node": "n0"})
	m.Stored("A", 1, 100, 0)
	m.Stored("A", 3, 300, 0)
	m.Stored("B", 2, 50, 0)
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
		"rocketmq_messages_in_total/A": 4, "rocketmq_throughput_in_total/A": 400,
		"rocketmq_messages_in_total/B": 2, "rocketmq_throughput_in_total/B": 50,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
