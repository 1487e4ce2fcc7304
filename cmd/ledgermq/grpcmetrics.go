package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// grpcMetrics count the RocketMQ 5 gRPC calls a process answers, a broker
// node's gRPC port or the proxy (the grpcapi.CallObserver of either), under
// the same names:
//
//	ledgermq_grpc_calls_total{method,grpc_code,code}    counter    calls answered (code: the answer's
//	                                                               RocketMQ status, "" if none)
//	ledgermq_grpc_call_seconds{method}                  histogram  a call's duration (a stream's, to its end)
//
// Every series carries the process's constant labels (a node's cluster,
// group and node; the proxy's proxy).
type grpcMetrics struct {
	grpcCalls *prometheus.CounterVec
	grpcLat   *prometheus.HistogramVec
}

// newGRPCMetrics registers the series with reg.
func newGRPCMetrics(reg prometheus.Registerer, labels prometheus.Labels) *grpcMetrics {
	m := &grpcMetrics{
		grpcCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledgermq_grpc_calls_total",
			Help:        "RocketMQ 5 gRPC calls answered by this process, by method, gRPC status code and the answer's RocketMQ status code.",
			ConstLabels: labels}, []string{"method", "grpc_code", "code"}),
		grpcLat: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ledgermq_grpc_call_seconds",
			Help: "Duration of a RocketMQ 5 gRPC call (a stream's, until it ends).", ConstLabels: labels, Buckets: latencyBuckets}, []string{"method"}),
	}
	reg.MustRegister(m.grpcCalls, m.grpcLat)
	return m
}

// Call implements grpcapi.CallObserver.
func (m *grpcMetrics) Call(method, grpcCode, code string, took time.Duration) {
	m.grpcCalls.WithLabelValues(method, grpcCode, code).Inc()
	m.grpcLat.WithLabelValues(method).Observe(took.Seconds())
}
