package broker

// Consumer offsets (docs/invariants.md I5) and the queue-offset lookups.
//
// Commits (UPDATE_CONSUMER_OFFSET, and the COMMIT_OFFSET bit of a pull)
// land in the offsetCommitter's pending table; every commitInterval its
// goroutine turns the table into one metadata.OpCommitOffsets raft entry
// (chunked at maxOffsetsPerOp), so thousands of consumers cost a few entries
// a second and every replica holds the offsets once committed:
//
//	commit ──▶ pending[group,topic,queue] = offset (latest wins)
//	                │ every 100 ms
//	     leader ────┼──▶ ProposeMetadata(OpCommitOffsets{...})  (unchanged ones skipped)
//	   follower ────┴──▶ UPDATE_CONSUMER_OFFSET to the leader, marked
//	                     forwardedBy=<node>; a node that is not the leader
//	                     drops a forwarded commit (one hop, no ping-pong),
//	                     and a commit it took while it led
//
// A follower forwards rather than drops the commits carried by pulls it
// serves (the COMMIT_OFFSET bit) because clients keep pulling from the old
// leader's address until their next route refresh (up to 30 s);
// forwarding keeps those commits. UPDATE_CONSUMER_OFFSET itself is relayed
// to the leader as it arrives. Commits that cannot be proposed or
// forwarded (no leader yet) stay pending for up to maxCommitTries rounds,
// then are dropped with a log line: the Go client recommits every held
// queue every 5 s anyway.
//
// Shutdown: the committer is the last part of the broker to stop
// (Broker.Close), after the remoting server has stopped and run every
// request it had queued, so no commit can arrive after its last flush.
// stop ends the periodic goroutine, then flushes until nothing is pending
// (proposing through raft on the leader, forwarding on a follower, by the
// role of the moment), finalFlushTimeout or Close's context has passed, or
// the raft group is closed.
//
// QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET are served by the
// leader (a follower relays them), and a query is linearizable
// (offsets_read.go): it has the key's pending commit proposed, passes a
// raft barrier and answers the replicated offset, so a client reads its
// own commit back at once, a member that takes over a queue reads the
// commit its previous holder just made, and no node answers from stale
// state. Admin views (GET_CONSUME_STATS) show this node's own table,
// pending commits first (lookup). A group with no
// offset for a queue gets 0 when the queue's min offset is 0 (nothing has
// been deleted from it), and QUERY_NOT_FOUND (22) otherwise. That is
// Java's rule minus its "is message 0 still in memory" test, which depends
// on the machine: every replica must answer the same. So a new group
// consumes a young queue from its first message whatever its
// consumeFromWhere, as on a Java broker, and one that meets a queue whose
// head has been deleted follows consumeFromWhere (LAST_OFFSET → max).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/internal/canary"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// commitInterval is how often pending commits become a raft entry.
	commitInterval = 100 * time.Millisecond
	// maxOffsetsPerOp bounds one OpCommitOffsets entry.
	maxOffsetsPerOp = 512
	// maxCommitTries drops a commit that could not be proposed or
	// forwarded in this many rounds.
	maxCommitTries = 50
	// commitTimeout bounds one proposal or forward.
	commitTimeout = 3 * time.Second
	// forwardedByExt marks a commit a follower forwarded to the leader.
	forwardedByExt = "forwardedBy"
	// finalFlushTimeout bounds the last flush at shutdown, whatever is
	// left of Close's context: the offsets are the last thing a closing
	// node can lose that clients would notice (a rewind).
	finalFlushTimeout = 2 * commitTimeout
)

type offsetKey struct {
	group   string
	topic   string
	queueID int32
}

type pendingOffset struct {
	offset      int64
	forwardedBy string // the node that forwarded it here, "" if from a client
	tries       int
	// leader: taken while this node led. Once it no longer does, such a
	// commit is dropped rather than forwarded (offsets_read.go).
	leader bool
}

// offsetCommitter coalesces consumer-offset commits. commit and lookup are
// safe for concurrent use; loop is its goroutine, started by Start and
// ended by Stop, which owns the last flush. It proposes through the group
// on the leader and forwards through send on a follower.
type offsetCommitter struct {
	lifecycle
	offsetDeps
	interval time.Duration

	mu      sync.Mutex
	pending map[offsetKey]pendingOffset
	// inflight is the batch flush is proposing or forwarding: lookup still
	// answers from it until the batch is applied (or requeued), so a read
	// right after a commit never sees the older replicated value.
	inflight map[offsetKey]pendingOffset
	// kick asks the loop to flush now; flushed is closed (and replaced)
	// after every flush (a linearizable read waits on them).
	kick    chan struct{}
	flushed chan struct{}
}

