// Package procs runs the processes of a local ledgermq cluster on
// loopback: it is what `ledgermq dev` and the chaos harness (package
// jepsen) share to lay out and supervise a name server and broker groups
// as child processes of one binary.
//
//   - ports.go: free loopback ports (held until every one is picked),
//     whether an address is free, waiting until one accepts connections;
//   - layout.go: the names of broker groups (broker-a, broker-b, …) and
//     of their nodes (n0… in broker-a, b0… in broker-b, …), unique
//     across groups;
//   - conf.go: a node's broker config file (properties text);
//   - proc.go: Proc, one restartable child process with its output
//     appended to a log, in its own process group (and, on Linux, sent
//     a signal of the caller's choosing if the parent dies): start,
//     signal (SIGSTOP/SIGCONT), kill -9, stop with a grace, and StopAll
//     for a whole cluster.
//
// Goroutines: each run of a Proc has one goroutine that waits for the
// process to exit; it ends when the process does, and Proc.Wait waits
// for all of them. Kill, Stop and StopAll end the process (SIGKILL after
// the grace), so whoever starts a Proc stops it with one of them.
package procs
