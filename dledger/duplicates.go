package dledger

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// Exactly-once sends. A producer that loses a send's answer in a leader
// change sends the message again with the same UNIQ_KEY. The store keeps a
// duplicate window of the messages it dispatched recently (every replica
// the same one, fed in log order: store/duplicates.go); before it encodes
// a send into an entry, the leader asks it, and for each message of a
// send proposed with a window (ProposeSend, ProposeSendAsync) decides, by
// its topic and duplicate key (store.DuplicateKey: the UNIQ_KEY, with the
// reconsume count for a consumer's retry):
//
//	stored      the window holds (topic, key) within the send's window:
//	            the message is not proposed and is answered with the
//	            first store (store.PutResult.Duplicate, QueueID set)
//	pending     an entry this leader proposed and has not answered yet
//	            carries the key, or an earlier message of the entry being
//	            built does: not proposed either; answered, when its own
//	            entry is, from the window, which then holds the first
//	            (entries are answered in log order, after they apply)
//	new         proposed; its key is pending until its entry is answered
//
// The decision is the leader's alone and needs no agreement: a duplicate
// never enters the log, and what enters the window is what the log holds.
// A new leader decides only after its barrier entry applied (writable), so
// its window then holds every message a previous leader committed; a
// message a previous leader appended but did not commit is either
// committed with that barrier (and found) or gone from the log (and
// rightly stored again). A send whose every message is a duplicate still
// takes its turn in the proposer's order (an inflight without an entry),
// so a pending one is answered after the entry that stores its first.
// (docs/invariants.md I10.)

// duplicateWindow is what the leader asks of the store before it
// proposes a message: where a message with this topic and key was stored,
// if within window of now (the store time stamped on the new message).
type duplicateWindow interface {
	// Duplicate also returns, when it misses, what the miss knows for
	// recording the message (store.Sent.Miss).
	Duplicate(topic, key string, now int64, window time.Duration) (store.PutResult, bool, store.DuplicateMiss)
	// RecordSent adds the sends this leader stored to the window's index.
	RecordSent(sent []store.Sent)
	// IndexDuplicates readies the window's index when this node becomes
	// leader, IdleDuplicates drops it when it stops (followers keep only
	// the messages it is built from).
	IndexDuplicates()
	IdleDuplicates()
}

// dupKind is the proposer's decision about one message (above).
type dupKind uint8

const (
	dupNew dupKind = iota
	dupStored
	dupPending
)

// dupState is a send's decisions, made by the batcher; nil for a
// proposal without a window or without a duplicate.
type dupState struct {
	kinds   []dupKind
	results []store.PutResult // the first store of each dupStored message
}

// encoded is how many of pr's messages go into its entry.
func (pr *proposal) encoded() int {
	if pr.dups == nil {
		return len(pr.msgs)
	}
	n := 0
	for _, k := range pr.dups.kinds {
		if k == dupNew {
			n++
		}
	}
	return n
}

// dupID is a message as the window knows it: its topic and duplicate key
// (store.DuplicateKey). Both strings are the message's own: making one
// copies nothing.
type dupID struct{ topic, key string }

// newID is a new message's dupID with what the window's lookup of it
// knows for recording it (store.Sent.Miss): the message stays pending
// until it is recorded, so no other message with its id is recorded in
// between.
type newID struct {
	dupID
	miss store.DuplicateMiss
}

// pendingKeys are the (topic, key) pairs of the messages in the entries
// the leader proposed and has not answered, counted (a key can be in
// several entries only through a send without a window).
type pendingKeys struct {
	mu sync.Mutex
	n  map[dupID]int
	// doubted are the keys of entries whose outcome stayed unknown
	// (leadership lost before this node learned whether they were
	// committed): they stay pending, so a repeat of one is refused as
	// busy, until clearDoubts, when the node next becomes leader and its
	// window is indexed afresh after its barrier, which settled them.
	// Without that, a repeat decided before then (by a proposal left in
	// the queue, or while the node's ready flag still lagged raft's step
	// down) would be stored a second time if the entry was committed.
	doubted []dupID
}