// offsetGroup is what the committer uses of the raft group.
type offsetGroup interface {
	ProposeMetadata(ctx context.Context, op metadata.Op) error
	Metadata() *metadata.State
	IsLeader() bool
}

// offsetDeps are what the committer needs from the broker.
type offsetDeps struct {
	group offsetGroup
	log   hclog.Logger
	// nodeID marks forwarded commits; self is this node's client address.
	nodeID string
	self   string
	// leaderAddr is the leader's client address, "" when none is known.
	leaderAddr func() string
	// send delivers a one-way request to a broker (the leader).
	send func(ctx context.Context, addr string, req *remoting.Command) error
}

func newOffsetCommitter(d offsetDeps) *offsetCommitter {
	return &offsetCommitter{offsetDeps: d, interval: commitInterval, pending: map[offsetKey]pendingOffset{},
		kick: make(chan struct{}, 1), flushed: make(chan struct{})}
}

// commit records a group's next offset to consume for a queue.
func (c *offsetCommitter) commit(group, topic string, queueID int32, offset int64, forwardedBy string) {
	if group == "" || topic == "" || queueID < 0 || offset < 0 {
		return
	}
	if canary.Built { // a jepsenbroken build only: compiled out otherwise
		canary.NoteOffset(fmt.Sprint(group, "/", topic, "/", queueID))
		if canary.ServeUncommitted(fmt.Sprint(group, "/", topic, "/", queueID), offset) {
			return
		}
	}
	leader := c.group != nil && c.group.IsLeader()
	c.mu.Lock()
	c.pending[offsetKey{group, topic, queueID}] = pendingOffset{offset: offset, forwardedBy: forwardedBy, leader: leader}
	c.mu.Unlock()
}

// lookup returns the group's offset for a queue: a pending commit, else the
// replicated one.
func (c *offsetCommitter) lookup(group, topic string, queueID int32) (int64, bool) {
	if canary.Built && canary.ForgetsOffset(fmt.Sprint(group, "/", topic, "/", queueID)) { // a jepsenbroken build only
		return 0, true
	}
	if canary.Built { // a jepsenbroken build only
		if v, ok := canary.Uncommitted(fmt.Sprint(group, "/", topic, "/", queueID)); ok {
			return v, true
		}
	}
	c.mu.Lock()
	k := offsetKey{group, topic, queueID}
	p, ok := c.pending[k]
	if !ok {
		p, ok = c.inflight[k]
	}
	c.mu.Unlock()
	if ok {
		return p.offset, true
	}
	return c.group.Metadata().Offset(group, topic, queueID)
}

// Start runs the periodic flush until Stop.
func (c *offsetCommitter) Start() { c.run(c.loop) }

// loop flushes the pending table every interval until ctx ends.
func (c *offsetCommitter) loop(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
		c.flush(ctx)
		c.mu.Lock()
		close(c.flushed)
		c.flushed = make(chan struct{})
		c.mu.Unlock()
	}
}

// Stop ends the periodic flush and then flushes what is pending until
// nothing is, or finalFlushTimeout or ctx ends; it reports the commits it
// could not hand on. The caller guarantees no commit arrives any more
// (Broker.Close calls it last).
func (c *offsetCommitter) Stop(ctx context.Context) error {
	c.halt()
	// The flush honours Close's deadline, but if a slow drain has spent it
	// already the offsets still get a bounded time of their own.
	base := ctx
	if ctx.Err() != nil {
		base = context.WithoutCancel(ctx)
	}
	fctx, cancel := context.WithTimeout(base, finalFlushTimeout)
	defer cancel()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		err := c.flush(fctx)
		n := c.pendingCount()
		if n == 0 {
			return nil
		}
		if errors.Is(err, dledger.ErrClosed) || errors.Is(err, dledger.ErrFailed) {
			// This node's raft group is gone: waiting cannot help.
			c.log.Warn("offset commits lost at shutdown: the raft group is closed", "count", n, "error", err)
			return fmt.Errorf("broker: %d offset commits not flushed at shutdown: %w", n, err)
		}
		select {
		case <-fctx.Done():
			c.log.Warn("offset commits lost at shutdown: no leader took them in time", "count", n)
			return fmt.Errorf("broker: %d offset commits not flushed at shutdown: %w", n, fctx.Err())
		case <-t.C:
		}
	}
}

