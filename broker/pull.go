package broker

// PULL_MESSAGE (11) and long polling.
//
// A pull is answered from the node's store, on the leader and on followers
// alike (the store holds committed data only). Store statuses map to codes
// as Java's PullMessageProcessor maps them, with two refinements marked (*):
//
//	store status          leader                       follower
//	--------------------  ---------------------------  ---------------------------
//	Found                 0, body = records            same
//	OffsetOverflowOne     hold, then 19                same
//	NoMessageInQueue      offset 0: hold, then 19      same
//	                      else 21 → 0
//	NoMatchedMessage      20 → past the filtered (*)   same
//	OffsetFoundNull       19 → past the gone units (*) same
//	OffsetTooSmall        21 → min                     20, offset kept, suggest 0
//	OffsetOverflowBadly   21 → max                     20, offset kept, suggest 0
//
// (*) When the units scanned reach the queue's end (nothing left to scan),
// a suspendable pull is held at the advanced offset instead of being
// answered at once, saving the client a round trip that Java makes it take;
// nextBeginOffset always moves past what was skipped.
//
// Followers keep the requested offset on 21-class statuses (Java's
// offsetCheckInSlave=false) and point the client at the leader
// (suggestWhichBrokerId 0): a follower that lags must not move a consumer.
//
// Long polling (longpoll.go): a held pull waits in the pullHolder, indexed
// by queue, until the store's dispatch hook (Hooks.OnDispatch) reports a max offset beyond the pull's offset (then a
// worker re-runs the read; if the filter still matches nothing the pull is
// held again at the advanced offset) or until its deadline
// (suspendTimeoutMillis, capped at maxPullHold) passes, when it is answered
// 19. At most maxHeldPulls wait; beyond that a pull is answered 19 at once.
// Held pulls of a closed connection are dropped; on Close every held pull is
// answered 19.
//
// An in-process caller (ServeLocal, the gRPC port) has no connection: its
// pull is never held, unless it asks through ServeLocalWait, which waits
// on the caller's goroutine for the holder's answer (a localPull: the
// answer goes to a channel instead of a connection) and drops the hold
// when the caller's context ends. Such pulls share maxHeldPulls and the
// workers with the remoting port's.
//
// Wire format (ext values are decimal strings; protocol/doc.go):
//
//	request ext           meaning
//	--------------------  ------------------------------------------------
//	consumerGroup, topic  required
//	queueId, queueOffset  required; where to read
//	maxMsgNums            required; capped at maxPullMsgNums
//	sysFlag               required; 1 commitOffset, 2 suspend,
//	                      4 subscription in header, 8 class filter (ignored)
//	commitOffset          required; stored when sysFlag has 1
//	suspendTimeoutMillis  required; the hold when sysFlag has 2
//	subscription          optional; used when sysFlag has 4, else the
//	                      heartbeat's, else "*"
//	subVersion            optional; not compared (no SUBSCRIPTION_NOT_LATEST)
//	expressionType        optional; "TAG" or empty, anything else answers 1
//
//	response ext          nextBeginOffset, minOffset, maxOffset,
//	                      suggestWhichBrokerId ("0")
//	response body (0)     the matching stored records, concatenated as
//	                      they are in the CommitLog (message/doc.go)
//
// Tag filtering is two-staged: the store skips units whose tag hash is not
// in the subscription's set; the broker then checks each returned record's
// TAGS exactly (hashes collide) and leaves out the ones that do not match,
// still advancing nextBeginOffset past them.

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// PullSysFlag bits of the PULL_MESSAGE header.
const (
	pullFlagCommitOffset = protocol.PullFlagCommitOffset
	pullFlagSuspend      = protocol.PullFlagSuspend
	pullFlagSubscription = protocol.PullFlagSubscription
	pullFlagClassFilter  = protocol.PullFlagClassFilter
)

const (
	// maxPullHold caps a held pull, below the client's 30 s pull timeout.
	maxPullHold = 25 * time.Second
	// shortPullHold is used when the header asks for no timeout but sets
	// the suspend flag (Java shortPollingTimeMills).
	shortPullHold = time.Second
	// maxHeldPulls bounds the pulls waiting at once.
	maxHeldPulls = 10000
	// pullWorkers re-run woken pulls.
	pullWorkers = 4
	// maxPullMsgNums caps maxMsgNums (the store also caps the bytes).
	maxPullMsgNums = 1024
)

// pullHeader is protocol's PULL_MESSAGE header, the one our client
// encodes.
type pullHeader = protocol.PullMessageRequestHeader

