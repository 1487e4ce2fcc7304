package dledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// proposal is one caller's request waiting to be carried by a raft entry.
// Its messages are stamped by the caller's goroutine and encoded by the
// batcher straight into the entry, so a message's bytes are copied once,
// from the request into the entry, and checked once (appendRecords).
type proposal struct {
	msgs  []*message.Ext      // stamped messages
	recs  []encodedRec        // msgs[i]'s encoded properties and record size
	one   [1]encodedRec       // recs of a single message (one allocation fewer)
	size  int                 // bytes the records take in an entry, length fields included
	entry []byte              // an entry proposed on its own (metadata, messages and an op)
	done  chan proposalResult // made by await; nil with cb
	// cb, when set, is called with the result instead of sending it on
	// done (ProposeAsync); answered makes it once.
	cb       func([]store.PutResult, error)
	answered atomic.Bool
	// window, when positive, is the send's duplicate window (ProposeSend);
	// dups holds the batcher's decisions (duplicates.go).
	window time.Duration
	dups   *dupState
	// ids are the pending ids of its new messages that have a duplicate
	// key, in order, each with its window lookup's miss (markDuplicates).
	ids []newID
}

// encodedRec is what encodeProposal works out for one message.
type encodedRec struct {
	props []byte // encoded properties
	size  int    // record size
}

// finish answers the proposal.
func (pr *proposal) finish(r proposalResult) {
	if pr.cb == nil {
		if pr.done != nil { // nil: never submitted (tests of the encoder)
			pr.done <- r
		}
		return
	}
	if pr.answered.CompareAndSwap(false, true) {
		pr.cb(r.results, r.err)
	}
}

type proposalResult struct {
	results []store.PutResult
	err     error
}

type inflight struct {
	// fut is nil for proposals whose every message repeats a stored or
	// pending one (duplicates.go): nothing was proposed for them.
	fut   raft.ApplyFuture
	props []*proposal
	// keys are the pending ids of the entry's new messages.
	keys []dupID
	// data is the entry, kept to resolve it if leadership is lost
	// (resolve.go).
	data []byte
}

// lingerYields bounds how often the batcher yields the processor, before it
// closes an entry, to let proposers that are runnable (typically the ones
// the previous entry just answered) queue their next proposal. It stops
// yielding as soon as a yield adds nothing to the queue, so a lone proposer
// pays one yield, not a delay.
const lingerYields = 8

// proposer coalesces concurrent proposals into raft entries (group commit).
// The batcher waits for one of MaxInFlight slots, then takes whatever is
// queued, up to MaxBatchBytes and MaxBatchMessages, and proposes it as one
// entry; the completer waits for entries in log order, answers their
// proposals and frees their slots. An entry is closed as late as possible,
// when a slot is free, so everything that arrived while the previous ones
// were in flight rides in it: under load entries grow instead of the
// replicas paying per-entry costs (an fsync on every node, one network
// round, one store batch) for a few messages each. Both goroutines are
// owned by the group and stop on Close.
type proposer struct {
	g        *Group
	queue    chan *proposal
	slots    chan struct{} // one element per entry proposed and not answered
	inflight chan inflight // in log order; never blocks (slots bound it)
	// entries and messages count what the batcher proposed (benchmarks
	// report messages per entry from them).
	entries  atomic.Uint64
	messages atomic.Uint64
	// pending and dupHits: duplicates.go.
	pending pendingKeys
	dupHits atomic.Uint64
}

func newProposer(g *Group) *proposer {
	return &proposer{
		g:        g,
		queue:    make(chan *proposal, g.cfg.QueueDepth),
		slots:    make(chan struct{}, g.cfg.MaxInFlight),
		inflight: make(chan inflight, g.cfg.MaxInFlight),
	}
}

func (p *proposer) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.batch(ctx)
	}()
	go func() {
		defer wg.Done()
		p.complete()
	}()
}

// submit queues a proposal without blocking: a full queue is ErrBusy.
func (p *proposer) submit(pr *proposal) error {
	select {
	case p.queue <- pr:
		return nil
	default:
		return ErrBusy
	}
}

