package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// Names and defaults of the RocketMQ send path.
const (
	// autoCreateTopic is the template topic unknown topics are created from
	// (RocketMQ AUTO_CREATE_TOPIC_KEY_TOPIC).
	autoCreateTopic = "TBW102"
	retryPrefix     = protocol.RetryTopicPrefix
	dlqPrefix       = protocol.DLQTopicPrefix
	// defaultMaxReconsumeTimes is RocketMQ's retryMaxTimes of a group.
	defaultMaxReconsumeTimes = 16
	defaultRegion            = "DefaultRegion"
	// proposeTimeout bounds one send's replication on the leader (a
	// send's bound may be up to proposeBoundGrain longer: sendbound.go).
	proposeTimeout = 10 * time.Second
	// forwardTimeout bounds a follower's forwarding of a request to the
	// leader; the Go client's send timeout is 3 s.
	forwardTimeout = 3 * time.Second
	// extForwardedFrom marks a request a follower forwarded to the leader.
	// Its value is the producer's address (the born host), since the
	// leader sees only the follower's connection.
	extForwardedFrom = "ledgermqForwardedFrom"
	// extForwardHops counts the relays of a forwarded request; a request
	// forwarded by a node that does not set it counts as one hop, and one
	// that was relayed maxForwardHops times is refused (no loops while
	// views of the leader disagree).
	extForwardHops = "ledgermqForwardHops"
	maxForwardHops = 3
)

// forwardHops is how many times req has been relayed.
func forwardHops(req *remoting.Command) int {
	if _, ok := req.Ext(extForwardedFrom); !ok {
		return 0
	}
	v, _ := req.Ext(extForwardHops)
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// validateTopic checks a topic name as RocketMQ's TopicValidator does
// (protocol.ValidateTopic: 1 to 127 bytes of [%|a-zA-Z0-9_-]).
func validateTopic(topic string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return nil
}

// sendListCodes are the sends whose ext fields the remoting server leaves
// in a list (remoting.ServerConfig.ListCodes) where no ACL reads them: the
// send path reads them with Ext and parseSendHeader, which saves building
// a map of fourteen fields per message.
var sendListCodes = []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage}

// listCodes is the server's ListCodes: sendListCodes, or none where the
// ACL is on (it reads a request's fields as a map).
func listCodes(cfg Config) []int32 {
	if cfg.ACLEnable {
		return nil
	}
	return sendListCodes
}

// sendHeader is a decoded send request header: protocol's, the one our
// client encodes, so the two sides cannot drift. SEND_MESSAGE (10) uses
// the long field names, SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320)
// the one-letter names of SendMessageRequestHeaderV2.
type sendHeader = protocol.SendMessageRequestHeader

