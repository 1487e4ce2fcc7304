package main

import (
	"os"
	"strings"
)

// nodeConfEnv names the environment variable whose space-separated
// KEY=VALUE words `dev` and `jepsen run` add to every node's broker config
// before their --node-conf flags: how `make chaos CHAOS_NODE_CONF=...` runs
// its whole suite (the test clusters included) with another setting, e.g.
// raft.log=commitlog.
const nodeConfEnv = "LEDGERMQ_NODE_CONF"

func envNodeConf() []string { return strings.Fields(os.Getenv(nodeConfEnv)) }
