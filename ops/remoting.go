package ops

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledgermq/ledgermq/remoting"
)

// ServerCollector exports a remoting server's figures (broker and name
// server alike), read at each scrape:
//
//	ledgermq_remoting_connections               gauge    open client connections
//	ledgermq_remoting_held_bytes                gauge    request bytes read and not yet handled
//	ledgermq_remoting_read_budget_bytes         gauge    the read budget those bytes are bounded by
//	ledgermq_remoting_read_waiting_connections  gauge    connections not read until the budget frees
//	ledgermq_remoting_read_reserve_bytes        gauge    the part of the budget only small frames may use
//	ledgermq_remoting_read_waits_total          counter  frames that waited for the budget
//	ledgermq_remoting_starved_reads_total       counter  small frames that waited (the reserve was used up)
//	ledgermq_remoting_stalled_closes_total      counter  connections closed for a frame that did not arrive in time
//	ledgermq_remoting_refused_bodies_total      counter  large bodies refused for their request code (or unsigned)
//	ledgermq_remoting_inflight_requests         gauge    requests queued or being handled
//	ledgermq_remoting_refused_connections_total counter  connections closed at accept (connection limit)
//	ledgermq_remoting_busy_refusals_total       counter  requests answered SYSTEM_BUSY (in-flight limit)
type ServerCollector struct {
	stats                                                        func() remoting.ServerStats
	conns, held, budget, waiting, waits, inflight, refused, busy *prometheus.Desc
	reserve, starved, stalled, refusedBodies                     *prometheus.Desc
}

// NewServerCollector returns the collector of stats with constant labels.
func NewServerCollector(stats func() remoting.ServerStats, labels prometheus.Labels) *ServerCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, labels) }
	return &ServerCollector{
		stats:    stats,
		conns:    d("ledgermq_remoting_connections", "Open client connections."),
		held:     d("ledgermq_remoting_held_bytes", "Request bytes read and not yet handled."),
		budget:   d("ledgermq_remoting_read_budget_bytes", "The read budget held bytes are bounded by."),
		waiting:  d("ledgermq_remoting_read_waiting_connections", "Connections not read until the read budget frees."),
		waits:    d("ledgermq_remoting_read_waits_total", "Frames that waited for the read budget."),
		inflight: d("ledgermq_remoting_inflight_requests", "Requests queued or being handled."),
		refused:  d("ledgermq_remoting_refused_connections_total", "Connections closed at accept because of the connection limit."),
		busy:     d("ledgermq_remoting_busy_refusals_total", "Requests answered SYSTEM_BUSY because of the in-flight limit."),
		reserve:  d("ledgermq_remoting_read_reserve_bytes", "The part of the read budget only small frames may use."),
		starved:  d("ledgermq_remoting_starved_reads_total", "Small frames that waited for the read budget (its reserve was used up)."),
		stalled:  d("ledgermq_remoting_stalled_closes_total", "Connections closed for a frame that did not arrive in time or went silent while the budget was short."),
		refusedBodies: d("ledgermq_remoting_refused_bodies_total",
			"Large bodies refused before they were read (a request code without large bodies, or unsigned where signing is required)."),
	}
}

// Describe implements prometheus.Collector.
func (c *ServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.held, c.budget, c.waiting, c.waits, c.inflight, c.refused, c.busy,
		c.reserve, c.starved, c.stalled, c.refusedBodies} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ServerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.conns, float64(s.Conns))
	gauge(c.held, float64(s.HeldBytes))
	gauge(c.budget, float64(s.ReadBudget))
	gauge(c.waiting, float64(s.ReadWaiting))
	counter(c.waits, float64(s.ReadWaits))
	gauge(c.inflight, float64(s.InFlight))
	counter(c.refused, float64(s.RefusedConns))
	counter(c.busy, float64(s.BusyInFlight))
	gauge(c.reserve, float64(s.ReadReserve))
	counter(c.starved, float64(s.StarvedReads))
	counter(c.stalled, float64(s.StalledCloses))
	counter(c.refusedBodies, float64(s.RefusedBodies))
}