// pendingCount is the number of commits waiting for a flush.
func (c *offsetCommitter) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// flush proposes (leader) or forwards (follower) the pending commits and
// returns the first proposal error (commits that failed are pending again).
func (c *offsetCommitter) flush(ctx context.Context) error {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return nil
	}
	batch := c.pending
	c.pending = make(map[offsetKey]pendingOffset, len(batch))
	// In flight from the moment it leaves pending: a read never finds a
	// commit in neither (it would answer the older replicated value).
	c.inflight = maps.Clone(batch)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inflight = nil
		c.mu.Unlock()
	}()

	md := c.group.Metadata()
	for k, p := range batch {
		if cur, ok := md.Offset(k.group, k.topic, k.queueID); ok && cur == p.offset {
			delete(batch, k) // the Go client recommits unchanged offsets every 5 s
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if c.group.IsLeader() {
		return c.propose(ctx, batch)
	}
	c.dropLeaderCommits(batch)
	c.forward(ctx, batch)
	return nil
}

// sortedKeys orders a batch so that entries are deterministic.
func sortedKeys(batch map[offsetKey]pendingOffset) []offsetKey {
	keys := slices.Collect(maps.Keys(batch))
	slices.SortFunc(keys, func(a, b offsetKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.topic, b.topic), cmp.Compare(a.queueID, b.queueID))
	})
	return keys
}

func (c *offsetCommitter) propose(ctx context.Context, batch map[offsetKey]pendingOffset) error {
	var first error
	keys := sortedKeys(batch)
	for len(keys) > 0 {
		n := min(len(keys), maxOffsetsPerOp)
		chunk := keys[:n]
		keys = keys[n:]
		op := metadata.Op{Kind: metadata.OpCommitOffsets, Offsets: make([]metadata.OffsetCommit, 0, n)}
		for _, k := range chunk {
			op.Offsets = append(op.Offsets, metadata.OffsetCommit{Group: k.group, Topic: k.topic, QueueID: k.queueID, Offset: batch[k].offset})
		}
		pctx, cancel := context.WithTimeout(ctx, commitTimeout)
		err := c.group.ProposeMetadata(pctx, op)
		cancel()
		if err != nil {
			c.log.Debug("offset commit not proposed; retrying", "offsets", n, "error", err)
			c.requeue(batch, chunk, err)
			first = cmp.Or(first, err)
		}
	}
	return first
}

// forward sends a follower's commits to the leader, one one-way
// UPDATE_CONSUMER_OFFSET each (the leader coalesces them again).
func (c *offsetCommitter) forward(ctx context.Context, batch map[offsetKey]pendingOffset) {
	leader, self := c.leaderAddr(), c.self
	var retry []offsetKey
	for _, k := range sortedKeys(batch) {
		p := batch[k]
		if p.forwardedBy != "" {
			c.log.Info("dropping a forwarded offset commit: this node is not the leader",
				"group", k.group, "topic", k.topic, "queue", k.queueID, "offset", p.offset, "from", p.forwardedBy)
			continue
		}
		if leader == "" || leader == self {
			retry = append(retry, k)
			continue
		}
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: k.group, Topic: k.topic, QueueID: k.queueID, CommitOffset: p.offset}
		req := h.Request()
		req.SetExt(forwardedByExt, c.nodeID)
		fctx, cancel := context.WithTimeout(ctx, commitTimeout)
		err := c.send(fctx, leader, req)
		cancel()
		if err != nil {
			retry = append(retry, k)
		}
	}
	c.requeue(batch, retry, errors.New("no reachable leader"))
}

// requeue puts back commits that did not go out, unless a newer commit of
// the same queue arrived meanwhile or they have been tried too often.
func (c *offsetCommitter) requeue(batch map[offsetKey]pendingOffset, keys []offsetKey, cause error) {
	if len(keys) == 0 {
		return
	}
	dropped := 0
	c.mu.Lock()
	for _, k := range keys {
		if _, newer := c.pending[k]; newer {
			continue
		}
		p := batch[k]
		p.tries++
		if p.tries >= maxCommitTries {
			dropped++
			continue
		}
		c.pending[k] = p
	}
	c.mu.Unlock()
	if dropped > 0 {
		c.log.Warn("offset commits dropped after repeated failures", "count", dropped, "error", cause)
	}
}

// --- handlers ------------------------------------------------------------------

// decodeHeader decodes a request header; a header that does not decode is
// ErrBadRequest (SYSTEM_ERROR, as Java).
func decodeHeader(h interface{ Decode(map[string]string) error }, ext map[string]string) error {
	if err := h.Decode(ext); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}

