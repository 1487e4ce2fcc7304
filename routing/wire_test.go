package routing

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// TestRegisterCommandWireFields pins the ext fields REGISTER_BROKER and
// UNREGISTER_BROKER carry: Java name servers read them, and a signature
// covers exactly these (a field added or dropped breaks verification on a
// name server of another version).
func TestRegisterCommandWireFields(t *testing.T) {
	req := RegisterRequest{ClusterName: "c", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912",
		BrokerID: 2, Term: 3, Topics: []protocol.TopicConfig{{TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		HeartbeatTimeout: 30 * time.Second}
	cmd, err := RegisterCommand(req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "c",
		"haServerAddr": "127.0.0.1:10912", "brokerId": "2", "enableActingMaster": "false", "compressed": "false",
		"bodyCrc32": strconv.FormatUint(uint64(bodyCRC32(cmd.Body)), 10), "heartbeatTimeoutMillis": "30000"}
	if !maps.Equal(cmd.ExtFields, want) {
		t.Fatalf("register ext %v, want %v", cmd.ExtFields, want)
	}
	req.HeartbeatTimeout = 0
	if cmd, err = RegisterCommand(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := cmd.ExtFields["heartbeatTimeoutMillis"]; ok {
		t.Fatalf("heartbeatTimeoutMillis written without a timeout: %v", cmd.ExtFields)
	}
	un, err := UnregisterCommand(UnregisterRequest{ClusterName: "c", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911", BrokerID: 2})
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(un.ExtFields)); !slices.Equal(keys, []string{"brokerAddr", "brokerId", "brokerName", "clusterName"}) ||
		un.ExtFields["brokerId"] != "2" {
		t.Fatalf("unregister ext %v", un.ExtFields)
	}
}
