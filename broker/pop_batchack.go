package broker

// BATCH_ACK_MESSAGE (200151) on the remoting port, served by the leader:
// the acknowledgements of many ACK_MESSAGEs in one request, through the
// same path (ackPopped) and in one raft entry. Its body
// (protocol.BatchAckMessageRequestBody) lists, per queue and POP answer,
// the offsets acknowledged as a Java BitSet from the answer's start
// offset, with the answer's popTime and invisibleTime: popTime +
// invisibleTime names the delivery, as an ExtraInfo's does
// (pop_remoting.go).
//
// Every offset is checked before anything is proposed; a request refused
// here acknowledges nothing:
//
//	what                                           answer
//	---------------------------------------------  -----------------
//	a body that does not decode (protocol's        INVALID_PARAMETER
//	  bounds: at most 1024 offsets); a group name
//	  that is not valid
//	no offset at all (as Java answers an empty     NO_MESSAGE
//	  list)
//	another broker's brokerName; a retry other     NO_MESSAGE
//	  than "0" (this broker hands out no message
//	  of a retry topic); an offset whose message
//	  is not held by that delivery (acknowledged,
//	  delivered again, never handed out)
//
// Then all of them are acknowledged in one entry, and the answer is
// SUCCESS once it is applied here. A receipt that changed between the
// check and the entry (delivered again, or given a new invisible time,
// meanwhile) is skipped by raft as ACK_MESSAGE's is; the answer is then
// NO_MESSAGE naming those, the others being acknowledged. A proposal that
// fails is answered as ACK_MESSAGE's (SERVICE_NOT_AVAILABLE, or
// SYSTEM_ERROR when its outcome is unknown): a client may send the batch
// again, and what was acknowledged then is NO_MESSAGE.
//
// Java answers SUCCESS whatever an entry names (it skips offsets outside
// the queue, and its acknowledgements are messages the revive service
// reads later); this broker refuses what it cannot honour instead.

import (
	"context"
	"fmt"
	"strings"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// maxNamedReceipts bounds the receipts an answer's remark names.
const maxNamedReceipts = 8

// batchAckRemote serves BATCH_ACK_MESSAGE on the leader.
func (b *Broker) batchAckRemote(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	body, err := protocol.DecodeBatchAckMessageRequestBody(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	acks, names, err := b.batchAckReceipts(body)
	if err != nil {
		return popReceiptResponse(req, err), nil
	}
	if len(acks) == 0 {
		return remoting.NewResponse(req, remoting.NoMessage, "no offset to acknowledge"), nil
	}
	errs, err := b.ackPopped(ctx, acks)
	if err != nil {
		return nil, err
	}
	var failed []string
	for i, e := range errs {
		if e != nil {
			failed = append(failed, names[i])
		}
	}
	if len(failed) > 0 {
		return remoting.NewResponse(req, remoting.NoMessage, fmt.Sprintf("%d of the %d messages acknowledged; not held any more by these receipts (delivered again, or given a new invisible time, meanwhile): %s",
			len(acks)-len(failed), len(acks), nameList(failed))), nil
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// batchAckReceipts maps the body's offsets to the receipts they name, each
// once, with a name for each (topic/queue/offset); an offset that names
// no receipt held fails the whole request (see the file comment).
func (b *Broker) batchAckReceipts(body *protocol.BatchAckMessageRequestBody) ([]popAck, []string, error) {
	if body.BrokerName != "" && body.BrokerName != b.cfg.BrokerName {
		return nil, nil, fmt.Errorf("%w: the receipts are of broker %s, not %s", ErrInvalidReceipt, body.BrokerName, b.cfg.BrokerName)
	}
	md := b.group.Metadata()
	type key struct {
		q      metadata.PopQueue
		offset int64
	}
	seen := map[key]bool{}
	var acks []popAck
	var names, stale []string
	for _, a := range body.Acks {
		if err := validateGroup(a.ConsumerGroup); err != nil {
			return nil, nil, err
		}
		if a.Retry != protocol.PopRetryNormal && len(a.Offsets) > 0 {
			return nil, nil, fmt.Errorf("%w: retry %q of %s/%d: this broker hands out no messages of a POP retry topic",
				ErrInvalidReceipt, a.Retry, a.Topic, a.QueueID)
		}
		for _, off := range a.Offsets {
			k := key{metadata.PopQueue{Group: a.ConsumerGroup, Topic: a.Topic, QueueID: a.QueueID}, off}
			if seen[k] {
				continue
			}
			seen[k] = true
			name := fmt.Sprintf("%s/%d/%d", a.Topic, a.QueueID, off)
			r, ok := md.PopReceipt(a.ConsumerGroup, a.Topic, a.QueueID, off)
			if !ok || r.Until != a.PopTime+a.InvisibleTime {
				stale = append(stale, name)
				continue
			}
			h := ReceiptHandle{BrokerName: b.cfg.BrokerName, Group: a.ConsumerGroup, Topic: a.Topic, QueueID: a.QueueID, Offset: off, Epoch: r.Epoch}
			acks = append(acks, popAck{group: a.ConsumerGroup, topic: a.Topic, handle: h.Encode()})
			names = append(names, name)
		}
	}
	if len(stale) > 0 {
		return nil, nil, fmt.Errorf("%w: none of the %d messages acknowledged: %d are not held by these receipts (acknowledged, or delivered again since): %s",
			ErrInvalidReceipt, len(acks)+len(stale), len(stale), nameList(stale))
	}
	return acks, names, nil
}

// nameList joins the first maxNamedReceipts names, and says how many more.
func nameList(names []string) string {
	if len(names) <= maxNamedReceipts {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedReceipts], ", "), len(names)-maxNamedReceipts)
}

// batchAckRes is what a BATCH_ACK_MESSAGE needs of the ACL: SUB on every
// group and topic its body names (Java's header-based check names none:
// the request has no header).
func batchAckRes(req *remoting.Command) ([]acl.Resource, error) {
	body, err := protocol.DecodeBatchAckMessageRequestBody(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err) // as the handler answers it
	}
	var out []acl.Resource
	seen := map[acl.Resource]bool{}
	for _, a := range body.Acks {
		for _, r := range []acl.Resource{{Kind: acl.Group, Name: a.ConsumerGroup, Perm: acl.Sub}, topicRes(a.Topic, acl.Sub)} {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}
