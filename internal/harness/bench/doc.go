// Package bench is the engine of `ledgermq bench`: it drives producers and
// consumers through our client, records every operation and reports.
//
// # What is measured
//
// Each send is recorded with the time it was meant to start, the time its
// answer came and its outcome (ok, failed, unknown; client.Outcome). With
// --rate the load is an open loop: send i is due at start + i/rate, and its
// latency runs from that due time, not from when a free producer picked it
// up, so a stall shows in the latencies of every send it delayed instead of
// being hidden (coordinated omission). Without --rate every producer keeps
// --inflight sends outstanding and latency runs from the send call. A
// producer that can (client.Producer.SendFunc: FuncSender) keeps them so
// without a goroutine per send: each send's callback, on the goroutine
// that ends it (a connection's reader), records it and makes the next, so
// the client spends its CPU on messages, not on goroutine hand-offs;
// others (the gRPC sender) run one goroutine per send in flight.
//
// Latencies go into HDR histograms (1 µs .. 1 h, 3 significant digits): one
// for the run and one per report interval. max-gap-ms is the longest time
// in which no send was acknowledged, between the start, every
// acknowledgement and the end of the run: the figure a failover shows.
//
// # Reports
//
// Every second a progress line (acked/s, errors, p99 of that second); at
// the end one summary line in exactly this shape:
//
//	summary: sent=N acked=N failed=N unknown=N msgs/s=X MB/s=Y p50=Xms p90=Xms p99=Xms p999=Xms max=Xms max-gap-ms=N
//
// or the same fields as JSON. Consume mode checks what it receives: per
// queue, offsets must follow each other without gaps or repeats, and each
// message's sequence key is counted once (duplicates reported).
//
// # Access control
//
// Every client of a run (producers, consumers, the admin client and the
// verification's lookups) signs with the run's credentials when given
// (--access-key/--secret-key). Sends and lookups a broker refuses with
// NO_PERMISSION are counted apart (Result.Refused, Verification.Refused),
// and the command fails naming NO_PERMISSION and what to give.
//
// # Goroutines
//
// Run owns its producer goroutines, the pacer and the reporter; all have
// ended when it returns (a FuncSender's callbacks with its Close, which
// waits for them). Recorder is safe for concurrent use.
package bench
