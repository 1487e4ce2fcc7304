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
// Long polling: a held pull waits in the pullHolder, indexed by queue,
// until onDispatch reports a max offset beyond the pull's offset (then a
// worker re-runs the read; if the filter still matches nothing the pull is
// held again at the advanced offset) or until its deadline
// (suspendTimeoutMillis, capped at maxPullHold) passes, when it is answered
// 19. At most maxHeldPulls wait; beyond that a pull is answered 19 at once.
// Held pulls of a closed connection are dropped; on Close every held pull is
// answered 19.
//
// Wire format (ext values are decimal strings; protocol.md §2.3):
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
//	                      they are in the CommitLog (protocol.md §4.1)
//
// Tag filtering is two-staged: the store skips units whose tag hash is not
// in the subscription's set; the broker then checks each returned record's
// TAGS exactly (hashes collide) and leaves out the ones that do not match,
// still advancing nextBeginOffset past them.

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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
	conn     *remoting.Conn
	req      *remoting.Command
	key      pullKey
	offset   int64 // where the next read starts; advances past filtered units
	maxNums  int
	filter   msgFilter
	deadline time.Time
	heapIdx  int // position in pullHolder.byDeadline; -1 when not held
}

// handlePull serves PULL_MESSAGE (11). It answers at once, or parks the
// request in the pullHolder and returns nil (the answer is written later).
func (b *Broker) handlePull(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
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
		key:     pullKey{h.Topic, h.QueueID},
		offset:  h.QueueOffset,
		maxNums: int(min(max(h.MaxMsgNums, 1), maxPullMsgNums)),
		filter:  f,
		heapIdx: -1,
	}
	suspend := h.SysFlag&pullFlagSuspend != 0
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
	if b.pulls.hold(p) {
		return nil
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
	resp := func(code int16, next int64) *remoting.Command {
		return pullResponse(p.req, code, next, res.MinOffset, res.MaxOffset)
	}
	switch res.Status {
	case store.Found:
		body, next := filterRecords(res, p.filter)
		if len(body) > 0 {
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
func filterRecords(res *store.GetResult, f msgFilter) ([]byte, int64) {
	size := 0
	for _, r := range res.Records {
		size += len(r.Bytes)
	}
	body := make([]byte, 0, size)
	for _, r := range res.Records {
		if !f.match(r.Bytes) {
			continue
		}
		body = append(body, r.Bytes...)
	}
	return body, res.NextBeginOffset
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
func pullResponse(req *remoting.Command, code int16, next, minOff, maxOff int64) *remoting.Command {
	r := remoting.NewResponse(req, code, "")
	h := protocol.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: minOff, MaxOffset: maxOff}
	r.ExtFields = h.Encode()
	return r
}

// pullNotFound answers a held pull whose time is up (or that could not be
// held): PULL_NOT_FOUND at its current offset.
func (b *Broker) pullNotFound(p *pullRequest) *remoting.Command {
	st := b.group.Store()
	minOff, _ := st.MinOffset(p.key.topic, p.key.queueID)
	maxOff, _ := st.MaxOffset(p.key.topic, p.key.queueID)
	return pullResponse(p.req, remoting.PullNotFound, p.offset, minOff, maxOff)
}

// --- the holder ------------------------------------------------------------------

// pullHolder parks pulls that found nothing until their queue grows or
// their deadline passes. hold, dropConn, onDispatch and stop are safe for
// concurrent use; run and the workers are its goroutines, started by start
// and ended by stop.
type pullHolder struct {
	b *Broker

	cancel context.CancelFunc
	wg     sync.WaitGroup

	held atomic.Int64 // pulls parked now (a lock-free fast path for notify)

	mu         sync.Mutex
	closed     bool
	byQueue    map[pullKey]map[*pullRequest]struct{}
	byDeadline deadlineHeap
	ready      map[pullKey]int64 // queues whose max grew since run last looked

	wake  chan struct{}     // ready has entries, or the earliest deadline changed
	work  chan *pullRequest // to the workers; never blocks (capacity maxHeldPulls)
	nowFn func() time.Time
}

func newPullHolder(b *Broker) *pullHolder {
	return &pullHolder{
		b:       b,
		byQueue: map[pullKey]map[*pullRequest]struct{}{},
		ready:   map[pullKey]int64{},
		wake:    make(chan struct{}, 1),
		work:    make(chan *pullRequest, maxHeldPulls),
		nowFn:   time.Now,
	}
}

func (h *pullHolder) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(1 + pullWorkers)
	go h.run(ctx)
	for range pullWorkers {
		go h.worker(ctx)
	}
}

// stop ends long polling: the goroutines stop, every held pull is answered
// PULL_NOT_FOUND (the client pulls again at once, elsewhere if this node
// is going away) and later pulls are answered without being held.
func (h *pullHolder) stop() {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
	}
	h.close()
}

func (h *pullHolder) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// hold parks p. It returns false when the holder is closed or full; the
// caller then answers p itself.
func (h *pullHolder) hold(p *pullRequest) bool {
	h.mu.Lock()
	// Pulls queued for the workers count too, so run's sends to work (made
	// under mu) can never block.
	if h.closed || len(h.byDeadline)+len(h.work) >= maxHeldPulls || p.conn.Closed() {
		h.mu.Unlock()
		return false
	}
	q := h.byQueue[p.key]
	if q == nil {
		q = map[*pullRequest]struct{}{}
		h.byQueue[p.key] = q
	}
	q[p] = struct{}{}
	heap.Push(&h.byDeadline, p)
	h.held.Add(1)
	first := p.heapIdx == 0
	// Once mu is released a worker may own p: copy what is needed below.
	key, offset := p.key, p.offset
	h.mu.Unlock()
	if first {
		h.signal()
	}
	// A message dispatched between the read and the insertion found
	// nobody to wake: look again now that p is visible to onDispatch.
	if maxOff, err := h.b.group.Store().MaxOffset(key.topic, key.queueID); err == nil && maxOff > offset {
		h.notify(key, maxOff)
	}
	return true
}

// removeLocked takes p out of both indexes. Called with mu held.
func (h *pullHolder) removeLocked(p *pullRequest) {
	if p.heapIdx < 0 {
		return
	}
	heap.Remove(&h.byDeadline, p.heapIdx)
	if q := h.byQueue[p.key]; q != nil {
		delete(q, p)
		if len(q) == 0 {
			delete(h.byQueue, p.key)
		}
	}
	h.held.Add(-1)
}

// notify records that key's max offset is now maxOffset. It takes the
// holder's lock only when pulls are held and never blocks, so it may run
// on the store's write path.
func (h *pullHolder) notify(key pullKey, maxOffset int64) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	_, waiting := h.byQueue[key]
	if waiting && maxOffset > h.ready[key] {
		h.ready[key] = maxOffset
	}
	h.mu.Unlock()
	if waiting {
		h.signal()
	}
}

