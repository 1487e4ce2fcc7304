package broker

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// The broker's request handlers: one table, installed by New. Each row is
// a request code, the worker pool it runs on (a flood of one kind of
// request cannot starve the others) and its handler. A row with leader
// set is served by the writable leader only; any other node forwards it
// unchanged (leaderOnly), and the handler's error becomes the response
// code through responseFor (codes.go). Rows without it are answered by
// every node from its own replica, or decide themselves (sends forward
// and wait out leader changes, send.go; RAFT_DRAIN acts on the node it
// reaches, raftadmin.go).

// Worker pools.
const (
	poolSend      = "send"
	poolPull      = "pull"
	poolAdmin     = "admin"
	poolHeartbeat = "heartbeat"
	poolPop       = "pop"
)

// pools sizes the worker pools.
var pools = map[string]remoting.PoolConfig{
	// A send on the leader reaches no worker (serveSendInline); the
	// workers serve the sends that wait — forwards from a follower, a
	// topic to create, half messages, the in-process and gRPC paths — and
	// each waits for its raft commit, so the pool is wide.
	poolSend:      {Workers: 256, QueueSize: 8192},
	poolPull:      {Workers: 16, QueueSize: 4096},
	poolAdmin:     {Workers: 4, QueueSize: 256},
	poolHeartbeat: {Workers: 2, QueueSize: 1024},
	// A POP_MESSAGE or NOTIFICATION long poll waits on its worker (up to
	// maxPullHold), so the pool is its own: it bounds the receives waiting
	// at once.
	poolPop: {Workers: 64, QueueSize: 1024},
}

// leaderHandler serves a request on the leader; an error is answered
// through responseFor.
type leaderHandler func(ctx context.Context, req *remoting.Command) (*remoting.Command, error)

// handlerRow is one row of the table: serve, or leader when only the
// leader serves the request.
type handlerRow struct {
	code   int32
	pool   string
	serve  remoting.HandlerFunc
	leader leaderHandler
	// inline, when set, starts the request on the remoting port on its
	// connection's read goroutine (remoting.InlineHandler); what it does
	// not take, serve serves on a worker, as it serves in-process callers
	// (ServeLocal).
	inline inlineFunc
}

// inlineFunc is a remoting.InlineHandler's ServeInline.
type inlineFunc func(ctx context.Context, conn *remoting.Conn, req *remoting.Command, reply remoting.Reply) bool

// inlineHandler is a row with an inline start: ServeInline starts what it
// can, a worker serves the rest (ServeAsync, Serve).
type inlineHandler struct {
	serve  remoting.HandlerFunc
	inline inlineFunc
}

func (h inlineHandler) Serve(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return h.serve(ctx, conn, req)
}

func (h inlineHandler) ServeAsync(ctx context.Context, conn *remoting.Conn, req *remoting.Command, reply remoting.Reply) {
	reply(h.serve(ctx, conn, req))
}

func (h inlineHandler) ServeInline(ctx context.Context, conn *remoting.Conn, req *remoting.Command, reply remoting.Reply) bool {
	return h.inline(ctx, conn, req, reply)
}