// checkQueue refuses the empty topic and negative queue ids every offset
// request may name.
func checkQueue(topic string, qid int32) error {
	if topic == "" || qid < 0 {
		return fmt.Errorf("%w: topic %q queueId %d", ErrInvalidParameter, topic, qid)
	}
	return nil
}

// queueRef reads the topic and queueId ext fields of 30, 31 and 32.
func queueRef(ext map[string]string) (string, int32, error) {
	var h protocol.QueueOffsetRequestHeader
	if err := decodeHeader(&h, ext); err != nil {
		return "", 0, err
	}
	if err := checkQueue(h.Topic, h.QueueID); err != nil {
		return "", 0, err
	}
	return h.Topic, h.QueueID, nil
}

// knownTopic reports whether topic is configured; offset lookups of unknown
// topics answer 0 without touching the store (which would keep a handle for
// any name asked about).
func (b *Broker) knownTopic(topic string) bool {
	_, ok := b.group.Metadata().Topic(topic)
	return ok
}

func (b *Broker) queueMin(topic string, qid int32) int64 {
	if !b.knownTopic(topic) {
		return 0
	}
	v, err := b.group.Store().MinOffset(topic, qid)
	if err != nil {
		return 0
	}
	return v
}

func offsetResponse(req *remoting.Command, v int64) *remoting.Command {
	r := remoting.NewResponse(req, remoting.Success, "")
	r.ExtFields = (&protocol.OffsetResponseHeader{Offset: v}).Encode()
	return r
}

func storeTimeResponse(req *remoting.Command, v int64) *remoting.Command {
	r := remoting.NewResponse(req, remoting.Success, "")
	r.ExtFields = (&protocol.StoreTimeResponseHeader{Timestamp: v}).Encode()
	return r
}

// The client reads ext offset of 29 and 30 without checking the code, so
// these always carry one (0 on any failure, with the failure's code).
func offsetErrorResponse(req *remoting.Command, err error) *remoting.Command {
	r := errorResponse(req, err)
	r.ExtFields = (&protocol.OffsetResponseHeader{}).Encode()
	return r
}

// storeTimeErrorResponse is offsetErrorResponse for 32.
func storeTimeErrorResponse(req *remoting.Command, err error) *remoting.Command {
	r := errorResponse(req, err)
	r.ExtFields = (&protocol.StoreTimeResponseHeader{}).Encode()
	return r
}

// handleGetMaxOffset serves GET_MAX_OFFSET (30): ext offset, the queue's next
// write offset.
func (b *Broker) handleGetMaxOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, err := queueRef(req.ExtFields)
	if err != nil {
		return offsetErrorResponse(req, err)
	}
	if !b.knownTopic(topic) {
		return offsetResponse(req, 0)
	}
	v, err := b.group.Store().MaxOffset(topic, qid)
	if err != nil {
		return offsetErrorResponse(req, err)
	}
	return offsetResponse(req, v)
}

// handleGetMinOffset serves GET_MIN_OFFSET (31): ext offset.
func (b *Broker) handleGetMinOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, err := queueRef(req.ExtFields)
	if err != nil {
		return offsetErrorResponse(req, err)
	}
	return offsetResponse(req, b.queueMin(topic, qid))
}

// handleSearchOffsetByTimestamp serves SEARCH_OFFSET_BY_TIMESTAMP (29): ext
// offset, the first offset stored at or after timestamp (ms), the max
// offset when every message is older.
func (b *Broker) handleSearchOffsetByTimestamp(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.SearchOffsetRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return offsetErrorResponse(req, err)
	}
	if err := checkQueue(h.Topic, h.QueueID); err != nil {
		return offsetErrorResponse(req, err)
	}
	topic, qid, ts := h.Topic, h.QueueID, h.Timestamp
	if !b.knownTopic(topic) {
		return offsetResponse(req, 0)
	}
	v, err := b.group.Store().OffsetByTime(topic, qid, ts)
	if err != nil {
		return offsetErrorResponse(req, err)
	}
	return offsetResponse(req, v)
}

// handleGetEarliestMsgStoretime serves GET_EARLIEST_MSG_STORETIME (32): ext
// timestamp, the store time of the queue's oldest message, -1 when it has
// none (as Java).
func (b *Broker) handleGetEarliestMsgStoretime(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, qid, err := queueRef(req.ExtFields)
	if err != nil {
		return storeTimeErrorResponse(req, err)
	}
	if !b.knownTopic(topic) {
		return storeTimeResponse(req, -1)
	}
	v, err := b.group.Store().EarliestMessageTime(topic, qid)
	if err != nil {
		return storeTimeResponse(req, -1)
	}
	return storeTimeResponse(req, v)
}
