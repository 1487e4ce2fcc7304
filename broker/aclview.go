package broker

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// errACLOff: a read of the access-control rules on a node that does not
// enforce them (it checks no signature, so it would hand the secret keys
// to anyone).
var errACLOff = errors.New("broker: ACL is not enabled on this broker")

// getClusterACLConfig answers GET_BROKER_CLUSTER_ACL_CONFIG (54): the
// rules in force, as their plain_acl.yml writes them (secret keys
// included: the request needs an admin account) — the group's, or, until
// the group has recorded any, this node's own file, which it enforces
// meanwhile. A node with ACL off refuses it.
func (b *Broker) getClusterACLConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.cfg.ACLEnable {
		return errorResponse(req, errACLOff)
	}
	content := []byte(nil)
	if r, ok := b.group.Metadata().ACL(); ok {
		content = r.Content
	} else {
		var err error
		if content, err = os.ReadFile(b.cfg.ACLFile); err != nil {
			return errorResponse(req, fmt.Errorf("%w: the group has recorded no ACL rules yet, and this node's file: %w", ErrNotFound, err))
		}
	}
	d, err := acl.Describe(content)
	if err != nil {
		return errorResponse(req, err)
	}
	c := protocol.ClusterACLConfig{GlobalWhiteAddrs: d.GlobalWhiteAddrs, PlainAccessConfigs: make([]protocol.PlainAccessConfig, 0, len(d.Accounts))}
	if c.GlobalWhiteAddrs == nil {
		c.GlobalWhiteAddrs = []string{}
	}
	for _, a := range d.Accounts {
		c.PlainAccessConfigs = append(c.PlainAccessConfigs, protocol.PlainAccessConfig{
			AccessKey: a.AccessKey, SecretKey: a.SecretKey, WhiteRemoteAddress: a.WhiteRemoteAddress, Admin: a.Admin,
			DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm,
			TopicPerms: nonNil(a.TopicPerms), GroupPerms: nonNil(a.GroupPerms)})
	}
	return bodyResponse(req, c.Encode)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
