package main

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkBrokerMetricsStored is the metrics of one stored single-message
// send of 1 KiB.
func BenchmarkBrokerMetricsStored(b *testing.B) {
	m := newBrokerMetrics(prometheus.NewRegistry(), prometheus.Labels{"node": "n0"})
	b.ReportAllocs()
	for b.Loop() {
		m.Stored("BenchTopic", 1, 1024, 3*time.Millisecond)
	}
}