func (p *proposer) batch(ctx context.Context) {
	defer close(p.inflight)
	var carry *proposal
	for {
		select {
		case <-ctx.Done():
			if carry != nil {
				carry.finish(proposalResult{err: ErrClosed})
			}
			p.drain(ErrClosed)
			return
		case p.slots <- struct{}{}:
		}
		first := carry
		carry = nil
		if first == nil {
			select {
			case <-ctx.Done():
				p.drain(ErrClosed)
				return
			case first = <-p.queue:
			}
		}
		if first.entry != nil {
			p.propose(first.entry, []*proposal{first})
			continue
		}
		for i := 0; i < lingerYields; i++ {
			n := len(p.queue)
			runtime.Gosched()
			if len(p.queue) == n {
				break
			}
		}
		props := []*proposal{first}
		count, bytes := len(first.msgs), first.size
		limit := p.g.maxBatchBytes()
	fill:
		for count < p.g.cfg.MaxBatchMessages && bytes < limit {
			select {
			case next := <-p.queue:
				if next.entry != nil || bytes+next.size > limit ||
					count+len(next.msgs) > p.g.cfg.MaxBatchMessages {
					carry = next
					break fill
				}
				props = append(props, next)
				count += len(next.msgs)
				bytes += next.size
			default:
				break fill
			}
		}
		if props = p.refuseUndecidable(props); len(props) == 0 {
			p.release()
			continue
		}
		p.markDuplicates(props)
		prep := &store.PreparedRecords{}
		prep.Grow(count)
		data, props, count := p.g.encodeMessagesEntry(props, bytes, prep)
		if len(props) == 0 {
			p.release()
			continue
		}
		if count == 0 {
			// Every message repeats one: nothing to propose; answered in
			// its turn (duplicates.go).
			p.inflight <- inflight{props: props}
			continue
		}
		keys := newKeys(props)
		p.pending.add(keys)
		p.entries.Add(1)
		p.messages.Add(uint64(count))
		p.proposeKeyed(data, props, prep, keys)
	}
}

// encodeMessagesEntry encodes the messages of props into one messages
// entry of the layout entry.go gives, sized for size bytes of records. A
// proposal whose messages the store would refuse is answered with the
// refusal and left out. It returns the entry, the proposals it carries and
// their message count.
func (g *Group) encodeMessagesEntry(props []*proposal, size int, prep *store.PreparedRecords) ([]byte, []*proposal, int) {
	b := make([]byte, entryHeaderSize+messagesHeaderSize, entryHeaderSize+messagesHeaderSize+size)
	b[0], b[1] = entryVersion, entryTypeMessages
	kept, count := props[:0], 0
	for _, pr := range props {
		mark, prepMark := len(b), prep.Len()
		var err error
		if b, err = g.appendRecords(b, pr, prep); err != nil {
			b = b[:mark]
			prep.Truncate(prepMark)
			pr.finish(proposalResult{err: err})
			continue
		}
		kept = append(kept, pr)
		count += pr.encoded()
	}
	binary.BigEndian.PutUint32(b[entryHeaderSize:], uint32(count))
	return b, kept, count
}