// dropConn forgets the pulls held for a closed connection.
func (h *pullHolder) dropConn(c *remoting.Conn) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.byQueue {
		for p := range q {
			if p.conn == c {
				h.removeLocked(p)
			}
		}
	}
}

// run moves woken and timed-out pulls to the workers.
func (h *pullHolder) run(ctx context.Context) {
	defer h.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		now := h.nowFn()
		for len(h.byDeadline) > 0 && !h.byDeadline[0].deadline.After(now) {
			p := h.byDeadline[0]
			h.removeLocked(p)
			h.work <- p
		}
		for key, maxOff := range h.ready {
			for p := range h.byQueue[key] {
				if maxOff > p.offset {
					h.removeLocked(p)
					h.work <- p
				}
			}
		}
		clear(h.ready)
		next := time.Hour
		if len(h.byDeadline) > 0 {
			next = h.byDeadline[0].deadline.Sub(now)
		}
		h.mu.Unlock()
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
		}
	}
}

// worker re-runs woken pulls and answers those whose time is up.
func (h *pullHolder) worker(ctx context.Context) {
	defer h.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-h.work:
			h.serve(p)
		}
	}
}

// serve answers p, or holds it again until its deadline.
func (h *pullHolder) serve(p *pullRequest) {
	if p.conn.Closed() {
		return
	}
	if !h.nowFn().Before(p.deadline) {
		h.answer(p, h.b.pullNotFound(p))
		return
	}
	resp, again := h.b.pullOnce(p, true)
	if again {
		if h.hold(p) {
			return
		}
		resp = h.b.pullNotFound(p)
	}
	h.answer(p, resp)
}

func (h *pullHolder) answer(p *pullRequest, resp *remoting.Command) {
	if err := p.conn.WriteCommand(resp); err != nil {
		h.b.log.Debug("pull answer not sent", "peer", p.conn.RemoteAddr(), "error", err)
	}
}

// close answers every held or queued pull with PULL_NOT_FOUND and refuses
// new holds. Called by stop once the holder's goroutines have stopped.
func (h *pullHolder) close() {
	h.mu.Lock()
	h.closed = true
	pending := make([]*pullRequest, 0, len(h.byDeadline))
	for len(h.byDeadline) > 0 {
		p := h.byDeadline[0]
		h.removeLocked(p)
		pending = append(pending, p)
	}
	h.mu.Unlock()
	for {
		select {
		case p := <-h.work:
			pending = append(pending, p)
			continue
		default:
		}
		break
	}
	for _, p := range pending {
		if !p.conn.Closed() {
			h.answer(p, h.b.pullNotFound(p))
		}
	}
}

// onDispatch is the store's hook: new messages are readable in a queue.
// It runs on the store's write path and only records the event.
func (b *Broker) onDispatch(topic string, queueID int32, maxOffset int64) {
	if b.pulls != nil {
		b.pulls.notify(pullKey{topic, queueID}, maxOffset)
	}
}

// deadlineHeap orders held pulls by deadline (container/heap).
type deadlineHeap []*pullRequest

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].deadline.Before(d[j].deadline) }
func (d deadlineHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].heapIdx, d[j].heapIdx = i, j
}
func (d *deadlineHeap) Push(x any) {
	p := x.(*pullRequest)
	p.heapIdx = len(*d)
	*d = append(*d, p)
}
func (d *deadlineHeap) Pop() any {
	old := *d
	p := old[len(old)-1]
	old[len(old)-1] = nil
	p.heapIdx = -1
	*d = old[:len(old)-1]
	return p
}