// parsePullHeader reads a PULL_MESSAGE header (protocol's rules: Java's
// @CFNotNull fields required; subscription, subVersion and expressionType
// optional). Errors wrap ErrBadRequest; no input makes it panic.
func parsePullHeader(ext map[string]string) (pullHeader, error) {
	var h pullHeader
	if err := h.Decode(ext); err != nil {
		return pullHeader{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return h, nil
}

// pullKey names one queue.
type pullKey struct {
	topic   string
	queueID int32
}

// pullRequest is one pull being served or held.
type pullRequest struct {
	// conn is where the answer of a held pull is written; nil for an
	// in-process caller, whose answer goes to local.
	conn     *remoting.Conn
	local    *localPull
	req      *remoting.Command
	group    string
	arrived  time.Time
	key      pullKey
	offset   int64 // where the next read starts; advances past filtered units
	maxNums  int
	filter   msgFilter
	deadline time.Time
	heapIdx  int // position in pullHolder.byDeadline; -1 when not held
}

// localPull is where a held pull of an in-process caller
// (ServeLocalWait) is answered: ch, which the caller waits on until ctx
// ends. The handler records the pull it held (p) and the offset it was
// held at, for the caller to drop it and answer it itself when ctx ends.
type localPull struct {
	ctx    context.Context
	ch     chan *remoting.Command // capacity 1: a pull is answered once
	p      *pullRequest
	offset int64
}

type localPullKey struct{}

// localPullOf is the localPull ServeLocalWait put in ctx, nil if none.
func localPullOf(ctx context.Context) *localPull {
	l, _ := ctx.Value(localPullKey{}).(*localPull)
	return l
}

// gone reports whether nobody waits for p's answer any more: its
// connection closed, or its in-process caller's context ended.
func (p *pullRequest) gone() bool {
	if p.local != nil {
		return p.local.ctx.Err() != nil
	}
	return p.conn.Closed()
}

// handlePull serves PULL_MESSAGE (11). It answers at once, or parks the
// request in the pullHolder and returns nil (the answer is written later).
func (b *Broker) handlePull(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := parsePullHeader(req.ExtFields)
	if err != nil {
		return errorResponse(req, err)
	}
	// A group that could not hold retries is refused here too: its pulls
	// would commit offsets for a group that can never consume correctly.
	if err := validateGroup(h.ConsumerGroup); err != nil {
		return errorResponse(req, err)
	}
	md := b.group.Metadata()
	gcfg, ok := md.Group(h.ConsumerGroup)
	switch {
	case !ok && !b.cfg.AutoCreateSubscriptionGroup:
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("subscription group [%s] does not exist", h.ConsumerGroup))
	case ok && !gcfg.ConsumeEnable:
		return errorResponse(req, fmt.Errorf("%w: subscription group %s: consume disabled", ErrNoPermission, h.ConsumerGroup))
	}
	tc, ok := md.Topic(h.Topic)
	if !ok {
		return errorResponse(req, fmt.Errorf("%w: topic[%s] not exist, apply first please", ErrTopicNotExist, h.Topic))
	}
	if tc.Perm&metadata.PermRead == 0 {
		return errorResponse(req, fmt.Errorf("%w: topic %s is not readable", ErrNoPermission, h.Topic))
	}
	if h.QueueID < 0 || h.QueueID >= max(tc.ReadQueueNums, tc.WriteQueueNums) {
		return errorResponse(req, fmt.Errorf("%w: queueId %d out of range [0, %d) of topic %s",
			ErrInvalidParameter, h.QueueID, max(tc.ReadQueueNums, tc.WriteQueueNums), h.Topic))
	}
	// The request's own subscription when it carries one (pull
	// consumers), else the one the group's heartbeat registered, else all.
	f := msgFilter{tags: store.NewTagFilter("*")}
	if h.SysFlag&pullFlagSubscription != 0 {
		if f, err = newMsgFilter(h.Subscription, h.ExpressionType, !b.cfg.DisablePropertyFilter); err != nil {
			return errorResponse(req, err)
		}
	} else if s, ok := b.consumers.subscription(h.ConsumerGroup, h.Topic); ok {
		if s.err != nil {
			return errorResponse(req, s.err)
		}
		f = s.filter
	}
	if h.SysFlag&pullFlagCommitOffset != 0 && h.CommitOffset >= 0 {
		b.offsets.commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, "")
	}
	p := &pullRequest{
		conn:    conn,
		req:     req,
		group:   h.ConsumerGroup,
		arrived: time.Now(),
		key:     pullKey{h.Topic, h.QueueID},
		offset:  h.QueueOffset,
		maxNums: int(min(max(h.MaxMsgNums, 1), maxPullMsgNums)),
		filter:  f,
		heapIdx: -1,
	}
	// An in-process caller without a connection has nowhere a held pull
	// could be answered later (ServeLocal): its pulls are answered at
	// once, unless it waits for the answer itself (ServeLocalWait).
	if conn == nil {
		p.local = localPullOf(ctx)
	}
	suspend := h.SysFlag&pullFlagSuspend != 0 && (conn != nil || p.local != nil)
	if suspend {
		hold := time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
		if h.SuspendTimeoutMillis <= 0 {
			hold = shortPullHold
		}
		p.deadline = time.Now().Add(min(hold, maxPullHold))
	}
	resp, hold := b.pullOnce(p, suspend)
	if !hold {
		return resp
	}
	if p.local != nil {
		// Set before hold: once held, a worker may own p.
		p.local.p, p.local.offset = p, p.offset
	}
	if b.pulls.hold(p) {
		return nil
	}
	if p.local != nil {
		p.local.p = nil
	}
	return b.pullNotFound(p)
}