// appendRecords encodes pr's messages as stored records onto b, each
// behind its length, and checks each as the store would at its append
// (store.PrepareStamped into prep, or store.CheckStamped when prep is
// nil): this is the leader's one reading of a record. The entry's bytes
// are remembered with what was read (ownEntries), so the one-log raft
// log stores them without parsing them again and the FSM does not check
// them again.
func (g *Group) appendRecords(b []byte, pr *proposal, prep *store.PreparedRecords) ([]byte, error) {
	for i, m := range pr.msgs {
		if pr.dups != nil && pr.dups.kinds[i] != dupNew {
			continue
		}
		n := pr.recs[i].size
		b = binary.BigEndian.AppendUint32(b, uint32(n))
		start := len(b)
		b = slices.Grow(b, n)[:start+n]
		// The encoder writes a few derived fields into the message it
		// encodes; they go to a copy, as the caller may have stopped
		// waiting for the proposal and be reading its messages.
		cp := *m
		if err := message.EncodeRecordInto(b[start:], &cp, pr.recs[i].props); err != nil {
			return b, fmt.Errorf("%w: %v", store.ErrBadMessage, err)
		}
		var err error
		if prep != nil {
			err = g.checks.PrepareStamped(prep, b[start:])
		} else {
			err = g.checks.CheckStamped(b[start:])
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// propose hands an entry to raft; the caller holds a slot for it.
func (p *proposer) propose(data []byte, props []*proposal) {
	p.proposePrepared(data, props, nil)
}

// proposePrepared is propose for an entry whose records the proposer read
// as prep (nil: not kept) as it encoded them.
func (p *proposer) proposePrepared(data []byte, props []*proposal, prep *store.PreparedRecords) {
	p.proposeKeyed(data, props, prep, nil)
}

// proposeKeyed is proposePrepared for an entry whose new messages hold
// the pending ids keys (duplicates.go), released once it is answered.
func (p *proposer) proposeKeyed(data []byte, props []*proposal, prep *store.PreparedRecords, keys []dupID) {
	p.g.own.add(data, prep)
	fut := p.g.raft.Apply(data, p.g.cfg.ApplyTimeout)
	p.inflight <- inflight{fut: fut, props: props, data: data, keys: keys}
}

// drain fails every queued proposal.
func (p *proposer) drain(err error) {
	for {
		select {
		case pr := <-p.queue:
			pr.finish(proposalResult{err: err})
		default:
			return
		}
	}
}

// release frees the slot of an answered entry.
func (p *proposer) release() { <-p.slots }

// complete answers entries in log order. It frees an entry's slot after
// answering its proposals, so their callers can queue their next proposals
// before the batcher closes the next entry.
func (p *proposer) complete() {
	// sent is reused from entry to entry: RecordSent keeps none of it.
	var sent []store.Sent
	for e := range p.inflight {
		var doubtful bool
		sent, doubtful = p.answer(e, sent[:0])
		// The slot goes first: recording the sends in the window is off
		// the path to the next entry, whose batcher finds their keys
		// pending until they are recorded (duplicates.go).
		p.release()
		p.g.dups.RecordSent(sent)
		clear(sent) // the strings' bytes (their requests) are not kept alive
		if doubtful {
			p.pending.doubt(e.keys)
		} else {
			p.pending.remove(e.keys)
		}
	}
}

// answer answers an entry's proposals and appends to sent the sends the
// duplicate window is to remember. doubtful: the entry's outcome is
// unknown (appended, then leadership was lost, and this node could not
// tell whether it was committed), so its keys stay pending until the
// window is next indexed (duplicates.go).
func (p *proposer) answer(e inflight, sent []store.Sent) (_ []store.Sent, doubtful bool) {
	if e.fut == nil {
		return p.deliver(e, applyResult{}, sent), false
	}
	if err := p.g.awaitRaft(e.fut); err != nil {
		if lostWithLeadership(err) {
			// Appended, then leadership was lost: wait for this node,
			// now a follower, to apply the index and see whose entry
			// was committed there.
			if res, ok := p.g.resolveLost(e.fut.Index(), e.data); ok {
				return p.deliver(e, res, sent), false
			}
		}
		err = mapRaftError(err)
		for _, pr := range e.props {
			pr.finish(proposalResult{err: err})
		}
		return sent, errors.Is(err, ErrOutcomeUnknown)
	}
	res, _ := e.fut.Response().(applyResult)
	return p.deliver(e, res, sent), false
}

// deliver answers an entry's proposals with the FSM's result. It appends
// to sent the sends the entry stored that the duplicate window is to
// remember (duplicates.go).
func (p *proposer) deliver(e inflight, res applyResult, sent []store.Sent) []store.Sent {
	if res.err != nil {
		for _, pr := range e.props {
			pr.finish(proposalResult{err: res.err})
		}
		return sent
	}
	at := 0
	for _, pr := range e.props {
		n := pr.encoded()
		if len(pr.ids) > 0 && at+n <= len(res.results) {
			sent = pr.appendSent(sent, res.results[at:at+n])
		}
		at += n
	}
	same := p.g.sameEntry(e.props, sent)
	i := 0
	for _, pr := range e.props {
		n := pr.encoded()
		if i+n > len(res.results) {
			pr.finish(proposalResult{err: fmt.Errorf("%w: %d results for %d messages", ErrBadEntry, len(res.results), i+n)})
			continue
		}
		results, err := p.g.resultsOf(pr, res.results[i:i+n], same)
		pr.finish(proposalResult{results: results, err: err})
		i += n
	}
	return sent
}

// mapRaftError turns raft's errors into the group's.
func mapRaftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
	}
	return err
}

// Propose replicates a batch of messages and returns where each was stored,
// once a majority has committed it and this node has applied it.
//
// The caller sets Topic, QueueID, Flag, Body, Properties, SysFlag,
// BornTimestamp, BornHost, ReconsumeTimes and PreparedTransactionOffset.
// Propose stamps what must be the same on every replica: the store time
// (this leader's clock), the store host (the group's identity) and a
// UNIQ_KEY when the message has none. It writes those into the caller's
// messages.
//
// Errors: ErrNotLeader or ErrNotReady (go to the leader or retry),
// ErrBusy (queue full), store.ErrDiskFull, store.ErrBadMessage,
// ErrOutcomeUnknown (leadership lost in flight: the next leader may have
// committed it), or ctx's error (outcome unknown once queued).
func (g *Group) Propose(ctx context.Context, msgs []*message.Ext) ([]store.PutResult, error) {
	return g.ProposeSend(ctx, msgs, 0)
}

// ProposeAsync is Propose without the wait: done is called once with what
// Propose would return, on the goroutine that answers the group's entries
// in log order (so it must not block), or on the caller's when the send
// is refused before it is queued. There is no context: once queued, the
// entry is answered when raft decides it (applied, or failed with the
// leadership) or the group closes.
func (g *Group) ProposeAsync(msgs []*message.Ext, done func([]store.PutResult, error)) {
	g.proposeAsync(msgs, 0, done)
}

// proposeAsync is ProposeAsync with a send's duplicate window (0: none).
func (g *Group) proposeAsync(msgs []*message.Ext, window time.Duration, done func([]store.PutResult, error)) {
	if err := g.writable(); err != nil {
		done(nil, err)
		return
	}
	if len(msgs) == 0 {
		done(nil, nil)
		return
	}
	pr, err := g.encodeProposal(msgs)
	if err != nil {
		done(nil, err)
		return
	}
	pr.cb, pr.window = done, window
	if err := g.prop.submit(pr); err != nil {
		done(nil, err)
		return
	}
	if ackBeforeCommit(g.cfg.Faults) { // a jepsenbroken build only (faults.go)
		pr.finish(proposalResult{results: g.ackedBeforeCommit(len(pr.msgs))})
	}
}

// ProposeWithOp replicates msgs and a metadata op in one raft entry, applied
// together or not at all: a message the store refuses fails the whole
// entry on every replica. It is for work whose progress must move with its
// output (the delay scheduler's deliveries and its offsets), so a failover
// neither repeats nor loses any of it. msgs are stamped as Propose stamps
// them; errors are Propose's.
func (g *Group) ProposeWithOp(ctx context.Context, msgs []*message.Ext, op metadata.Op) ([]store.PutResult, error) {
	if err := g.writable(); err != nil {
		return nil, err
	}
	pr, err := g.encodeProposal(msgs)
	if err != nil {
		return nil, err
	}
	if pr.entry, err = g.encodeMessagesOpEntry(pr, op); err != nil {
		return nil, err
	}
	if pr.size = len(pr.entry); pr.size > g.cfg.MaxBatchBytes {
		return nil, fmt.Errorf("%w: %d bytes, entries hold %d", ErrTooLarge, pr.size, g.cfg.MaxBatchBytes)
	}
	return g.await(ctx, pr)
}

// encodeProposal stamps msgs (store time, store host, born host and
// UNIQ_KEY when missing) and sizes their records; the batcher encodes
// them (appendRecords).
func (g *Group) encodeProposal(msgs []*message.Ext) (*proposal, error) {
	now := g.cfg.Clock().UnixMilli()
	pr := &proposal{msgs: msgs}
	if len(msgs) == 1 {
		pr.recs = pr.one[:]
	} else {
		pr.recs = make([]encodedRec, len(msgs))
	}
	for i, m := range msgs {
		if len(m.Body) > g.checks.MaxMessageSize() {
			return nil, fmt.Errorf("%w: body of %d bytes exceeds %d", store.ErrBadMessage, len(m.Body), g.checks.MaxMessageSize())
		}
		m.StoreTimestamp = now
		m.StoreHost = g.cfg.StoreHost
		if !m.BornHost.IsValid() {
			m.BornHost = g.cfg.StoreHost
		}
		if m.UniqKey() == "" {
			m.SetProperty(message.PropertyUniqKey, g.ids.Next())
		}
		m.QueueOffset, m.PhysicalOffset = 0, 0
		props, err := m.EncodedProperties()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", store.ErrBadMessage, err)
		}
		if len(props) > message.MaxPropertiesLength {
			return nil, fmt.Errorf("%w: %v: %d bytes", store.ErrBadMessage, message.ErrPropertiesTooLong, len(props))
		}
		pr.recs[i] = encodedRec{props: props, size: message.RecordSize(m, len(props))}
		pr.size += pr.recs[i].size + 4
	}
	if limit := g.maxBatchBytes(); pr.size > limit {
		return nil, fmt.Errorf("%w: %d bytes, entries hold %d", ErrTooLarge, pr.size, limit)
	}
	return pr, nil
}

