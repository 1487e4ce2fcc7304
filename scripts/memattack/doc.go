// Command memattack measures how much memory hostile clients can make a
// ledgermq name server and broker take. It starts each server from the
// given binary on loopback ports, runs one attack against it, samples the
// process's resident memory (/proc/PID/status VmRSS, and VmHWM at the end)
// and prints the figures:
//
//   - frames: one connection sends N back-to-back frames of M MiB
//     (REGISTER_BROKER to the name server, HEART_BEAT to the broker, each
//     with a JSON body the handler has to scan) and reads the answers.
//   - partial: C connections each announce a D MiB frame, send S MiB of
//     it and stall.
//   - locks (broker only): R LOCK_BATCH_MQ requests, each for Q queues of
//     topics that do not exist under a group of its own, then a pause
//     of -hold: what the lock table keeps.
//
// Every server runs in a fresh process with its own data directory, bound
// to 127.0.0.1, and is stopped after its attack. It is a measuring tool,
// not a test: run it with `go run ./scripts/memattack -bin bin/ledgermq`
// or scripts/memattack.sh. Linux only (it reads /proc).
package main
