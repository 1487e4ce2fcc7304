package ops

import "github.com/prometheus/client_golang/prometheus"

// Roles a node reports in ledgermq_raft_role.
var roles = []string{"leader", "follower", "candidate", "shutdown"}

// NodeCollector exports a node's raft series from its Status, read at each
// scrape (so nothing is cached between scrapes):
//
//	ledgermq_raft_term                 gauge  the node's current term
//	ledgermq_raft_role{role}           gauge  1 for the node's role, 0 for the others
//	ledgermq_raft_last_index           gauge  last raft log index
//	ledgermq_raft_commit_index         gauge  commit index
//	ledgermq_raft_applied_index        gauge  applied index
//	ledgermq_raft_apply_lag_entries    gauge  commit − applied
//	ledgermq_raft_format_version       gauge  the group's format version as applied here
//	ledgermq_node_ready                gauge  1 when /readyz would answer 200
//	ledgermq_raft_abstaining           gauge  1 while the node abstains from votes after a machine crash
//	ledgermq_raft_snapshots_total      counter snapshots taken since the start
//	ledgermq_raft_restores_total       counter snapshots installed since the start
//	ledgermq_commitlog_min_offset_bytes gauge the CommitLog's first byte offset
//	ledgermq_commitlog_max_offset_bytes gauge the CommitLog's write position (the
//	                                          leader's minus a follower's: its lag in bytes)
//	ledgermq_dedup_found_total         counter sends answered from the duplicate window (as leader)
//	ledgermq_dedup_entries             gauge  keys the duplicate window holds
//	ledgermq_dedup_bytes               gauge  memory they take
//	ledgermq_dedup_evicted_total{reason} counter keys that left it: age, or count (the window was full)
//
// The dedup series are absent when the node's window is off.
//
// Every series carries the constant labels given (cluster, group, node).
type NodeCollector struct {
	status                                                func() Status
	maxLag                                                uint64
	term, role, last, commit, applied, lag, format, ready *prometheus.Desc
	snapshots, restores, clMin, clMax, abstaining         *prometheus.Desc
	dupFound, dupEntries, dupBytes, dupEvicted            *prometheus.Desc
}

// NewNodeCollector returns the collector of status with constant labels.
func NewNodeCollector(status func() Status, maxLag uint64, labels prometheus.Labels) *NodeCollector {
	if maxLag == 0 {
		maxLag = DefaultMaxLag
	}
	d := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	return &NodeCollector{
		status:     status,
		maxLag:     maxLag,
		term:       d("ledgermq_raft_term", "The node's current raft term."),
		role:       d("ledgermq_raft_role", "1 for the node's raft role, 0 for the others.", "role"),
		last:       d("ledgermq_raft_last_index", "The node's last raft log index."),
		commit:     d("ledgermq_raft_commit_index", "The node's raft commit index."),
		applied:    d("ledgermq_raft_applied_index", "The last raft index the node has applied."),
		lag:        d("ledgermq_raft_apply_lag_entries", "Commit index minus applied index."),
		format:     d("ledgermq_raft_format_version", "The group's format version as applied by this node."),
		ready:      d("ledgermq_node_ready", "1 when the node is ready for traffic (/readyz)."),
		snapshots:  d("ledgermq_raft_snapshots_total", "Raft snapshots this node has taken since it started."),
		restores:   d("ledgermq_raft_restores_total", "Raft snapshots installed on this node since it started."),
		clMin:      d("ledgermq_commitlog_min_offset_bytes", "The offset of the first byte of the node's CommitLog."),
		clMax:      d("ledgermq_commitlog_max_offset_bytes", "The node's CommitLog write position (the leader's minus a follower's is its lag in bytes)."),
		dupFound:   d("ledgermq_dedup_found_total", "Sends this node, as leader, answered from the duplicate window instead of storing them again."),
		dupEntries: d("ledgermq_dedup_entries", "Message keys the duplicate window holds."),
		dupBytes:   d("ledgermq_dedup_bytes", "Memory the duplicate window takes, estimated."),
		dupEvicted: d("ledgermq_dedup_evicted_total", "Keys that left the duplicate window: by age, or by count when it was full.", "reason"),
		abstaining: d("ledgermq_raft_abstaining",
			"1 while the node abstains from raft votes: it came back from a machine crash that may have taken entries it acknowledged, and waits to catch up."),
	}
}

// Describe implements prometheus.Collector.
func (c *NodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.term, c.role, c.last, c.commit, c.applied, c.lag, c.format, c.ready, c.snapshots, c.restores, c.clMin, c.clMax, c.abstaining,
		c.dupFound, c.dupEntries, c.dupBytes, c.dupEvicted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *NodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	gauge(c.term, float64(s.Term))
	for _, r := range roles {
		v := 0.0
		if r == s.Role {
			v = 1
		}
		gauge(c.role, v, r)
	}
	gauge(c.last, float64(s.LastIndex))
	gauge(c.commit, float64(s.CommitIndex))
	gauge(c.applied, float64(s.AppliedIndex))
	gauge(c.lag, float64(s.Lag))
	gauge(c.format, float64(s.FormatVersion))
	ready := 0.0
	if ok, _ := s.Ready(c.maxLag); ok {
		ready = 1
	}
	gauge(c.ready, ready)
	ch <- prometheus.MustNewConstMetric(c.snapshots, prometheus.CounterValue, float64(s.Snapshots))
	ch <- prometheus.MustNewConstMetric(c.restores, prometheus.CounterValue, float64(s.Restores))
	gauge(c.clMin, float64(s.CommitLogMin))
	gauge(c.clMax, float64(s.CommitLogMax))
	abstaining := 0.0
	if s.Abstaining {
		abstaining = 1
	}
	gauge(c.abstaining, abstaining)
	if d := s.Duplicates; d != nil {
		ch <- prometheus.MustNewConstMetric(c.dupFound, prometheus.CounterValue, float64(d.Found))
		gauge(c.dupEntries, float64(d.Entries))
		gauge(c.dupBytes, float64(d.Bytes))
		ch <- prometheus.MustNewConstMetric(c.dupEvicted, prometheus.CounterValue, float64(d.Expired), "age")
		ch <- prometheus.MustNewConstMetric(c.dupEvicted, prometheus.CounterValue, float64(d.EvictedByCount), "count")
	}
}