// doubt keeps ids pending (above) instead of removing them.
func (k *pendingKeys) doubt(ids []dupID) {
	if len(ids) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.doubted = append(k.doubted, ids...)
}

// clearDoubts removes the doubted keys from the pending ones.
func (k *pendingKeys) clearDoubts() {
	k.mu.Lock()
	ids := k.doubted
	k.doubted = nil
	k.mu.Unlock()
	k.remove(ids)
}

func (k *pendingKeys) add(ids []dupID) {
	if len(ids) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[dupID]int{}
	}
	for _, id := range ids {
		k.n[id]++
	}
}

func (k *pendingKeys) remove(ids []dupID) {
	if len(ids) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if k.n[id] <= 1 {
			delete(k.n, id)
		} else {
			k.n[id]--
		}
	}
}

// refuseUndecidable answers the sends proposed with a window, when this
// node is not a ready leader now, with the refusal writable gives (it was
// when they were submitted): its window may not hold what another leader
// stored since, so it cannot decide them (docs/invariants.md I10). It
// returns the other proposals, which raft refuses or takes as before.
func (p *proposer) refuseUndecidable(props []*proposal) []*proposal {
	err := p.g.writable()
	if err == nil {
		return props
	}
	kept := props[:0]
	for _, pr := range props {
		if pr.window > 0 && pr.entry == nil {
			pr.finish(proposalResult{err: err})
			continue
		}
		kept = append(kept, pr)
	}
	return kept
}

// markDuplicates decides, for each message of the proposals about to
// form one entry that were proposed with a window, whether it is new
// (above); the batcher adds the new ones' pending ids (newKeys) once it
// knows which proposals the entry keeps.
func (p *proposer) markDuplicates(props []*proposal) {
	var local map[dupID]bool
	locked := false
	defer func() {
		if locked {
			p.pending.mu.Unlock()
		}
	}()
	for _, pr := range props {
		if pr.window <= 0 || pr.entry != nil {
			continue
		}
		if !locked {
			p.pending.mu.Lock()
			locked = true
		}
		for i, m := range pr.msgs {
			key := store.DuplicateKeyOf(m)
			if key == "" {
				continue
			}
			id := dupID{m.Topic, key}
			kind := dupNew
			var first store.PutResult
			var miss store.DuplicateMiss
			if local[id] || p.pending.n[id] > 0 {
				kind = dupPending
			} else if r, ok, ms := p.g.dups.Duplicate(m.Topic, key, m.StoreTimestamp, pr.window); ok {
				kind, first = dupStored, p.g.firstStore(r)
			} else {
				miss = ms
			}
			if kind == dupNew {
				if len(pr.msgs) > 1 {
					if local == nil {
						local = map[dupID]bool{}
					}
					local[id] = true
				} else if len(props) > 1 {
					if local == nil {
						local = make(map[dupID]bool, len(props))
					}
					local[id] = true
				}
				pr.ids = append(pr.ids, newID{id, miss})
				continue
			}
			if pr.dups == nil {
				pr.dups = &dupState{kinds: make([]dupKind, len(pr.msgs)), results: make([]store.PutResult, len(pr.msgs))}
			}
			pr.dups.kinds[i], pr.dups.results[i] = kind, first
			p.dupHits.Add(1)
		}
	}
}

// newKeys lists the pending ids of the new messages of the proposals an
// entry carries (those proposed with a window: markDuplicates).
func newKeys(props []*proposal) []dupID {
	n := 0
	for _, pr := range props {
		n += len(pr.ids)
	}
	if n == 0 {
		return nil
	}
	ids := make([]dupID, 0, n)
	for _, pr := range props {
		for _, id := range pr.ids {
			ids = append(ids, id.dupID)
		}
	}
	return ids
}

