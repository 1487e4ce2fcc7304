// Command realsend sends with the real rocketmq-client-go producer, as
// `ledgermq bench produce` sends with ours: PRODUCERS producers, each with
// INFLIGHT SendAsync calls outstanding, SIZE-byte bodies, for DURATION,
// then prints the bench's summary line (internal/harness/bench's Recorder,
// each send's latency taken from its call to its callback):
//
//	summary: sent=N acked=N failed=N unknown=N msgs/s=X MB/s=Y p50=Xms p90=Xms p99=Xms p999=Xms max=Xms max-gap-ms=N
//
// failed: SendAsync refused the send; unknown: its callback reported an
// error (the producer's own two retries spent), after which the message
// may still have been stored. An instrument that drives `ledgermq bench
// produce` can drive this client instead: scripts/side-by-side-real.sh runs
// the side-by-side comparison with it, and -producers 1 -inflight 1
// measures one send at a time, beside `ledgermq bench latency`.
//
// The topic is created by a first send (the broker auto-creates topics),
// which is not timed. Every wait is bounded: the first send 30 s, the
// sends still outstanding when DURATION ends 30 s more. It is a measuring
// tool, not a test: `go run ./scripts/realsend -h`.
package main
