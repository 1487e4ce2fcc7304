package broker

import (
	"testing"

	"github.com/ledgermq/ledgermq/dledger"
)

func TestBrokerIDs(t *testing.T) {
	b := &Broker{cfg: Config{NodeID: "n1", Peers: map[string]string{"n0": "", "n1": "", "n2": ""}}}
	for _, c := range []struct {
		role string
		want int64
	}{{dledger.RoleLeader, 0}, {dledger.RoleFollower, 2}, {dledger.RoleCandidate, 2}} {
		if got := b.brokerID(dledger.RoleEvent{Role: c.role}); got != c.want {
			t.Errorf("%s: id %d, want %d", c.role, got, c.want)
		}
	}
}