// encodeMessagesOpEntry builds the messages-and-op entry of pr and op
// (layout in entry.go).
func (g *Group) encodeMessagesOpEntry(pr *proposal, op metadata.Op) ([]byte, error) {
	if metadataEntryVersion(op) != entryVersion {
		return nil, fmt.Errorf("%w: a %s op travels alone", metadata.ErrBadOp, op.Kind)
	}
	p, err := metadata.EncodeOp(op)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, entryHeaderSize+opLengthSize+len(p)+messagesHeaderSize+pr.size)
	b = append(b, entryVersion, entryTypeMessagesOp)
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	b = append(b, p...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(pr.msgs)))
	return g.appendRecords(b, pr, nil)
}

// ProposeMetadata replicates a metadata change and returns once this node
// has applied it.
func (g *Group) ProposeMetadata(ctx context.Context, op metadata.Op) error {
	data, err := encodeMetadataEntry(op)
	if err != nil {
		return err
	}
	if v := g.meta.FormatVersion(); uint32(data[0]) > v {
		return fmt.Errorf("%w: version %d, a %s op needs %d", ErrFormatVersion, v, op.Kind, data[0])
	}
	if err := g.writable(); err != nil && !(op.Kind == metadata.OpRaftLog && errors.Is(err, errSwitching)) {
		return err
	}
	_, err = g.await(ctx, &proposal{entry: data, size: len(data)})
	return err
}

