package broker

// Access control (Config.ACLEnable; package acl decides, this file maps
// requests to what they need and keeps the file current).
//
// Every row of the handler table (handlers.go) is wrapped by withACL when
// the table is installed, so no request reaches a handler unchecked; a row
// whose code has no entry in aclTable is a programming error New reports.
// What each request needs (RocketMQ's PlainAccessResource.parse, plus the
// requests it leaves out):
//
//	request                                   needs
//	----------------------------------------  ------------------------------------
//	SEND_MESSAGE (10), V2 (310), BATCH (320)  PUB on the topic (a %RETRY%g topic:
//	                                          SUB on group g)
//	END_TRANSACTION (37)                      PUB on the topic when the header
//	                                          names one (RocketMQ 5), else a
//	                                          valid signature
//	CONSUMER_SEND_MSG_BACK (36)               SUB on the group
//	PULL_MESSAGE (11), QUERY/UPDATE_CONSUMER  SUB on consumerGroup and the topic
//	  _OFFSET (14/15)
//	POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE  SUB on consumerGroup and the topic
//	  _INVISIBLETIME, PEEK_MESSAGE,
//	  NOTIFICATION, POLLING_INFO (2000xx)
//	BATCH_ACK_MESSAGE (200151)                SUB on every group and topic of its
//	                                          body (it has no header)
//	HEART_BEAT (34)                           SUB on every consumer group of the
//	                                          body and every subscribed topic
//	LOCK/UNLOCK_BATCH_MQ (41/42)              SUB on the group and every queue's topic
//	GET_CONSUMER_LIST_BY_GROUP (38),          SUB on consumerGroup (when named)
//	  UNREGISTER_CLIENT (35)
//	GET_MAX/MIN_OFFSET, SEARCH_OFFSET,        SUB on the topic
//	  GET_EARLIEST_MSG_STORETIME, QUERY_MESSAGE
//	UPDATE_AND_CREATE_TOPIC (17), DELETE_     an admin account
//	  TOPIC (215), UPDATE_AND_CREATE/DELETE_
//	  SUBSCRIPTIONGROUP (200/207), RESET_
//	  OFFSET (222), 4002–4014 (raft changes,
//	  drain, pending, the group's ACL rules,
//	  POP state)
//	RAFT_STATUS (4001)                        nothing: name servers confirm a
//	                                          registration with it, unsigned, and
//	                                          it tells only what routes tell
//	everything else (stats, configs, views)   a valid signature of any account
//
// A refusal is NO_PERMISSION (16) with the acl error as remark ("acl: No
// permission to PUB topic T for accessKey K").
//
// Requests between the nodes of the group. A follower checks a client's
// request before it forwards it to the leader (send.go forward), and its
// own offset commits go to the leader too (offsets.go). Such requests
// carry extNodeSig: HMAC-SHA256 with the cluster secret over every other
// ext field (key and value, length-prefixed, in key order) and the body.
// The leader accepts a request with a valid node signature without
// checking the client again (it was checked where it entered, by the same
// ACL file) and refuses one with an invalid node signature. That keeps a
// client white-listed by address working when its request is forwarded
// (the leader sees the follower's address, not the client's). Hence a
// group of several nodes needs ClusterSecret when ACLEnable is set.
//
// Front ends (the gRPC port) authenticate a call with their own signature
// and have the requests it amounts to checked by this table for that
// identity (frontacl.go).
//
// Which rules: the group's, replicated through raft (aclsync.go). Every
// node enforces the rules the group last applied; its own file is only
// how an operator edits them.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// extNodeSig is the ext field of a request a node of the group signed.
const extNodeSig = "ledgermqNodeSig"

// aclRule is what one request code needs.
type aclRule struct {
	// public requests are not checked at all.
	public bool
	admin  bool
	// resources lists the topics and groups the request touches; nil
	// means none (a valid signature is enough).
	resources func(req *remoting.Command) ([]acl.Resource, error)
}

func topicRes(name string, p acl.Perm) acl.Resource {
	if g, ok := strings.CutPrefix(name, protocol.RetryTopicPrefix); ok {
		return acl.Resource{Kind: acl.Group, Name: g, Perm: acl.Sub}
	}
	return acl.Resource{Kind: acl.Topic, Name: name, Perm: p}
}

// extTopic: the topic in ext field key.
func extTopic(key string, p acl.Perm) func(*remoting.Command) ([]acl.Resource, error) {
	return func(req *remoting.Command) ([]acl.Resource, error) {
		t, ok := req.ExtFields[key]
		if !ok {
			if p == acl.Pub && key == "topic" {
				return nil, nil // END_TRANSACTION of a client that names none
			}
			return nil, fmt.Errorf("%w: %s has no %s", ErrBadRequest, remoting.RequestCodeName(req.Code), key)
		}
		return []acl.Resource{topicRes(t, p)}, nil
	}
}

