package dledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// proposal is one caller's request waiting to be carried by a raft entry.
type proposal struct {
	records [][]byte // stamped, encoded messages
	size    int
	entry   []byte // a metadata entry, proposed on its own
	done    chan proposalResult
}

type proposalResult struct {
	results []store.PutResult
	err     error
}

type inflight struct {
	fut   raft.ApplyFuture
	props []*proposal
}

// proposer coalesces concurrent proposals into raft entries (group commit):
// the batcher takes whatever is queued, up to MaxBatchBytes and
// MaxBatchMessages, proposes it as one entry and goes on while it is in
// flight; the completer waits for entries in log order and answers their
// proposals. Both goroutines are owned by the group and stop on Close.
type proposer struct {
	g        *Group
	queue    chan *proposal
	inflight chan inflight
}

func newProposer(g *Group) *proposer {
	return &proposer{
		g:        g,
		queue:    make(chan *proposal, g.cfg.QueueDepth),
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
		props := []*proposal{first}
		records := append([][]byte(nil), first.records...)
		bytes := first.size
	fill:
		for len(records) < p.g.cfg.MaxBatchMessages && bytes < p.g.cfg.MaxBatchBytes {
			select {
			case next := <-p.queue:
				if next.entry != nil || bytes+next.size > p.g.cfg.MaxBatchBytes ||
					len(records)+len(next.records) > p.g.cfg.MaxBatchMessages {
					carry = next
					break fill
				}
				props = append(props, next)
				records = append(records, next.records...)
				bytes += next.size
			default:
				break fill
			}
		}
		p.propose(encodeMessagesEntry(records), props)
	}
}

func (p *proposer) propose(data []byte, props []*proposal) {
	fut := p.g.raft.Apply(data, p.g.cfg.ApplyTimeout)
	p.inflight <- inflight{fut: fut, props: props}
}

// drain fails every queued proposal.
func (p *proposer) drain(err error) {
	for {
		select {
		case pr := <-p.queue:
			pr.done <- proposalResult{err: err}
		default:
			return
		}
	}
}

func (p *proposer) complete() {
	for e := range p.inflight {
		err := e.fut.Error()
		if err != nil {
			err = mapRaftError(err)
			for _, pr := range e.props {
				pr.done <- proposalResult{err: err}
			}
			continue
		}
		res, _ := e.fut.Response().(applyResult)
		if res.err != nil {
			for _, pr := range e.props {
				pr.done <- proposalResult{err: res.err}
			}
			continue
		}
		i := 0
		for _, pr := range e.props {
			n := len(pr.records)
			if i+n > len(res.results) {
				pr.done <- proposalResult{err: fmt.Errorf("%w: %d results for %d messages", ErrBadEntry, len(res.results), i+n)}
				continue
			}
			pr.done <- proposalResult{results: res.results[i : i+n]}
			i += n
		}
	}
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
	if err := g.writable(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	now := g.cfg.Clock().UnixMilli()
	pr := &proposal{records: make([][]byte, len(msgs)), done: make(chan proposalResult, 1)}
	for i, m := range msgs {
		if len(m.Body) > g.store.MaxMessageSize() {
			return nil, fmt.Errorf("%w: body of %d bytes exceeds %d", store.ErrBadMessage, len(m.Body), g.store.MaxMessageSize())
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
		rec, err := message.AppendRecord(nil, m)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", store.ErrBadMessage, err)
		}
		pr.records[i] = rec
		pr.size += len(rec) + 4
	}
	if pr.size > g.cfg.MaxBatchBytes {
		return nil, fmt.Errorf("%w: %d bytes, entries hold %d", ErrTooLarge, pr.size, g.cfg.MaxBatchBytes)
	}
	res, err := g.await(ctx, pr)
	return res, err
}

// ProposeMetadata replicates a metadata change and returns once this node
// has applied it.
func (g *Group) ProposeMetadata(ctx context.Context, op metadata.Op) error {
	data, err := encodeMetadataEntry(op)
	if err != nil {
		return err
	}
	if err := g.writable(); err != nil {
		return err
	}
	_, err = g.await(ctx, &proposal{entry: data, size: len(data), done: make(chan proposalResult, 1)})
	return err
}

func (g *Group) await(ctx context.Context, pr *proposal) ([]store.PutResult, error) {
	if err := g.prop.submit(pr); err != nil {
		return nil, err
	}
	select {
	case r := <-pr.done:
		return r.results, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrOutcomeUnknown, ctx.Err())
	}
}

// writable says whether this node takes proposals now.
func (g *Group) writable() error {
	if g.closed.Load() {
		return ErrClosed
	}
	if err := g.failure(); err != nil {
		return err
	}
	if !g.ready.Load() {
		if g.raft.State() == raft.Leader {
			return ErrNotReady
		}
		return ErrNotLeader
	}
	if err := g.store.CheckWritable(); err != nil {
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
		if err := g.raft.LeadershipTransfer().Error(); err != nil {
			g.log.Warn("leadership transfer away from a broken store failed", "error", err)
		}
	}()
}