// pullOnce reads the store once for p. It returns the response, or hold =
// true when the pull should wait for new messages (only if mayHold).
func (b *Broker) pullOnce(p *pullRequest, mayHold bool) (*remoting.Command, bool) {
	st := b.group.Store()
	res, err := st.Get(p.key.topic, p.key.queueID, p.offset, p.maxNums, p.filter.tags)
	if err != nil {
		return errorResponse(p.req, err), false
	}
	defer res.Release()
	leader := b.group.IsLeader()
	resp := func(code int32, next int64) *remoting.Command {
		return pullResponse(p.req, code, next, res.MinOffset, res.MaxOffset)
	}
	switch res.Status {
	case store.Found:
		body, next, n := filterRecords(res, p.filter)
		if len(body) > 0 {
			b.obs.Served(p.key.topic, p.group, n, len(body), time.Since(p.arrived))
			b.stats.served(b.cfg.ClusterName, p.key.topic, p.group, n, len(body))
			r := resp(remoting.Success, next)
			r.Body = body
			return r, false
		}
		p.offset = next
		if next >= res.MaxOffset && mayHold {
			return nil, true
		}
		return resp(remoting.PullRetryImmediately, next), false
	case store.NoMatchedMessage, store.OffsetFoundNull:
		p.offset = res.NextBeginOffset
		if res.NextBeginOffset >= res.MaxOffset && mayHold {
			return nil, true
		}
		if res.Status == store.OffsetFoundNull {
			return resp(remoting.PullNotFound, res.NextBeginOffset), false
		}
		return resp(remoting.PullRetryImmediately, res.NextBeginOffset), false
	case store.OffsetOverflowOne:
		if mayHold {
			return nil, true
		}
		return resp(remoting.PullNotFound, p.offset), false
	case store.NoMessageInQueue:
		if p.offset == 0 {
			if mayHold {
				return nil, true
			}
			return resp(remoting.PullNotFound, 0), false
		}
		if !leader {
			return resp(remoting.PullRetryImmediately, p.offset), false
		}
		return resp(remoting.PullOffsetMoved, 0), false
	case store.OffsetTooSmall, store.OffsetOverflowBadly:
		if !leader {
			return resp(remoting.PullRetryImmediately, p.offset), false
		}
		b.log.Info("pull offset out of range, moving the consumer",
			"topic", p.key.topic, "queue", p.key.queueID, "offset", p.offset,
			"status", res.Status.String(), "next", res.NextBeginOffset)
		return resp(remoting.PullOffsetMoved, res.NextBeginOffset), false
	}
	return errorResponse(p.req, fmt.Errorf("store: unexpected get status %v", res.Status)), false
}

// filterRecords concatenates the records f matches and returns the body
// and the next offset (past every record examined).
func filterRecords(res *store.GetResult, f msgFilter) ([]byte, int64, int) {
	size := 0
	for _, r := range res.Records {
		size += len(r.Bytes)
	}
	body := make([]byte, 0, size)
	n := 0
	for _, r := range res.Records {
		if !f.match(r.Bytes) {
			continue
		}
		body = append(body, r.Bytes...)
		n++
	}
	return body, res.NextBeginOffset, n
}

// recordMatches checks a record's TAGS against f exactly. An untagged
// message matches only "*"; a record that does not parse is left out.
func recordMatches(rec []byte, f *store.TagFilter) bool {
	if len(f.Tags) == 0 {
		return true // "*": NewTagFilter keeps no tags for it
	}
	v, err := message.ParseView(rec)
	if err != nil {
		return false
	}
	tag, ok := v.Property(message.PropertyTags)
	if !ok {
		return false
	}
	for _, t := range f.Tags {
		if t == string(tag) {
			return true
		}
	}
	return false
}

// pullResponse builds a PULL_MESSAGE answer with the ext fields the client
// reads. suggestWhichBrokerId is always 0: the leader.
func pullResponse(req *remoting.Command, code int32, next, minOff, maxOff int64) *remoting.Command {
	r := remoting.NewResponse(req, code, "")
	h := protocol.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: minOff, MaxOffset: maxOff}
	r.ExtFields = h.Encode()
	return r
}

// pullNotFound answers a held pull whose time is up (or that could not be
// held): PULL_NOT_FOUND at its current offset.
func (b *Broker) pullNotFound(p *pullRequest) *remoting.Command {
	return b.pullNotFoundAt(p.req, p.key, p.offset)
}

// pullNotFoundAt is the PULL_NOT_FOUND answer to req, a pull of key, at
// offset.
func (b *Broker) pullNotFoundAt(req *remoting.Command, key pullKey, offset int64) *remoting.Command {
	st := b.group.Store()
	minOff, _ := st.MinOffset(key.topic, key.queueID)
	maxOff, _ := st.MaxOffset(key.topic, key.queueID)
	return pullResponse(req, remoting.PullNotFound, offset, minOff, maxOff)
}
