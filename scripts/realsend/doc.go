// Command realsend sends with the real rocketmq-client-go producer, as
// `ledgermq bench produce` sends with ours: PRODUCERS producers, each with
// INFLIGHT SendAsync calls outstanding, SIZE-byte bodies, for DURATION,
// then prints one line in the bench's format
//
//	summary: sent=N acked=N failed=N msgs/s=R
//
// so that an instrument that drives `ledgermq bench produce` can drive this
// client instead (scripts/side-by-side-real.sh runs the side-by-side
// comparison with it). The topic is created by the first send (the broker
// auto-creates topics), which is not timed. Every wait is bounded: the
// sends still outstanding at the end get 30 s to be answered, and a send
// that fails counts as failed, not retried past the producer's own retry.
// It is a measuring tool, not a test: `go run ./scripts/realsend -h`.
package main
