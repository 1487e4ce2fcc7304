// Package ops serves a node's operator endpoints over HTTP, for load
// balancers, supervisors and Prometheus:
//
//	path      answer
//	--------  ----------------------------------------------------------------
//	/livez    200 "ok" while the process serves (a node that stopped itself
//	          exits, so its supervisor sees it gone)
//	/readyz   200 "ready", or 503 with one reason a line: not recovered, the
//	          node stopped itself, no leader known, applied index more than
//	          MaxLag entries behind the commit index, the disk not writable,
//	          draining, shutting down, not reading new requests (the remoting
//	          read budget's reserve used up for a while)
//	/status   the node's Status as JSON (role, term, leader, indices, lag,
//	          format versions)
//	/metrics  Prometheus text exposition of the registry given to New
//	/debug/pprof/
//	          Go's runtime profiles (net/http/pprof), only with
//	          Config.Profiling: `go tool pprof http://ADDR/debug/pprof/profile`
//	          for 30 s of CPU, …/heap, …/goroutine, …/trace?seconds=5. Off
//	          by default: they show internals, and a CPU profile or trace
//	          costs while it runs. With it on, responses may stream for up
//	          to five minutes (the write timeout is otherwise 30 s).
//
// The package knows nothing of brokers or raft: the caller hands it a
// function returning the node's Status and a prometheus.Registry it fills
// (NodeCollector turns a Status source into raft series). Nothing here
// blocks on the node: each request calls the Status function once.
//
// Goroutines: Start runs one goroutine (http.Server.Serve) that Close
// stops; handlers run on net/http's per-connection goroutines, which Close
// waits for (http.Server.Shutdown).
package ops