// extGroupTopic: SUB on the group in groupKey (when present) and on the
// topic in topicKey (when given).
func extGroupTopic(groupKey, topicKey string) func(*remoting.Command) ([]acl.Resource, error) {
	return func(req *remoting.Command) ([]acl.Resource, error) {
		var out []acl.Resource
		if g, ok := req.ExtFields[groupKey]; ok {
			out = append(out, acl.Resource{Kind: acl.Group, Name: g, Perm: acl.Sub})
		}
		if topicKey != "" {
			if t, ok := req.ExtFields[topicKey]; ok {
				out = append(out, topicRes(t, acl.Sub))
			}
		}
		return out, nil
	}
}

func heartbeatRes(req *remoting.Command) ([]acl.Resource, error) {
	hb, err := protocol.DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	var out []acl.Resource
	for _, c := range hb.ConsumerDataSet {
		out = append(out, acl.Resource{Kind: acl.Group, Name: c.GroupName, Perm: acl.Sub})
		for _, s := range c.SubscriptionDataSet {
			out = append(out, topicRes(s.Topic, acl.Sub))
		}
	}
	return out, nil
}

func lockRes(req *remoting.Command) ([]acl.Resource, error) {
	lb, err := protocol.DecodeLockBatchBody(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	out := []acl.Resource{{Kind: acl.Group, Name: lb.ConsumerGroup, Perm: acl.Sub}}
	for _, mq := range lb.MQSet {
		out = append(out, topicRes(mq.Topic, acl.Sub))
	}
	return out, nil
}

// aclTable is what each request of the handler table needs.
var aclTable = map[int32]aclRule{
	remoting.SendMessage:         {resources: extTopic("topic", acl.Pub)},
	remoting.SendMessageV2:       {resources: extTopic("b", acl.Pub)},
	remoting.SendBatchMessage:    {resources: extTopic("b", acl.Pub)},
	remoting.ConsumerSendMsgBack: {resources: extGroupTopic("group", "")},
	remoting.EndTransaction:      {resources: extTopic("topic", acl.Pub)},
	// As Java's RecallMessageRequestHeader (@RocketMQAction PUB on the
	// topic).
	remoting.RecallMessage: {resources: extTopic("topic", acl.Pub)},
	// Java's ACL names no resource of a reply: a valid signature is
	// enough.
	remoting.SendReplyMessage:   {},
	remoting.SendReplyMessageV2: {},

	remoting.HeartBeat:               {resources: heartbeatRes},
	remoting.UnregisterClient:        {resources: extGroupTopic("consumerGroup", "")},
	remoting.LockBatchMQ:             {resources: lockRes},
	remoting.UnlockBatchMQ:           {resources: lockRes},
	remoting.GetConsumerListByGroup:  {resources: extGroupTopic("consumerGroup", "")},
	remoting.PullMessage:             {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.LitePullMessage:         {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.QueryConsumerOffset:     {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.UpdateConsumerOffset:    {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.GetMaxOffset:            {resources: extTopic("topic", acl.Sub)},
	remoting.GetMinOffset:            {resources: extTopic("topic", acl.Sub)},
	remoting.SearchOffsetByTimestamp: {resources: extTopic("topic", acl.Sub)},
	remoting.GetEarliestMsgStoretime: {resources: extTopic("topic", acl.Sub)},
	// Java's POP headers: SUB on the group and the topic.
	remoting.PopMessage:                 {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.AckMessage:                 {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.ChangeMessageInvisibleTime: {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.PeekMessage:                {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.Notification:               {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.PollingInfo:                {resources: extGroupTopic("consumerGroup", "topic")},
	remoting.BatchAckMessage:            {resources: batchAckRes}, // no header: its body's groups and topics
	remoting.QueryMessage:               {resources: extTopic("topic", acl.Sub)},

	remoting.UpdateAndCreateTopic:             {admin: true},
	remoting.DeleteTopicInBroker:              {admin: true},
	remoting.UpdateAndCreateSubscriptionGroup: {admin: true},
	remoting.DeleteSubscriptionGroup:          {admin: true},
	remoting.InvokeBrokerToResetOffset:        {admin: true},
	remoting.RaftStatus:                       {public: true},
	remoting.RaftRemoveNode:                   {admin: true},
	remoting.RaftAddNode:                      {admin: true},
	remoting.RaftTransferLeader:               {admin: true},
	remoting.RaftDrain:                        {admin: true},
	remoting.ListPendingTimers:                {admin: true},
	remoting.ListPendingTransactions:          {admin: true},
	remoting.ListPopState:                     {admin: true},
	remoting.UpdateACL:                        {admin: true},
	remoting.GetBrokerClusterACLConfig:        {admin: true},
	remoting.UpdateBrokerConfig:               {admin: true},

	remoting.GetAllTopicConfig:             {},
	remoting.GetBrokerRuntimeInfo:          {},
	remoting.ViewMessageByID:               {},
	remoting.GetTopicStatsInfo:             {},
	remoting.GetConsumerConnectionList:     {},
	remoting.GetConsumeStats:               {},
	remoting.GetBrokerConsumeStats:         {},
	remoting.ViewBrokerStatsData:           {},
	remoting.QueryTopicConsumeByWho:        {},
	remoting.QueryConsumeTimeSpan:          {},
	remoting.QueryConsumeQueue:             {},
	remoting.CloneGroupOffset:              {},
	remoting.GetBrokerConfig:               {},
	remoting.GetSystemTopicListFromBroker:  {},
	remoting.GetConsumerRunningInfo:        {},
	remoting.ConsumeMessageDirectly:        {},
	remoting.GetProducerConnectionList:     {},
	remoting.GetAllSubscriptionGroupConfig: {},
	remoting.GetSubscriptionGroupConfig:    {},
}

// withACL wraps h with the check of code's rule; with ACL off it is h.
func (b *Broker) withACL(code int32, h remoting.HandlerFunc) (remoting.HandlerFunc, error) {
	gate, err := b.aclGate(code)
	if err != nil || gate == nil {
		return h, err
	}
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if refused := gate(conn, req); refused != nil {
			return refused
		}
		return h(ctx, conn, req)
	}, nil
}

// withACLInline is withACL for the inline start of a handler: a refused
// request is answered and taken.
func (b *Broker) withACLInline(code int32, h inlineFunc) (inlineFunc, error) {
	gate, err := b.aclGate(code)
	if err != nil || gate == nil {
		return h, err
	}
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command, reply remoting.Reply) bool {
		if refused := gate(conn, req); refused != nil {
			reply(refused)
			return true
		}
		return h(ctx, conn, req, reply)
	}, nil
}

// aclGate is the check of code's rule: the refusal of a request it
// denies, nil for one it admits; a nil gate when no check applies (ACL
// off, or a public code).
func (b *Broker) aclGate(code int32) (func(conn *remoting.Conn, req *remoting.Command) *remoting.Command, error) {
	rule, ok := aclTable[code]
	if !ok {
		return nil, fmt.Errorf("broker: no access rule for %s", remoting.RequestCodeName(code))
	}
	if !b.cfg.ACLEnable || rule.public {
		return nil, nil
	}
	name := remoting.RequestCodeName(code)
	return func(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if err := b.checkACL(conn, req, name, rule); err != nil {
			b.log.Info("request refused by the ACL", "peer", remoteString(conn), "code", name, "error", err)
			return errorResponse(req, err)
		}
		return nil
	}, nil
}

// checkACL decides req (see the file comment).
func (b *Broker) checkACL(conn *remoting.Conn, req *remoting.Command, name string, rule aclRule) error {
	if sig, ok := req.ExtFields[extNodeSig]; ok {
		if b.cfg.ClusterSecret != "" && hmac.Equal([]byte(sig), []byte(nodeSignature(req.ExtFields, req.Body, b.cfg.ClusterSecret))) {
			return nil
		}
		return fmt.Errorf("%w: %s carries an invalid node signature", acl.ErrDenied, name)
	}
	st := b.aclInForce()
	if st == nil {
		return fmt.Errorf("%w: no rules loaded", acl.ErrDenied)
	}
	r := acl.Request{RemoteAddr: remoteString(conn), Ext: req.ExtFields, Body: req.Body, Code: name, Admin: rule.admin}
	// Who asks is settled before the request is parsed: a request without
	// valid credentials is NO_PERMISSION whatever its header or body.
	acc, err := st.rules.Authenticate(r)
	if err != nil || acc == nil {
		return err
	}
	if rule.resources != nil {
		res, err := rule.resources(req)
		if err != nil {
			return err
		}
		r.Resources = res
	}
	return st.rules.Authorize(acc, r)
}

// signNode adds the node signature to a request this node sends another
// node of the group (ACL on and a cluster secret set; else it does
// nothing). req's ext map must be its own.
func (b *Broker) signNode(req *remoting.Command) {
	if !b.cfg.ACLEnable || b.cfg.ClusterSecret == "" {
		return
	}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	delete(req.ExtFields, extNodeSig)
	req.ExtFields[extNodeSig] = nodeSignature(req.ExtFields, req.Body, b.cfg.ClusterSecret)
}

// nodeSignature is base64 HMAC-SHA256 over ext (but extNodeSig), each key
// and value length-prefixed in key order, then the body: unlike the
// RocketMQ signature, no value can be moved from one field to another.
func nodeSignature(ext map[string]string, body []byte, secret string) string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != extNodeSig {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	mac := hmac.New(sha256.New, []byte(secret))
	var n [4]byte
	put := func(s string) {
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		mac.Write(n[:])
		mac.Write([]byte(s))
	}
	for _, k := range keys {
		put(k)
		put(ext[k])
	}
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// oneway sends a node-signed one-way request (offset commits to the leader).
func (b *Broker) oneway(ctx context.Context, addr string, req *remoting.Command) error {
	b.signNode(req)
	return b.client.InvokeOneway(ctx, addr, req)
}
