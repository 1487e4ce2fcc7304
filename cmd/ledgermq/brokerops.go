package main

import (
	"net/http"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/ops"
)

// nodeStatus is the ops Status of a running broker node; stopping says
// whether it is shutting down, b's remoting server whether it reads.
func nodeStatus(cfg *nodeConfig, g *dledger.Group, b *broker.Broker, stopping *atomic.Bool) func() ops.Status {
	return func() ops.Status {
		st := g.Status()
		s := ops.Status{
			Cluster: cfg.ClusterName, Group: cfg.BrokerName, Node: cfg.NodeID, Version: version,
			Role: st.Role, Term: st.Term, Leader: st.LeaderID,
			LastIndex: st.LastIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
			FormatVersion: st.FormatVersion, MaxFormatVersion: st.MaxFormatVersion,
			Snapshots: st.Snapshots, Restores: st.Restores,
			CommitLogMin: g.Storage().MinPhysicalOffset(), CommitLogMax: g.Storage().MaxPhysicalOffset(),
			// The group is open, so the store has recovered and raft runs.
			Recovered:  true,
			Draining:   st.Drained,
			Stopping:   stopping.Load(),
			Abstaining: g.Abstaining(),
		}
		if st.CommitIndex > st.AppliedIndex {
			s.Lag = st.CommitIndex - st.AppliedIndex
		}
		if err := g.Err(); err != nil {
			s.Failed = err.Error()
		}
		if err := g.Storage().CheckWritable(); err != nil {
			s.DiskError = err.Error()
		}
		if err := b.ReadHealth(); err != nil {
			s.ReadStarved = err.Error()
		}
		if st := messagestore.Of(g); st != nil && cfg.DedupWindow > 0 {
			d := st.DuplicateStats()
			s.Duplicates = &ops.DuplicateStatus{Found: g.DuplicatesFound(), Entries: d.Entries, Bytes: d.Bytes,
				Expired: d.Expired, EvictedByCount: d.EvictedByCount}
		}
		return s
	}
}

// startOps serves the node's /livez, /readyz, /status and /metrics on
// cfg.HTTPAddr (reg already holds the measured series, brokermetrics.go);
// nil when it is not set.
func startOps(cfg *nodeConfig, g *dledger.Group, b *broker.Broker, stopping *atomic.Bool, reg *prometheus.Registry,
	labels prometheus.Labels, log hclog.Logger) (*ops.Server, error) {
	if cfg.HTTPAddr == "" {
		return nil, nil
	}
	status := nodeStatus(cfg, g, b, stopping)
	reg.MustRegister(ops.NewNodeCollector(status, 0, labels), ops.NewServerCollector(b.ServerStats, labels),
		newBrokerCollector(b, labels),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	st, ready := ops.NodeProbe(status, 0)
	return serveOps(cfg.HTTPAddr, cfg.HTTPProfiling, st, ready, reg, nil, log)
}

// serveOps starts an ops server (broker node or name server).
func serveOps(addr string, profiling bool, status func() any, ready func() (bool, []string), reg *prometheus.Registry,
	fallback http.Handler, log hclog.Logger) (*ops.Server, error) {
	s, err := ops.New(ops.Config{Addr: addr, Status: status, Ready: ready, Registry: reg, Profiling: profiling, Fallback: fallback, Logger: log.Named("ops")})
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	paths := "/livez /readyz /status /metrics"
	if profiling {
		paths += " /debug/pprof/"
	}
	if fallback != nil {
		paths += " and the web console"
	}
	log.Info("operator endpoints serving", "http", s.Addr().String(), "paths", paths)
	return s, nil
}