// handlers is the table.
func (b *Broker) handlers() []handlerRow {
	return []handlerRow{
		// Producers (send.go, sendback.go, transaction.go).
		{code: remoting.SendMessage, pool: poolSend, serve: b.serveSend, inline: b.serveSendInline},
		{code: remoting.SendMessageV2, pool: poolSend, serve: b.serveSend, inline: b.serveSendInline},
		{code: remoting.SendBatchMessage, pool: poolSend, serve: b.serveSend, inline: b.serveSendInline},
		{code: remoting.ConsumerSendMsgBack, pool: poolSend, leader: b.sendBack},
		{code: remoting.EndTransaction, pool: poolSend, serve: b.serveEndTransaction},
		{code: remoting.RecallMessage, pool: poolSend, leader: b.recallMessage},
		// Request-reply (reply.go).
		{code: remoting.SendReplyMessage, pool: poolSend, serve: b.serveReply},
		{code: remoting.SendReplyMessageV2, pool: poolSend, serve: b.serveReply},

		// Consumers (consumer.go, pull.go, offsets.go, locks.go).
		{code: remoting.HeartBeat, pool: poolHeartbeat, serve: b.handleHeartbeat},
		{code: remoting.UnregisterClient, pool: poolHeartbeat, serve: b.handleUnregisterClient},
		{code: remoting.LockBatchMQ, pool: poolHeartbeat, leader: b.lockBatchMQ},
		{code: remoting.UnlockBatchMQ, pool: poolHeartbeat, leader: b.unlockBatchMQ},
		{code: remoting.GetConsumerListByGroup, pool: poolPull, serve: b.handleGetConsumerList},
		{code: remoting.PullMessage, pool: poolPull, serve: b.handlePull},
		// The Java lite pull consumer's pulls are pulls (Java registers
		// the same processor for both codes).
		{code: remoting.LitePullMessage, pool: poolPull, serve: b.handlePull},
		{code: remoting.QueryConsumerOffset, pool: poolPull, leader: b.queryConsumerOffset},
		{code: remoting.UpdateConsumerOffset, pool: poolPull, leader: b.updateConsumerOffset},
		{code: remoting.GetMaxOffset, pool: poolPull, serve: b.handleGetMaxOffset},
		{code: remoting.GetMinOffset, pool: poolPull, serve: b.handleGetMinOffset},
		{code: remoting.SearchOffsetByTimestamp, pool: poolPull, serve: b.handleSearchOffsetByTimestamp},
		{code: remoting.GetEarliestMsgStoretime, pool: poolPull, serve: b.handleGetEarliestMsgStoretime},
		// POP consumption (pop_remoting.go, pop_peek.go, pop_notify.go,
		// pop_batchack.go). A NOTIFICATION waits like a POP_MESSAGE.
		{code: remoting.PopMessage, pool: poolPop, leader: b.popMessageRemote},
		{code: remoting.AckMessage, pool: poolPull, leader: b.ackMessageRemote},
		{code: remoting.ChangeMessageInvisibleTime, pool: poolPull, leader: b.changeInvisibleRemote},
		{code: remoting.PeekMessage, pool: poolPull, leader: b.peekMessageRemote},
		{code: remoting.Notification, pool: poolPop, leader: b.notificationRemote},
		{code: remoting.PollingInfo, pool: poolPull, leader: b.pollingInfoRemote},
		{code: remoting.BatchAckMessage, pool: poolPull, leader: b.batchAckRemote},

		// Topics, queries and runtime (admin.go).
		{code: remoting.UpdateAndCreateTopic, pool: poolAdmin, leader: b.updateAndCreateTopic},
		{code: remoting.DeleteTopicInBroker, pool: poolAdmin, leader: b.deleteTopic},
		{code: remoting.GetAllTopicConfig, pool: poolAdmin, serve: b.getAllTopicConfig},
		{code: remoting.GetBrokerRuntimeInfo, pool: poolAdmin, serve: b.getBrokerRuntimeInfo},
		{code: remoting.ViewMessageByID, pool: poolAdmin, serve: b.viewMessageByID},
		{code: remoting.QueryMessage, pool: poolAdmin, serve: b.queryMessage},

		// Statistics and offset resets (admin_stats.go).
		{code: remoting.GetTopicStatsInfo, pool: poolAdmin, serve: b.getTopicStatsInfo},
		{code: remoting.GetConsumerConnectionList, pool: poolAdmin, serve: b.getConsumerConnectionList},
		{code: remoting.GetConsumeStats, pool: poolAdmin, serve: b.getConsumeStats},
		{code: remoting.GetBrokerConsumeStats, pool: poolAdmin, serve: b.getBrokerConsumeStats},
		{code: remoting.ViewBrokerStatsData, pool: poolAdmin, serve: b.viewBrokerStatsData},
		{code: remoting.GetBrokerClusterACLConfig, pool: poolAdmin, serve: b.getClusterACLConfig},
		{code: remoting.UpdateBrokerConfig, pool: poolAdmin, leader: b.updateBrokerConfig},
		{code: remoting.GetBrokerConfig, pool: poolAdmin, serve: b.getBrokerConfig},
		{code: remoting.GetSystemTopicListFromBroker, pool: poolAdmin, serve: b.getSystemTopics},
		{code: remoting.GetConsumerRunningInfo, pool: poolAdmin, serve: b.relayToConsumer},
		{code: remoting.ConsumeMessageDirectly, pool: poolAdmin, serve: b.relayToConsumer},
		{code: remoting.QueryTopicConsumeByWho, pool: poolAdmin, serve: b.queryTopicConsumeByWho},
		{code: remoting.QueryConsumeTimeSpan, pool: poolAdmin, serve: b.queryConsumeTimeSpan},
		{code: remoting.QueryConsumeQueue, pool: poolAdmin, serve: b.queryConsumeQueue},
		{code: remoting.GetProducerConnectionList, pool: poolAdmin, serve: b.getProducerConnectionList},
		{code: remoting.InvokeBrokerToResetOffset, pool: poolAdmin, leader: b.resetOffset},
		{code: remoting.CloneGroupOffset, pool: poolAdmin, leader: b.cloneGroupOffset},

		// Subscription groups (groups.go).
		{code: remoting.UpdateAndCreateSubscriptionGroup, pool: poolAdmin, leader: b.putSubscriptionGroup},
		{code: remoting.DeleteSubscriptionGroup, pool: poolAdmin, leader: b.deleteSubscriptionGroup},
		{code: remoting.GetAllSubscriptionGroupConfig, pool: poolAdmin, serve: b.getAllSubscriptionGroups},
		{code: remoting.GetSubscriptionGroupConfig, pool: poolAdmin, serve: b.getSubscriptionGroup},

		// The raft group (raftadmin.go: 4001–4004, 4010).
		{code: remoting.RaftStatus, pool: poolAdmin, serve: b.raftStatus},
		{code: remoting.RaftRemoveNode, pool: poolAdmin, leader: b.raftRemoveNode},
		{code: remoting.RaftAddNode, pool: poolAdmin, leader: b.raftAddNode},
		{code: remoting.RaftTransferLeader, pool: poolAdmin, leader: b.raftTransferLeader},
		{code: remoting.RaftDrain, pool: poolAdmin, serve: b.raftDrain},

		// Pending work (timer_admin.go).
		{code: remoting.ListPendingTimers, pool: poolAdmin, leader: b.listPendingTimers},
		{code: remoting.ListPendingTransactions, pool: poolAdmin, leader: b.listPendingTransactions},
		{code: remoting.ListPopState, pool: poolAdmin, leader: b.listPopState}, // pop_state.go

		// The group's ACL rules (aclsync.go).
		{code: remoting.UpdateACL, pool: poolAdmin, leader: b.updateACL},
	}
}

