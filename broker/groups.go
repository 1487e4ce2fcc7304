package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Subscription-group administration, as RocketMQ's admin tools use it:
//
//	code  request                              node
//	----  -----------------------------------  ------------------------------
//	200   UPDATE_AND_CREATE_SUBSCRIPTIONGROUP  leader; a follower forwards
//	201   GET_ALL_SUBSCRIPTIONGROUP_CONFIG     any node, from its replica
//	207   DELETE_SUBSCRIPTIONGROUP             leader; a follower forwards
//	352   GET_SUBSCRIPTIONGROUP_CONFIG         any node, from its replica
//
// Groups are replicated metadata (putGroup/deleteGroup ops), so every
// replica answers the reads alike. Deleting a group also drops its
// committed offsets (Java's cleanOffset=true): a group created again
// starts as a new group. A group with consumeEnable=false gets
// NO_PERMISSION on pulls.

// parseSubscriptionGroup decodes 200's body (protocol.SubscriptionGroupConfig:
// fields left out take RocketMQ's defaults) and checks the name and the
// retry bounds.
func parseSubscriptionGroup(body []byte) (metadata.SubscriptionGroup, error) {
	c, err := protocol.DecodeSubscriptionGroupConfig(body)
	if err != nil {
		return metadata.SubscriptionGroup{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if err := validateGroup(c.GroupName); err != nil {
		return metadata.SubscriptionGroup{}, err
	}
	cfg := c.Metadata()
	if cfg.RetryQueueNums < 0 || cfg.RetryQueueNums > protocol.MaxQueueNums || cfg.RetryMaxTimes < -1 {
		return metadata.SubscriptionGroup{}, fmt.Errorf("%w: retryQueueNums %d, retryMaxTimes %d", ErrInvalidParameter, cfg.RetryQueueNums, cfg.RetryMaxTimes)
	}
	return cfg, nil
}

// validateGroup checks a consumer group name wherever one enters
// (heartbeat, 200, 36, pulls, offset commits): the topic charset and at
// most protocol.MaxGroupLength (120) bytes, so that its %RETRY% and %DLQ%
// topics are valid topics. Java clients allow 255; a longer group here
// would have its retries refused by the store after they were acknowledged.
func validateGroup(name string) error {
	if err := protocol.ValidateGroup(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return nil
}

func (b *Broker) putSubscriptionGroup(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	cfg, err := parseSubscriptionGroup(req.Body)
	if err != nil {
		return nil, err
	}
	if cur, ok := b.group.Metadata().Group(cfg.GroupName); !ok || cur != cfg {
		pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
		defer cancel()
		err := b.group.ProposeMetadata(pctx, metadata.Op{Kind: metadata.OpPutGroup, Group: &cfg})
		if errors.Is(err, dledger.ErrFormatVersion) {
			return nil, fmt.Errorf("%w: a FIFO group (consumeMessageOrderly) needs every node of the group on a release of format version 5 or later: %w", ErrInvalidParameter, err)
		}
		if err != nil {
			return nil, err
		}
		b.log.Info("subscription group created or updated", "group", cfg.GroupName, "orderly", cfg.ConsumeMessageOrderly)
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

func (b *Broker) deleteSubscriptionGroup(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteSubscriptionGroupRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	name := h.GroupName
	if _, ok := b.group.Metadata().Group(name); ok {
		pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
		defer cancel()
		if err := b.group.ProposeMetadata(pctx, metadata.Op{Kind: metadata.OpDeleteGroup, Name: name}); err != nil {
			return nil, err
		}
		b.log.Info("subscription group deleted", "group", name)
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

func (b *Broker) getAllSubscriptionGroups(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	md := b.group.Metadata()
	w := protocol.SubscriptionGroupWrapper{SubscriptionGroupTable: map[string]protocol.SubscriptionGroupConfig{},
		DataVersion: protocol.DataVersion{Counter: int64(md.AppliedIndex())}}
	for _, g := range md.Groups() {
		w.SubscriptionGroupTable[g.GroupName] = protocol.SubscriptionGroupConfigOf(g)
	}
	return bodyResponse(req, w.Encode)
}

func (b *Broker) getSubscriptionGroup(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.GetSubscriptionGroupConfigRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	name := h.Group
	g, ok := b.group.Metadata().Group(name)
	if !ok {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist, "subscription group "+name+" does not exist")
	}
	c := protocol.SubscriptionGroupConfigOf(g)
	return bodyResponse(req, c.Encode)
}

// bodyResponse answers req with the body encode returns, or SYSTEM_ERROR
// if it fails.
func bodyResponse(req *remoting.Command, encode func() ([]byte, error)) *remoting.Command {
	body, err := encode()
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// jsonResponse answers req with v as a JSON body, or SYSTEM_ERROR if v does
// not marshal.
func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	body, err := json.Marshal(v)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}
