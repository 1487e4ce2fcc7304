package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// PullSysFlag bits of PULL_MESSAGE.
const (
	pullFlagCommitOffset = protocol.PullFlagCommitOffset
	pullFlagSuspend      = protocol.PullFlagSuspend
	pullFlagSubscription = protocol.PullFlagSubscription
)

// SelectorType is the language of a subscription expression.
type SelectorType int

const (
	// TAG: "*", or tags joined by "||" ("TagA || TagB").
	TAG SelectorType = iota
	// SQL92: a selector on the message's properties ("a > 5 AND b = 'x'");
	// the broker must have property filtering enabled.
	SQL92
)

func (t SelectorType) String() string {
	if t == SQL92 {
		return "SQL92"
	}
	return "TAG"
}

// Selector filters a subscription. The zero value takes every message.
type Selector struct {
	Type       SelectorType
	Expression string
}

// expression is the selector's text as the broker wants it ("*" for an
// empty tag expression).
func (s Selector) expression() string {
	e := strings.TrimSpace(s.Expression)
	if e == "" && s.Type == TAG {
		return "*"
	}
	return e
}

// tags returns the tag set of a TAG selector, nil for "*" or SQL92.
func (s Selector) tags() []string {
	if s.Type != TAG {
		return nil
	}
	e := s.expression()
	if e == "*" {
		return nil
	}
	var out []string
	for t := range strings.SplitSeq(e, "||") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// pullParams is what a pull carries besides its queue and offset.
type pullParams struct {
	sub          Selector
	commitOffset int64 // sent with the COMMIT_OFFSET bit when > 0
	tags         []string
}

// pullResult is a pull's answer: one of the codes 0, 19, 20, 21 (any
// other is an error), the offset to pull next and the messages.
type pullResult struct {
	code           int32
	next           int64
	minOff, maxOff int64
	msgs           []*MessageExt
	bytes          int // of the bodies in msgs
}

// pull sends one PULL_MESSAGE for q at offset, long-polling, to the
// group's leader (or a follower while there is none; all hold the
// committed log). Transport errors and SERVICE_NOT_AVAILABLE re-read the
// route and retry at once (call).
func (b *consumerBase) pull(ctx context.Context, q Queue, offset int64, p pullParams) (*pullResult, error) {
	co := b.opts.consumer
	ctx, cancel := context.WithTimeout(ctx, co.longPoll+pullTimeoutMargin)
	defer cancel()
	flag := pullFlagSuspend | pullFlagSubscription
	if p.commitOffset > 0 {
		flag |= pullFlagCommitOffset
	}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: b.opts.group, Topic: q.Topic, QueueID: q.QueueID,
		QueueOffset: offset, MaxMsgNums: int32(co.pullBatch), SysFlag: flag, CommitOffset: max(p.commitOffset, 0),
		SuspendTimeoutMillis: co.longPoll.Milliseconds(), Subscription: p.sub.expression(), ExpressionType: p.sub.Type.String()}
	resp, addr, err := b.call(ctx, q, true, h.Request)
	if err != nil {
		return nil, fmt.Errorf("client: pull %v at %d: %w", q, offset, err)
	}
	switch resp.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
	default:
		return nil, fmt.Errorf("client: pull %v at %d: %w", q, offset, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
	}
	var rh protocol.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("client: pull %v at %d: answer from %s: %w", q, offset, addr, err)
	}
	r := &pullResult{code: resp.Code, next: rh.NextBeginOffset, minOff: rh.MinOffset, maxOff: rh.MaxOffset}
	if resp.Code != remoting.Success {
		return r, nil
	}
	recs, err := message.DecodeRecords(resp.Body)
	if err != nil && len(recs) == 0 {
		return nil, fmt.Errorf("client: pull %v at %d: body from %s: %w", q, offset, addr, err)
	}
	if err != nil {
		// Keep what decoded; the next pull starts after it.
		b.opts.logger.Warn("pull body partly undecodable", "queue", q, "addr", addr, "error", err)
		r.next = recs[len(recs)-1].QueueOffset + 1
	}
	for _, e := range recs {
		if !tagMatches(p.tags, e.Properties[message.PropertyTags]) {
			continue // the broker filters by tag hash; hashes collide
		}
		r.msgs = append(r.msgs, b.received(q, e, r))
		r.bytes += len(e.Body)
	}
	return r, nil
}

// received turns a pulled record into what a handler sees: the body
// inflated, the original topic of a retried message restored, the
// client-side properties RocketMQ clients add.
func (b *consumerBase) received(q Queue, e *message.Ext, r *pullResult) *MessageExt {
	if e.SysFlag&message.SysFlagCompressed != 0 {
		if body, err := inflate(e.Body, maxInflatedBody); err == nil {
			e.Body = body
		} else {
			b.opts.logger.Warn("compressed body does not inflate; delivered as stored", "queue", q,
				"offset", e.QueueOffset, "error", err)
		}
	}
	if e.Properties == nil {
		e.Properties = map[string]string{}
	}
	if rt := e.Properties[message.PropertyRetryTopic]; rt != "" && strings.HasPrefix(e.Topic, retryTopicPrefix) {
		e.Topic = rt
	}
	e.Properties[message.PropertyMinOffset] = strconv.FormatInt(r.minOff, 10)
	e.Properties[message.PropertyMaxOffset] = strconv.FormatInt(r.maxOff, 10)
	return &MessageExt{Ext: *e, Queue: q, MsgID: e.MsgID()}
}

// tagMatches checks a message's tag against a tag set (nil: all).
func tagMatches(tags []string, tag string) bool {
	if tags == nil {
		return true
	}
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}