// installHandlers registers every row of the table with the server,
// each behind the access check of its code (acl.go). A row naming an unknown pool, no handler or a code twice is a programming
// error New reports.
func (b *Broker) installHandlers() error {
	seen := map[int32]bool{}
	b.local = map[int32]remoting.HandlerFunc{}
	b.localOpen = map[int32]remoting.HandlerFunc{}
	for _, r := range b.handlers() {
		h := r.serve
		if r.leader != nil {
			h = b.leaderOnly(r.leader)
		}
		if _, ok := pools[r.pool]; !ok || h == nil || (r.serve != nil && r.leader != nil) || seen[r.code] {
			return fmt.Errorf("broker: bad handler row for %s (pool %q)", remoting.RequestCodeName(r.code), r.pool)
		}
		seen[r.code] = true
		b.localOpen[r.code] = h
		h, err := b.withACL(r.code, h)
		if err != nil {
			return err
		}
		b.local[r.code] = h
		if r.inline != nil {
			in, err := b.withACLInline(r.code, r.inline)
			if err != nil {
				return err
			}
			b.srv.Handle(r.code, r.pool, inlineHandler{serve: h, inline: in})
			continue
		}
		b.srv.Handle(r.code, r.pool, h)
	}
	return nil
}

// leaderOnly runs h on the leader and forwards the request from any other
// node; h's error becomes the response code through responseFor.
func (b *Broker) leaderOnly(h leaderHandler) remoting.HandlerFunc {
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if !b.group.IsLeader() {
			return b.forwardLeader(ctx, conn, req)
		}
		resp, err := h(ctx, req)
		if err != nil {
			b.log.Info("admin request refused", "peer", remoteString(conn), "code", remoting.RequestCodeName(req.Code), "error", err)
			return errorResponse(req, err)
		}
		return resp
	}
}