// parseSendHeader decodes the header of a send request, from its map or,
// when it has none, its list (sendListCodes). Required (as Java's
// @CFNotNull): producerGroup, topic, defaultTopic, defaultTopicQueueNums,
// queueId, sysFlag, bornTimestamp, flag. Errors wrap ErrBadRequest and
// protocol's cause, and name the field.
func parseSendHeader(req *remoting.Command) (sendHeader, error) {
	var h sendHeader
	var err error
	if req.ExtFields == nil && req.ExtList != nil {
		h, err = protocol.DecodeSendRequestHeaderList(req.Code, req.ExtList)
	} else {
		h, err = protocol.DecodeSendRequestHeader(req.Code, req.ExtFields)
	}
	if err != nil {
		return sendHeader{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return h, nil
}

// serveSend runs on a send-pool worker. The leader stores the message(s);
// any other node forwards the request to the leader.
func (b *Broker) serveSend(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.group.IsLeader() {
		// A new leader before its barrier sends once it is writable; a
		// follower forwards to the leader it knows.
		return b.sendWhenLed(ctx, conn, req, fmt.Errorf("%w: node %s is not the leader", ErrNoLeader, b.cfg.NodeID))
	}
	resp, err := b.send(ctx, conn, req)
	return b.sendOutcome(ctx, conn, req, resp, err)
}

// sendOutcome answers a send the leader served (resp) or refused (err).
func (b *Broker) sendOutcome(ctx context.Context, conn *remoting.Conn, req, resp *remoting.Command, err error) *remoting.Command {
	if err != nil && leadershipMoving(err) {
		// Refused before it was proposed because leadership is moving (a
		// transfer, a drain): nothing was stored, so the send waits for
		// the group's next writable leader instead of failing a client
		// that routes here until its next route poll.
		return b.sendWhenLed(ctx, conn, req, err)
	}
	if err != nil {
		b.log.Debug("send refused", "peer", remoteString(conn), "code", req.Code, "error", err)
		return errorResponse(req, err)
	}
	return resp
}

// serveSendInline starts a send on the connection's read goroutine
// (remoting.InlineHandler), so a send hands no request to a worker: on
// the leader it reads the request, builds the messages, proposes them and
// returns; the group's completer builds the answer of every send an entry
// carried and queues it on its connection. It takes no send that must
// wait for something — a follower's forward, a topic to create, a half
// message (it holds the transaction view across its proposal):
// prepareSend answers errWouldWait for those before anything is proposed,
// and a send worker serves them (serveSend).
func (b *Broker) serveSendInline(ctx context.Context, conn *remoting.Conn, req *remoting.Command, reply remoting.Reply) bool {
	if !b.group.IsLeader() {
		return false
	}
	p, err := b.prepareSend(ctx, conn, req)
	if errors.Is(err, errWouldWait) || (err == nil && p.half) {
		return false
	}
	if err != nil {
		b.replyOutcome(ctx, conn, req, nil, err, reply)
		return true
	}
	b.group.ProposeSendAsync(p.msgs, p.window, func(results []store.PutResult, err error) {
		var resp *remoting.Command
		if err == nil {
			resp, err = b.sendAnswer(req, p, results)
		}
		b.replyOutcome(ctx, conn, req, resp, err, reply)
	})
	return true
}

// replyOutcome answers through reply what sendOutcome answers; the wait
// for the next leader (at most leaderWait) runs on a goroutine of its
// own, never on the caller's (a connection's read goroutine, or the
// completer, which answers every connection).
func (b *Broker) replyOutcome(ctx context.Context, conn *remoting.Conn, req, resp *remoting.Command, err error, reply remoting.Reply) {
	if err != nil && leadershipMoving(err) {
		// The send may then be served again here: it may wait.
		ctx := remoting.Detached(ctx)
		go func() { reply(b.sendOutcome(ctx, conn, req, nil, err)) }()
		return
	}
	reply(b.sendOutcome(ctx, conn, req, resp, err))
}

// errWouldWait: the step must wait and its caller cannot (mustNotWait).
var errWouldWait = errors.New("broker: the request must wait for the group")

// mustNotWait reports whether ctx is a send's read on a connection's read
// goroutine (serveSendInline): a step of prepareSend that would wait — a
// topic to create, the transaction view to rebuild — answers errWouldWait
// instead, and the send goes to a worker.
func mustNotWait(ctx context.Context) bool { return remoting.Inline(ctx) }

// leadershipMoving: the leader refused a proposal before proposing it
// because it is no longer, or is about to stop being, the leader.
func leadershipMoving(err error) bool {
	return errors.Is(err, dledger.ErrNotLeader) || errors.Is(err, dledger.ErrNotReady)
}

// leaderWait bounds how long a request waits for the group to have a
// writable leader: about one election at the default timing, well inside
// the standard client's 3 s send timeout.
const leaderWait = 1500 * time.Millisecond

// leaderRecheck: a request waiting for a writable leader is retried at
// every role event of the group (RoleChanged), and at this period besides,
// for a leader that refused it while its role stayed the same.
const leaderRecheck = 50 * time.Millisecond

// sendWhenLed waits up to leaderWait for a writable leader: this node
// (the send is stored here) or another (the send is forwarded). last is
// the refusal answered when neither comes.
func (b *Broker) sendWhenLed(ctx context.Context, conn *remoting.Conn, req *remoting.Command, last error) *remoting.Command {
	wait, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	t := time.NewTicker(leaderRecheck)
	defer t.Stop()
	for {
		changed := b.group.RoleChanged()
		if b.group.IsLeader() {
			resp, err := b.send(ctx, conn, req)
			if err == nil {
				return resp
			}
			if !leadershipMoving(err) {
				b.log.Debug("send refused", "peer", remoteString(conn), "code", req.Code, "error", err)
				return errorResponse(req, err)
			}
			last = err
		} else if addr := b.otherLeaderAddr(); addr != "" {
			return b.forward(ctx, conn, req, addr)
		}
		select {
		case <-wait.Done():
			b.log.Debug("send refused: no writable leader came", "peer", remoteString(conn), "error", last)
			return errorResponse(req, last)
		case <-changed:
		case <-t.C:
		}
	}
}

// otherLeaderAddr is the client-facing address of the leader when it is
// another node, else "".
func (b *Broker) otherLeaderAddr() string {
	if addr := b.leaderAddr(); addr != "" && addr != b.cfg.AdvertiseAddr {
		return addr
	}
	return ""
}

// forwardLeader waits up to leaderWait for another node to be known as
// leader and forwards req to it (admin requests served only by the
// leader).
func (b *Broker) forwardLeader(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	wait, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	t := time.NewTicker(leaderRecheck)
	defer t.Stop()
	for {
		changed := b.group.RoleChanged()
		if addr := b.otherLeaderAddr(); addr != "" && !b.group.IsLeader() {
			return b.forward(ctx, conn, req, addr)
		}
		select {
		case <-wait.Done():
			return errorResponse(req, fmt.Errorf("%w: node %s knows no writable leader", ErrNoLeader, b.cfg.NodeID))
		case <-changed:
		case <-t.C:
		}
	}
}

// forward relays req to the leader at addr and returns the leader's
// answer, which the server sends back with req's opaque. A request is
// relayed at most maxForwardHops times (views of the leader may disagree
// while leadership moves; the count ends any loop). Too many hops or a
// failed call answers SERVICE_NOT_AVAILABLE (14), which clients retry.
func (b *Broker) forward(ctx context.Context, conn *remoting.Conn, req *remoting.Command, addr string) *remoting.Command {
	hops := forwardHops(req)
	if hops >= maxForwardHops {
		return errorResponse(req, fmt.Errorf("%w: node %s received a request forwarded %d times but is not the leader", ErrNoLeader, b.cfg.NodeID, hops))
	}
	fwd := *req
	fwd.ExtFields, fwd.ExtList = maps.Clone(req.ExtMap()), nil
	if fwd.ExtFields == nil {
		fwd.ExtFields = make(map[string]string, 2)
	}
	if _, ok := req.Ext(extForwardedFrom); !ok {
		fwd.ExtFields[extForwardedFrom] = remoteString(conn)
	}
	fwd.ExtFields[extForwardHops] = strconv.Itoa(hops + 1)
	// The relay waits for the leader's answer even when the client wants
	// none (a one-way UPDATE_CONSUMER_OFFSET sent to a follower).
	fwd.Flag &^= remoting.FlagOneway
	b.signNode(&fwd)
	cctx, cancel := context.WithTimeout(ctx, forwardTimeout+forwardWait(req))
	defer cancel()
	resp, err := b.client.Invoke(cctx, addr, &fwd)
	if err != nil {
		// Only a relay that never connected certainly did not reach the
		// leader (SERVICE_NOT_AVAILABLE: retry elsewhere, nothing stored);
		// one that fails after the request was written may have been
		// stored, so the answer is SYSTEM_ERROR, an unknown outcome.
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return errorResponse(req, fmt.Errorf("%w: forwarding to leader %s: %v", ErrNoLeader, addr, err))
		}
		return errorResponse(req, fmt.Errorf("%w: forwarding to leader %s: %v", dledger.ErrOutcomeUnknown, addr, err))
	}
	out := *resp
	out.Opaque = req.Opaque
	out.Flag = remoting.FlagResponse
	return &out
}

// readSendRequest decodes a send's (or a reply's) header and properties and
// checks what every send is checked for: the topic's name (not a reserved
// one), the body's and the properties' sizes.
func (b *Broker) readSendRequest(req *remoting.Command) (protocol.SendMessageRequestHeader, map[string]string, error) {
	h, p, err := b.readSend(req)
	return h, p.m, err
}

// readSend is readSendRequest with the properties as readProperties reads
// them for splicing the cluster's name in.
func (b *Broker) readSend(req *remoting.Command) (protocol.SendMessageRequestHeader, sendProps, error) {
	h, err := parseSendHeader(req)
	if err != nil {
		return h, sendProps{}, err
	}
	if err := validateTopic(h.Topic); err != nil {
		return h, sendProps{}, err
	}
	if h.Topic == autoCreateTopic || systemTopics[h.Topic] {
		return h, sendProps{}, fmt.Errorf("%w: the topic[%s] is conflict with system reserved words", ErrInvalidParameter, h.Topic)
	}
	if limit := b.maxMessageSize(); len(req.Body) > limit {
		return h, sendProps{}, fmt.Errorf("%w: the message body size %d is over the max value %d", ErrMessageIllegal, len(req.Body), limit)
	}
	if len(h.Properties) > message.MaxPropertiesLength {
		return h, sendProps{}, fmt.Errorf("%w: properties of %d bytes are longer than %d", ErrMessageIllegal, len(h.Properties), message.MaxPropertiesLength)
	}
	p, err := readProperties(h.Properties, message.PropertyCluster)
	if err != nil {
		return h, sendProps{}, fmt.Errorf("%w: %w", ErrMessageIllegal, err)
	}
	return h, p, nil
}

// send stores the message or batch of req on this leader and builds the
// success response.
func (b *Broker) send(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	p, err := b.prepareSend(ctx, conn, req)
	if err != nil {
		return nil, err
	}
	return b.proposeSend(ctx, conn, req, p)
}

// sendPlan is a send request read, checked and turned into the messages
// to propose.
type sendPlan struct {
	start time.Time
	h     sendHeader
	msgs  []*message.Ext
	// one and ext are msgs of a single message, and enc its encoded
	// properties when they fit: the plan, the message and its
	// properties' bytes are one allocation.
	one [1]*message.Ext
	ext message.Ext
	enc [sendPlanProps]byte
	// answerQueue is the queue id the answer names (the producer's, also
	// when the message is parked in another topic).
	answerQueue int32
	half        bool
	// parked: the message waits in another topic (delay, timer, half);
	// window: the send's duplicate window (duplicates.go).
	parked bool
	window time.Duration
	// recallTopic and recallDue: a single message parked as a timer (not
	// for a retry topic), whose answer carries its recall handle
	// (recall.go), as Java's SendMessageProcessor answers it.
	recallTopic string
	recallDue   int64
}

// sendPlanProps is room for the encoded properties of most messages
// (a UNIQ_KEY, tags, keys and the cluster's name take about 100 bytes);
// longer ones take a slice of their own.
const sendPlanProps = 192

// proposeSend proposes p and waits for its answer.
func (b *Broker) proposeSend(ctx context.Context, conn *remoting.Conn, req *remoting.Command, p *sendPlan) (*remoting.Command, error) {
	pctx, cancel := b.bounds.get(ctx, conn, p.start)
	defer cancel()
	if p.half {
		// No rebuild of the transaction view between this proposal and
		// halfStored (txnview.go).
		b.txn.view.RLock()
		defer b.txn.view.RUnlock()
	}
	results, err := b.group.ProposeSend(pctx, p.msgs, p.window)
	if err != nil {
		return nil, err
	}
	return b.sendAnswer(req, p, results)
}

// prepareSend reads a send request and builds its messages: the topic
// (created when allowed), the queue, retry and dead-letter topics, delay,
// timer and half-message parking, a batch's messages.
func (b *Broker) prepareSend(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*sendPlan, error) {
	start := time.Now()
	h, sp, err := b.readSend(req)
	if err != nil {
		return nil, err
	}
	props := sp.m
	batch := h.Batch || req.Code == remoting.SendBatchMessage
	// The checks of properties the send does not hold are skipped: each
	// answers nothing and changes nothing without them.
	fwdFrom, fwd := req.Ext(extForwardedFrom)
	if !batch && !fwd && sp.seen&seenReplyTo != 0 {
		b.consumers.noteRequest(conn, props) // requesters.go
	}
	// A timer message (timer.go) waits in the timer topic; a timer batch
	// or half message is refused rather than delivered early.
	var due int64
	var timed bool
	if sp.seen&seenTimer != 0 {
		if due, timed, err = b.timerDue(props); err != nil {
			return nil, err
		}
	}
	if timed && batch {
		return nil, fmt.Errorf("%w: a batch cannot be a timer message; send timer messages one by one", ErrMessageIllegal)
	}
	if timed && message.TransactionType(h.SysFlag) == message.SysFlagTransactionPrepared {
		return nil, fmt.Errorf("%w: a transaction's half message cannot be a timer message", ErrMessageIllegal)
	}
	if batch && strings.HasPrefix(h.Topic, retryPrefix) {
		return nil, fmt.Errorf("%w: batch request does not support retry group %s", ErrMessageIllegal, h.Topic)
	}
	topic := h.Topic
	tc, err := b.topicForSend(ctx, &h)
	if err != nil {
		return nil, err
	}
	queueID, err := chooseQueue(tc, h.QueueID)
	if err != nil {
		return nil, err
	}
	deadLettered := false
	if !batch && strings.HasPrefix(topic, retryPrefix) {
		if dlq, ok := b.deadLetter(&h); ok {
			if tc, err = b.createTopic(ctx, metadata.TopicConfig{TopicName: dlq, ReadQueueNums: 1, WriteQueueNums: 1,
				Perm: metadata.PermRead | metadata.PermWrite}); err != nil {
				return nil, err
			}
			topic, queueID, deadLettered = tc.TopicName, 0, true
		}
	}
	// The answer names the queue the producer's message is for, even when
	// it is parked below: Java answers the topic's queue id (with the
	// parked copy's msgId and queue offset), and clients build the
	// SendResult's MessageQueue from it and the message's own topic.
	answerQueue := queueID
	// A delayed message waits in the schedule topic (delay.go); a delayed
	// batch was refused above rather than delivered early.
	// Parking rewrites props; a message that is not parked keeps the
	// producer's properties, and their encoding (newExt).
	parked := false
	var recallTopic string
	level := 0
	if sp.seen&seenDelay != 0 {
		level = b.delayLevelOf(props, h.SysFlag)
	}
	if !batch && !deadLettered && level > 0 {
		if topic, queueID, err = b.park(ctx, level, topic, queueID, props); err != nil {
			return nil, err
		}
		parked = true
	} else if timed && !deadLettered {
		if !batch && !strings.HasPrefix(topic, retryPrefix) {
			recallTopic = topic
		}
		if topic, queueID, err = b.parkTimer(ctx, due, topic, queueID, props); err != nil {
			return nil, err
		}
		parked = true
	}
	// A half message waits in the half topic for its END_TRANSACTION
	// (transaction.go).
	half := message.TransactionType(h.SysFlag) == message.SysFlagTransactionPrepared
	if half && mustNotWait(ctx) {
		return nil, errWouldWait
	}
	if half {
		if batch {
			return nil, fmt.Errorf("%w: a batch cannot be a transaction's half message", ErrMessageIllegal)
		}
		if topic, queueID, err = b.parkHalf(ctx, &h, topic, queueID, props); err != nil {
			return nil, err
		}
		parked = true
	}

	born := bornHostOf(conn, fwdFrom, fwd)
	var msgs []*message.Ext
	if batch {
		items, err := decodeBatch(req.Body)
		if err != nil {
			return nil, err
		}
		msgs = make([]*message.Ext, len(items))
		exts := make([]message.Ext, len(items))
		for i, it := range items {
			p := it.Properties
			if _, timed, err := b.timerDue(p); err != nil {
				return nil, err
			} else if timed {
				return nil, fmt.Errorf("%w: a batch cannot hold timer messages; send them one by one", ErrMessageIllegal)
			}
			if b.delayLevelOf(p, h.SysFlag) > 0 || level > 0 {
				return nil, fmt.Errorf("%w: a batch cannot be delayed; send delayed messages one by one", ErrMessageIllegal)
			}
			for k, v := range props {
				if _, own := p[k]; !own {
					p[k] = v
				}
			}
			b.fillExt(&exts[i], &h, topic, queueID, born, it.Flag, it.Body, p)
			msgs[i] = &exts[i]
		}
	} else {
		p := &sendPlan{start: start, h: h, answerQueue: answerQueue, half: half, recallTopic: recallTopic, recallDue: due,
			parked: parked, window: b.sendWindow(tc)}
		m := &p.ext
		b.fillExt(m, &h, topic, queueID, born, h.Flag, req.Body, props)
		if !parked {
			// Propose stores the producer's properties string with the
			// cluster's name spliced in, rather than encoding the map
			// again, when the two are the same bytes.
			if enc, ok := sp.appendWith(p.enc[:0], h.Properties, message.PropertyCluster, b.cfg.ClusterName); ok {
				m.SetEncodedProperties(enc)
			}
		}
		p.one[0] = m
		p.msgs = p.one[:]
		return p, nil
	}
	return &sendPlan{start: start, h: h, msgs: msgs, answerQueue: answerQueue, half: half, window: b.sendWindow(tc)}, nil
}

// sendAnswer records a stored send and builds its answer.
func (b *Broker) sendAnswer(req *remoting.Command, p *sendPlan, results []store.PutResult) (*remoting.Command, error) {
	msgs := p.msgs
	if len(results) != len(msgs) {
		return nil, fmt.Errorf("broker: %d results for %d messages", len(results), len(msgs))
	}
	b.prod.putTotal.Add(int64(len(msgs)))
	answerQueue := p.answerQueue
	if results[0].Duplicate && !p.parked {
		// The first store may have gone to another queue (a producer
		// picks one per attempt): the answer names where it is.
		answerQueue = results[0].QueueID
	}
	bodies := 0
	for _, m := range msgs {
		bodies += len(m.Body)
	}
	b.obs.Stored(p.h.Topic, len(msgs), bodies, time.Since(p.start))
	b.stats.stored(b.cfg.ClusterName, p.h.Topic, len(msgs), bodies)
	if p.half {
		b.halfStored(msgs[0].UniqKey(), results[0].QueueOffset)
	}

	rh := protocol.SendMessageResponseHeader{QueueID: answerQueue, QueueOffset: results[0].QueueOffset,
		Region: defaultRegion, TraceOn: true, DedupWindowMs: b.dupSpan(p.window).Milliseconds(), Duplicate: results[0].Duplicate}
	if len(results) == 1 {
		// strings.Join of one would do the same, after two slices.
		rh.MsgID, rh.TransactionID = results[0].MsgID, msgs[0].UniqKey()
		if p.recallTopic != "" {
			rh.RecallHandle = protocol.NewRecallHandle(p.recallTopic, b.cfg.BrokerName, p.recallDue, rh.TransactionID).String()
		}
	} else {
		ids := make([]string, len(results))
		keys := make([]string, len(msgs))
		for i, r := range results {
			ids[i] = r.MsgID
			keys[i] = msgs[i].UniqKey()
		}
		rh.MsgID, rh.TransactionID = strings.Join(ids, ","), strings.Join(keys, ",")
	}
	return newSendResponse(req, &rh), nil
}

// newExt builds one message to propose; the leader's Propose stamps the
// store time, store host and a missing UNIQ_KEY.
func (b *Broker) newExt(h *sendHeader, topic string, queueID int32, born netip.AddrPort, flag int32, body []byte, props map[string]string) *message.Ext {
	m := new(message.Ext)
	b.fillExt(m, h, topic, queueID, born, flag, body, props)
	return m
}

// fillExt is newExt into m, a zero Ext.
func (b *Broker) fillExt(m *message.Ext, h *sendHeader, topic string, queueID int32, born netip.AddrPort, flag int32, body []byte, props map[string]string) {
	if props == nil {
		props = map[string]string{}
	}
	props[message.PropertyCluster] = b.cfg.ClusterName
	m.Message = message.Message{Topic: topic, Flag: flag, Body: body, Properties: props}
	m.QueueID = queueID
	m.SysFlag = h.SysFlag &^ (message.SysFlagBornHostV6 | message.SysFlagStoreHostV6)
	m.BornTimestamp = h.BornTimestamp
	m.BornHost = born
	m.ReconsumeTimes = h.ReconsumeTimes
}

// chooseQueue validates the requested queue id against the topic, as
// Java's msgCheck: an id at or above max(read, write) queues is
// INVALID_PARAMETER; a negative id picks a writable queue at random (Java's
// sendMessage does the same).
func chooseQueue(tc metadata.TopicConfig, queueID int32) (int32, error) {
	valid := max(tc.WriteQueueNums, tc.ReadQueueNums)
	if queueID >= valid {
		return 0, fmt.Errorf("%w: request queueId[%d] is illegal, topic %s has %d queues", ErrInvalidParameter, queueID, tc.TopicName, valid)
	}
	if queueID < 0 {
		n := tc.WriteQueueNums
		if n <= 0 {
			return 0, fmt.Errorf("%w: topic %s has no writable queue", ErrInvalidParameter, tc.TopicName)
		}
		queueID = rand.Int32N(n)
	}
	return queueID, nil
}

// topicForSend returns the config of the send's topic, creating it when it
// is unknown: a %RETRY% topic with one queue, any other from the template
// named by defaultTopic (TBW102) when the template carries PERM_INHERIT.
// A topic without PERM_WRITE is NO_PERMISSION.
func (b *Broker) topicForSend(ctx context.Context, h *sendHeader) (metadata.TopicConfig, error) {
	tc, ok := b.group.Metadata().Topic(h.Topic)
	if !ok {
		want, err := b.autoCreateConfig(h)
		if err != nil {
			return metadata.TopicConfig{}, err
		}
		if tc, err = b.createTopic(ctx, want); err != nil {
			return metadata.TopicConfig{}, err
		}
	}
	if tc.Perm&metadata.PermWrite == 0 {
		return metadata.TopicConfig{}, fmt.Errorf("%w: the topic[%s] sending message is forbidden", ErrNoPermission, tc.TopicName)
	}
	return tc, nil
}

// createTopic is ensureTopic for the paths that create topics on their own
// (auto-create on send, %RETRY%, %DLQ%, the schedule topic): a name that is
// not a valid topic is refused here, before anything is proposed, so no
// topic over the 127-byte limit is ever created.
func (b *Broker) createTopic(ctx context.Context, want metadata.TopicConfig) (metadata.TopicConfig, error) {
	if err := validateTopic(want.TopicName); err != nil {
		return metadata.TopicConfig{}, err
	}
	return b.ensureTopic(ctx, want)
}

// autoCreateConfig is the config an unknown topic gets on first send.
func (b *Broker) autoCreateConfig(h *sendHeader) (metadata.TopicConfig, error) {
	if strings.HasPrefix(h.Topic, retryPrefix) {
		return metadata.TopicConfig{TopicName: h.Topic, ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}, nil
	}
	tmpl, ok := b.topicConfig(h.DefaultTopic)
	if !ok || tmpl.Perm&metadata.PermInherit == 0 {
		return metadata.TopicConfig{}, fmt.Errorf("%w: topic[%s] not exist, apply first please", ErrTopicNotExist, h.Topic)
	}
	n := tmpl.WriteQueueNums
	if h.DefaultTopicQueueNums > 0 {
		n = min(n, h.DefaultTopicQueueNums)
	}
	if n <= 0 {
		return metadata.TopicConfig{}, fmt.Errorf("%w: template %s has no queues for topic[%s]", ErrTopicNotExist, h.DefaultTopic, h.Topic)
	}
	filter := tmpl.TopicFilterType
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	return metadata.TopicConfig{TopicName: h.Topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: tmpl.Perm &^ metadata.PermInherit, TopicFilterType: filter}, nil
}

// deadLetter decides whether a message sent to a %RETRY% topic has been
// retried enough to go to the group's %DLQ% topic instead (Java's
// handleRetryAndDLQ). The header's maxReconsumeTimes counts when it is
// positive, else the group's retryMaxTimes, else 16.
func (b *Broker) deadLetter(h *sendHeader) (string, bool) {
	group := strings.TrimPrefix(h.Topic, retryPrefix)
	if h.ReconsumeTimes < b.maxReconsumeTimes(group, h.MaxReconsumeTimes) {
		return "", false
	}
	return dlqPrefix + group, true
}

// maxReconsumeTimes is how often a group's message is retried before it
// goes to the DLQ: the request's value when positive, else the group's
// retryMaxTimes, else 16.
func (b *Broker) maxReconsumeTimes(group string, requested int32) int32 {
	if requested > 0 {
		return requested
	}
	if g, ok := b.group.Metadata().Group(group); ok && g.RetryMaxTimes > 0 {
		return g.RetryMaxTimes
	}
	return defaultMaxReconsumeTimes
}

// bornHost is the producer's address: the connection's peer, or, for a
// request a follower forwarded, the address the follower recorded.
func bornHost(conn *remoting.Conn, req *remoting.Command) netip.AddrPort {
	v, ok := req.Ext(extForwardedFrom)
	return bornHostOf(conn, v, ok)
}

// bornHostOf is bornHost of a request whose extForwardedFrom is v (when
// fwd).
func bornHostOf(conn *remoting.Conn, v string, fwd bool) netip.AddrPort {
	if fwd {
		if ap, err := netip.ParseAddrPort(v); err == nil {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	if conn == nil {
		return netip.AddrPort{}
	}
	if ta, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// remoteString is the peer's address for logs and forwarding.
func remoteString(conn *remoting.Conn) string {
	if conn == nil || conn.RemoteAddr() == nil {
		return ""
	}
	return conn.RemoteAddr().String()
}