func (g *Group) await(ctx context.Context, pr *proposal) ([]store.PutResult, error) {
	if pr.done == nil {
		pr.done = make(chan proposalResult, 1)
	}
	if err := g.prop.submit(pr); err != nil {
		return nil, err
	}
	if ackBeforeCommit(g.cfg.Faults) { // a jepsenbroken build only (faults.go)
		return g.ackedBeforeCommit(len(pr.msgs)), nil
	}
	select {
	case r := <-pr.done:
		return r.results, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrOutcomeUnknown, ctx.Err())
	}
}

// ackedBeforeCommit is the answer of the ack-before-commit broken build
// (faults.go): n made-up results, given before raft commits.
func (g *Group) ackedBeforeCommit(n int) []store.PutResult {
	made := make([]store.PutResult, n)
	for i := range made {
		made[i].MsgID = message.OffsetMsgID(g.cfg.StoreHost, 0)
	}
	return made
}

// batchOverhead is what a store batch adds to its records in the CommitLog
// beyond each record's 4-byte trailer (which proposal sizes count): the
// batch marker and its trailer, and the end-of-segment room the CommitLog
// keeps, with slack.
const batchOverhead = 128

// maxBatchBytes bounds the records of one entry: MaxBatchBytes, and what
// one CommitLog segment of the group's size can hold as one batch (a
// larger batch would be refused at apply, ErrBatchTooLarge).
func (g *Group) maxBatchBytes() int {
	return int(min(int64(g.cfg.MaxBatchBytes), g.checks.SegmentSize()-batchOverhead))
}

// writable says whether this node takes proposals now.
func (g *Group) writable() error {
	if g.closed.Load() {
		return ErrClosed
	}
	if err := g.failure(); err != nil {
		return err
	}
	if g.switching.Load() {
		return errSwitching
	}
	if !g.ready.Load() {
		if g.raft.State() == raft.Leader {
			return ErrNotReady
		}
		return ErrNotLeader
	}
	if err := g.checks.CheckWritable(); err != nil {
		if errors.Is(err, store.ErrDiskFull) || errors.Is(err, store.ErrWriteFailed) {
			g.stepDown(err)
		}
		return err
	}
	return nil
}

// stepDown hands leadership away because this node's store cannot take
// writes, so a healthy node leads instead of this one heartbeating as a
// broken leader. Attempts are spaced by a few election timeouts.
func (g *Group) stepDown(reason error) {
	now := time.Now().UnixNano()
	last := g.lastStepDown.Load()
	if now-last < int64(4*g.cfg.Timing.ElectionTimeout) || !g.lastStepDown.CompareAndSwap(last, now) {
		return
	}
	g.log.Error("store cannot take writes; handing leadership away", "error", reason)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if g.raft.State() != raft.Leader {
			return
		}
		if err := g.awaitRaft(g.raft.LeadershipTransfer()); err != nil {
			g.log.Warn("leadership transfer away from a broken store failed", "error", err)
		}
	}()
}
