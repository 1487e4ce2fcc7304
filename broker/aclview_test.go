package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// A node that checks no signature never hands out the rules (their
// secret keys would go to anyone).
func TestClusterACLConfigRefusedWithACLOff(t *testing.T) {
	b := &Broker{}
	resp := b.getClusterACLConfig(context.Background(), nil, remoting.NewRequest(remoting.GetBrokerClusterACLConfig, nil, nil))
	if resp.Code == remoting.Success || !strings.Contains(resp.Remark, "ACL is not enabled") {
		t.Fatalf("with ACL off: %d %q", resp.Code, resp.Remark)
	}
}