// sameEntry maps the pending ids of sent, an entry's new messages, to
// their stores, for the messages of the same entry that repeat them; nil
// when no proposal of props has such a message.
func (g *Group) sameEntry(props []*proposal, sent []store.Sent) map[dupID]store.PutResult {
	need := false
	for _, pr := range props {
		if pr.dups != nil && slices.Contains(pr.dups.kinds, dupPending) {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	m := make(map[dupID]store.PutResult, len(sent))
	for _, s := range sent {
		r := s.Result
		r.QueueID, r.Duplicate = s.QueueID, true
		m[dupID{s.Topic, s.Key}] = r
	}
	return m
}

// appendSent appends pr's new messages with where they were stored
// (from, in order), for the window to remember once they are answered.
// It reads the messages before pr is answered: after that they are the
// caller's again.
func (pr *proposal) appendSent(sent []store.Sent, from []store.PutResult) []store.Sent {
	// pr.ids are its new messages that have a duplicate key, in order:
	// when that is every new message, they need not be looked at again.
	allKeyed := len(pr.ids) == len(from)
	j, c := 0, 0
	for i, m := range pr.msgs {
		if pr.dups != nil && pr.dups.kinds[i] != dupNew {
			continue
		}
		if (allKeyed || store.DuplicateKeyOf(m) != "") && c < len(pr.ids) {
			id := pr.ids[c]
			c++
			sent = append(sent, store.Sent{Topic: id.topic, Key: id.key, QueueID: m.QueueID, Result: from[j],
				StoreTime: m.StoreTimestamp, Miss: id.miss})
		}
		j++
	}
	return sent
}

// firstStore completes the window's answer with an offset message id
// when the store could not read the first store's (this node's store
// host stands in for the one it recorded).
func (g *Group) firstStore(r store.PutResult) store.PutResult {
	if r.MsgID == "" {
		r.MsgID = message.OffsetMsgID(g.cfg.StoreHost, r.PhysicalOffset)
	}
	return r
}

// resultsOf assembles pr's answer: its entry's results for its new
// messages (from, in order) and the first stores of its duplicates, a
// pending one read from this entry's sends (same) or else from the
// window, which holds the earlier entries' once they are answered.
func (g *Group) resultsOf(pr *proposal, from []store.PutResult, same map[dupID]store.PutResult) ([]store.PutResult, error) {
	if pr.dups == nil {
		return from, nil
	}
	out := make([]store.PutResult, len(pr.msgs))
	j := 0
	for i, m := range pr.msgs {
		switch pr.dups.kinds[i] {
		case dupNew:
			out[i] = from[j]
			j++
		case dupStored:
			out[i] = pr.dups.results[i]
		case dupPending:
			key := store.DuplicateKeyOf(m)
			r, ok := same[dupID{m.Topic, key}]
			if !ok {
				r, ok, _ = g.dups.Duplicate(m.Topic, key, m.StoreTimestamp, pr.window)
				r = g.firstStore(r)
			}
			if !ok {
				// The send it repeats was refused (a bad message) or
				// failed with the leadership: it is not stored; the
				// producer sends it again.
				return nil, ErrRepeatNotStored
			}
			out[i] = r
		}
	}
	return out, nil
}

// ProposeSend is Propose for a producer's send: a message whose topic and
// UNIQ_KEY the group stored within window (measured by store time) is not
// stored again and is answered with where it was (PutResult.Duplicate).
// A window of 0 or less is Propose.
func (g *Group) ProposeSend(ctx context.Context, msgs []*message.Ext, window time.Duration) ([]store.PutResult, error) {
	if err := g.writable(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	pr, err := g.encodeProposal(msgs)
	if err != nil {
		return nil, err
	}
	pr.window = window
	return g.await(ctx, pr)
}

// ProposeSendAsync is ProposeAsync for a producer's send, with
// ProposeSend's window.
func (g *Group) ProposeSendAsync(msgs []*message.Ext, window time.Duration, done func([]store.PutResult, error)) {
	g.proposeAsync(msgs, window, done)
}

// DuplicatesFound counts the messages this node, as leader, answered
// from the duplicate window instead of storing them again.
func (g *Group) DuplicatesFound() uint64 { return g.prop.dupHits.Load() }
