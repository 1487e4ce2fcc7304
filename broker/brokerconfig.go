package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// UPDATE_BROKER_CONFIG (25). A node's settings come from its config file at
// start; what can change at run time is what the group keeps in its
// replicated settings and every node reads at each use:
//
//	key             effect
//	--------------  -----------------------------------------------------------
//	maxMessageSize  the group's largest message body (dledger.ProposeSettings);
//	                it may only grow (a smaller one could refuse at apply a
//	                message accepted before); every node's sends and stores
//	                take it at once, and it outlives restarts
//
// Any other key is refused by name, with why, before anything changes: a
// request that cannot be honoured is not acknowledged (Java's broker
// answers SUCCESS and ignores a key it does not know).

// updatableBrokerConfig are the keys UPDATE_BROKER_CONFIG changes.
var updatableBrokerConfig = []string{"maxMessageSize"}

// fixedBrokerConfig says why some well-known keys cannot change at run
// time.
var fixedBrokerConfig = map[string]string{
	"messageDelayLevel":       "the delay levels are the group's, fixed while it runs (each node restarts once to adopt a new table)",
	"brokerPermission":        "use WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER on the name servers, or `ledgermq admin raft drain`",
	"mappedFileSizeCommitLog": "the CommitLog's segment size is fixed when the group is created",
}

// updateBrokerConfig serves UPDATE_BROKER_CONFIG on the leader (a follower
// forwards it): the body is a properties text, key=value per line.
func (b *Broker) updateBrokerConfig(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	kv := protocol.DecodeBrokerConfig(req.Body)
	if len(kv) == 0 {
		return nil, fmt.Errorf("%w: UPDATE_BROKER_CONFIG names no key", ErrInvalidParameter)
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if slices.Contains(updatableBrokerConfig, k) {
			continue
		}
		why := fixedBrokerConfig[k]
		if why == "" {
			why = "a node's settings come from its config file at start; change the file and roll the group"
		}
		return nil, fmt.Errorf("%w: %s cannot change at run time (%s); what can: %s", ErrInvalidParameter, k, why, strings.Join(updatableBrokerConfig, ", "))
	}
	s, ok := b.group.Metadata().Settings()
	if !ok {
		return nil, fmt.Errorf("%w: the group has not recorded its settings yet", dledger.ErrNotReady)
	}
	if v, ok := kv["maxMessageSize"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: maxMessageSize %q is not a positive number", ErrInvalidParameter, v)
		}
		s.MaxMessageSize = n
	}
	pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
	defer cancel()
	if err := b.group.ProposeSettings(pctx, s); err != nil {
		if errors.Is(err, dledger.ErrSettings) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
		}
		return nil, err
	}
	b.log.Info("group settings changed by UPDATE_BROKER_CONFIG", "maxMessageSize", s.MaxMessageSize)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// maxMessageSize is the largest message body a send may carry: the
// group's (its replicated settings, which UPDATE_BROKER_CONFIG may raise),
// or this node's own setting until the group has recorded its settings.
func (b *Broker) maxMessageSize() int {
	if s, ok := b.group.Metadata().Settings(); ok && s.MaxMessageSize > 0 {
		return s.MaxMessageSize
	}
	return b.cfg.MaxMessageSize
}
