package devcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// FileName is the name of the cluster description inside the dev directory.
const FileName = "cluster.json"

// GroupName is the broker group (brokerName and raft group) of a dev cluster.
const GroupName = "broker-a"

// File is DIR/cluster.json.
type File struct {
	Namesrv string `json:"namesrv"`
	// NamesrvHTTP serves the name server's /livez, /readyz, /status and
	// /metrics.
	NamesrvHTTP string `json:"namesrvHttp,omitempty"`
	// Proxy is the RocketMQ 5 proxy's gRPC address (ledgermq proxy, in
	// front of every group); ProxyHTTP serves its /livez, /readyz and
	// /metrics.
	Proxy     string `json:"proxy,omitempty"`
	ProxyHTTP string `json:"proxyHttp,omitempty"`
	Nodes     []Node `json:"nodes"`
}

// Node is one broker node of File.
type Node struct {
	ID string `json:"id"`
	// Group is the node's broker group (brokerName, raft group).
	Group string `json:"group,omitempty"`
	PID   int    `json:"pid"`
	Addr  string `json:"addr"`
	Raft  string `json:"raft"`
	// HTTP serves the node's /livez, /readyz, /status and /metrics.
	HTTP string `json:"http"`
	// GRPC is the node's RocketMQ 5 gRPC port (package grpcapi).
	GRPC string `json:"grpc,omitempty"`
	// Role is the node's role as dev last saw it: leader, follower, down
	// (not running), or stopped (dev has stopped).
	Role string `json:"role"`
	Dir  string `json:"dir"`
}

// ReadFile reads dir's cluster.json.
func ReadFile(dir string) (File, error) {
	var f File
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return f, fmt.Errorf("%w: %w", ErrNoFile, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("%w: %s: %w", ErrBadFile, FileName, err)
	}
	if f.Namesrv == "" || len(f.Nodes) == 0 {
		return f, fmt.Errorf("%w: %s names no name server or no nodes", ErrBadFile, FileName)
	}
	return f, nil
}

// NodeByAddr returns the node whose client-facing address is addr.
func (f File) NodeByAddr(addr string) (Node, bool) {
	for _, n := range f.Nodes {
		if n.Addr == addr {
			return n, true
		}
	}
	return Node{}, false
}
