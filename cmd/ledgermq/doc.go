// Command ledgermq is the single ledgermq binary. Run `ledgermq --help`.
//
// # Commands and their files
//
//	command              files                                what it is
//	broker               broker.go, brokerconfig.go,          one node of a broker group: a raft
//	                     brokerops.go, brokermetrics.go,      group member serving the RocketMQ
//	                     properties.go, tlsflags.go           protocol, its operator endpoints
//	namesrv              namesrv.go                           a name server
//	proxy                proxy.go, grpcmetrics.go             RocketMQ 5's proxy (gRPC, cluster
//	                                                          mode): the ACL's checks and /metrics
//	dev                  dev.go, devacl.go, devproc_*.go      a name server and an N-node group as
//	                                                          supervised processes (make run)
//	admin …              admin*.go, adminraft.go,             operate a running cluster; every
//	                     clientflags.go                       verb of RocketMQ's mqadmin, served
//	                                                          or refused (admin_mqadmin.go)
//	bench …              bench.go, benchverify.go,            load through our client, one summary
//	                     clientflags.go                       line of fixed shape
//	jepsen …             jepsen.go, jepsen_other.go           the chaos harness (package jepsen)
//	demo                 demo.go                              a local store written and read back
//	version, --version   root.go                              the version and commit of the build
//
// Every command is built by a newXxxCmd function of its file and added by
// newRootCmd (root.go); main.go only runs the root and maps errors to exit
// statuses. The commands hold no logic of their own beyond flags, wiring
// and output: the work is in the product's packages (broker, dledger,
// routing, client, internal/harness/bench, internal/harness/devcluster, jepsen).
//
// # Exit statuses
//
//	0  done; for broker and namesrv, a stop asked for by a signal
//	1  any error (printed as "ledgermq: …"); for broker also a node whose
//	   raft group stopped itself (fail-stop), for its supervisor to
//	   restart it
//	3  a broker node that cannot start from its own files
//	   (dledger.ErrCannotStart): restarting will not help; `ledgermq admin
//	   raft replace-node` rebuilds it, and `ledgermq dev` says so
//
// # Configuration
//
// A broker node reads flags, LEDGERMQ_* environment variables, a --config
// file (a DLedger broker.conf works) and defaults, in that precedence; the
// key table and the rules are in brokerconfig.go. The other commands take
// flags only (the name server list also from NAMESRV_ADDR, as mqadmin,
// else 127.0.0.1:9876; the proxy's secret key also from a file or
// LEDGERMQ_PROXY_SECRET_KEY).
//
// # Tests
//
// The tests here run the real binary (devcluster builds it) or the cobra
// commands in process (runCLI), against real servers on loopback.
// deps_test.go checks that the binary links no test harness, no
// fault-injecting network and no package of this module that imports
// testing.
package main
