package client

// Message look-ups: by offset msgId (VIEW_MESSAGE_BY_ID, 33, at the
// broker the id names) or by UNIQ_KEY (QUERY_MESSAGE, 12, on the UNIQ_KEY
// index), by key (12), by queue offset (one PULL_MESSAGE, 11), and reads
// of queues by offset and time range (29 to find each queue's first
// offset, then pulls).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// ToolsConsumerGroup is the group admin pulls name, as mqadmin's.
	ToolsConsumerGroup = "TOOLS_CONSUMER"
	// DefaultQueryMax bounds MessagesByKey (the broker caps it at 64).
	DefaultQueryMax = 64
	// DefaultTimeRangeMax bounds MessagesByTime (the dashboard's cap).
	DefaultTimeRangeMax = 2000
	// pullBatch is how many messages one admin pull asks for.
	pullBatch = 32
)

// MessageByID returns the message an id names: an offset msgId is looked
// up at the broker encoded in it (33); an id that is not one, or that
// broker's miss, is then looked up as a UNIQ_KEY among the topic's broker
// groups (12 with _UNIQUE_KEY_QUERY), which needs topic. ErrNoSuchMessage
// when neither finds it.
func (a *Admin) MessageByID(ctx context.Context, topic, id string) (*message.Ext, error) {
	var errs []error
	if host, phy, err := message.ParseOffsetMsgID(id); err == nil {
		req := (&protocol.ViewMessageRequestHeader{Offset: phy}).Request()
		resp, err := a.call(ctx, host.String(), req, 0)
		if err == nil {
			m, _, derr := message.DecodeRecord(resp.Body)
			if derr == nil && (topic == "" || m.Topic == topic) {
				return m, nil
			}
			err = derr
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if topic == "" {
		err := fmt.Errorf("%w: %s is not an offset msgId found at its broker; give the topic (-t) to look it up as a UNIQ_KEY",
			ErrNoSuchMessage, id)
		return nil, withCauses(err, "offset msgId look-up", errs)
	}
	msgs, err := a.queryIndex(ctx, topic, id, 1, time.Time{}, time.Time{}, true)
	if err != nil {
		return nil, withCauses(err, "offset msgId look-up", errs)
	}
	return msgs[0], nil
}

// withCauses is err, followed by what the earlier attempts (what) failed
// with when there were any; both stay reachable through errors.Is.
func withCauses(err error, what string, causes []error) error {
	if len(causes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s: %w)", err, what, errors.Join(causes...))
}

// MessagesByKey returns up to maxNum (DefaultQueryMax when <= 0) messages
// of topic whose KEYS contain key, stored within [begin, end] (zero times:
// unbounded), newest first, from every broker group of the topic (12).
func (a *Admin) MessagesByKey(ctx context.Context, topic, key string, maxNum int, begin, end time.Time) ([]*message.Ext, error) {
	return a.queryIndex(ctx, topic, key, maxNum, begin, end, false)
}

func (a *Admin) queryIndex(ctx context.Context, topic, key string, maxNum int, begin, end time.Time, uniq bool) ([]*message.Ext, error) {
	if maxNum <= 0 {
		maxNum = DefaultQueryMax
	}
	endMS := ms(end)
	if end.IsZero() {
		endMS = 1<<63 - 1
	}
	_, groups, err := a.routeGroups(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []*message.Ext
	seen := map[string]bool{}
	for _, g := range groups {
		h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: int32(min(maxNum, math.MaxInt32)),
			BeginTimestamp: ms(begin), EndTimestamp: endMS, UniqueKeyQuery: uniq}
		resp, err := a.call(ctx, g.addr, h.Request(), 0, remoting.Success, remoting.QueryNotFound)
		if err != nil {
			return nil, fmt.Errorf("client: query %s on %s: %w", key, g.name, err)
		}
		if resp.Code == remoting.QueryNotFound {
			continue
		}
		msgs, err := message.DecodeRecords(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("client: query answer from %s: %w", g.addr, err)
		}
		for _, m := range msgs {
			if id := m.OffsetMsgID(); !seen[id] && (!uniq || m.UniqKey() == key) {
				seen[id] = true
				out = append(out, m)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no message of %s with key %s", ErrNoSuchMessage, topic, key)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StoreTimestamp > out[j].StoreTimestamp })
	if len(out) > maxNum {
		out = out[:maxNum]
	}
	return out, nil
}

// MessageAtOffset returns the message at a queue offset of one broker
// group (brokerName may be empty when the topic is on one group only),
// read with one PULL_MESSAGE as ToolsConsumerGroup.
func (a *Admin) MessageAtOffset(ctx context.Context, topic, brokerName string, queueID int32, offset int64) (*message.Ext, error) {
	_, groups, err := a.routeGroups(ctx, topic)
	if err != nil {
		return nil, err
	}
	g, err := pickBrokerGroup(groups, brokerName, topic)
	if err != nil {
		return nil, err
	}
	msgs, _, err := a.pull(ctx, g.addr, topic, queueID, offset, 1)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.QueueOffset == offset {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %s/%s/%d has no message at offset %d", ErrNoSuchMessage, topic, g.name, queueID, offset)
}

// pickBrokerGroup returns the named group, or the only one.
func pickBrokerGroup(groups []brokerGroup, name, topic string) (brokerGroup, error) {
	for _, g := range groups {
		if g.name == name || name == "" && len(groups) == 1 {
			return g, nil
		}
	}
	if name == "" {
		return brokerGroup{}, fmt.Errorf("%w: topic %s is on %d broker groups: name one", ErrNoSuchBroker, topic, len(groups))
	}
	return brokerGroup{}, fmt.Errorf("%w: topic %s is not on broker group %s", ErrNoSuchBroker, topic, name)
}

// pull reads up to n messages of a queue from offset; it returns them
// and the next offset. Nothing there is no error and no message.
func (a *Admin) pull(ctx context.Context, addr, topic string, queueID int32, offset int64, n int) ([]*message.Ext, int64, error) {
	return a.pullAs(ctx, ToolsConsumerGroup, addr, topic, queueID, offset, n)
}

// pullAs is pull naming group as the consumer group.
func (a *Admin) pullAs(ctx context.Context, group, addr, topic string, queueID int32, offset int64, n int) ([]*message.Ext, int64, error) {
	req := (&protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID,
		QueueOffset: offset, MaxMsgNums: int32(n), Subscription: "*", ExpressionType: protocol.ExpressionTypeTag}).Request()
	resp, err := a.call(ctx, addr, req, 0, remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved)
	if err != nil {
		return nil, 0, fmt.Errorf("client: pull %s/%d@%d: %w", topic, queueID, offset, topicErr(err))
	}
	// An answer without a readable header reads next 0, which ends the
	// callers' loops (next <= offset) rather than failing a look-up.
	var h protocol.PullMessageResponseHeader
	_ = h.Decode(resp.ExtFields)
	next := h.NextBeginOffset
	if resp.Code != remoting.Success {
		return nil, next, nil
	}
	msgs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("client: pull answer from %s: %w", addr, err)
	}
	return msgs, next, nil
}

// MessagesByTime returns up to maxNum (DefaultTimeRangeMax when <= 0)
// messages of topic stored within [begin, end], oldest first per queue,
// queues in broker and queue order: ReadMessages of every queue.
func (a *Admin) MessagesByTime(ctx context.Context, topic string, begin, end time.Time, maxNum int) ([]*message.Ext, error) {
	return a.ReadMessages(ctx, ReadRequest{Topic: topic, Begin: begin, End: end, Max: maxNum})
}

// ReadRequest says which stored messages ReadMessages returns: those of
// Topic's queues (all, or one broker group's, or some queues), from a
// queue offset or a time, until a time, at most Max.
type ReadRequest struct {
	Topic string
	// BrokerName reads one broker group's queues ("": every group's).
	BrokerName string
	// Queues are the queue ids to read (nil: every readable queue).
	Queues []int32
	// Offset is the first queue offset read; a queue starts at the later
	// of it and the first message stored at or after Begin.
	Offset int64
	// Begin and End bound the store times (zero: unbounded).
	Begin, End time.Time
	// Max bounds the messages returned (DefaultTimeRangeMax when <= 0).
	Max int
	// Group is the consumer group the pulls name (ToolsConsumerGroup when
	// empty); nothing is committed for it.
	Group string
	// Tags keeps only messages with one of these tags (nil: every one).
	Tags []string
}

// ReadMessages reads stored messages as a pull consumer would without
// committing anything: each queue's first offset by time
// (SEARCH_OFFSET_BY_TIMESTAMP, 29), then pulls (PULL_MESSAGE, 11) until a
// message is past End or the queue's end; oldest first per queue, queues
// in broker and queue order. mqadmin's consumeMessage and printMsgByQueue.
func (a *Admin) ReadMessages(ctx context.Context, r ReadRequest) ([]*message.Ext, error) {
	if r.Max <= 0 {
		r.Max = DefaultTimeRangeMax
	}
	if r.Group == "" {
		r.Group = ToolsConsumerGroup
	}
	rd, groups, err := a.routeGroups(ctx, r.Topic)
	if err != nil {
		return nil, err
	}
	if r.BrokerName != "" {
		g, err := pickBrokerGroup(groups, r.BrokerName, r.Topic)
		if err != nil {
			return nil, err
		}
		groups = []brokerGroup{g}
	}
	wantTag := map[string]bool{}
	for _, t := range r.Tags {
		wantTag[t] = true
	}
	var out []*message.Ext
	for _, g := range groups {
		var queues int32
		for _, q := range rd.QueueDatas {
			if q.BrokerName == g.name {
				queues = q.ReadQueueNums
			}
		}
		for qid := int32(0); qid < queues && len(out) < r.Max; qid++ {
			if r.Queues != nil && !slices.Contains(r.Queues, qid) {
				continue
			}
			off, err := a.queueOffset(ctx, g.addr, remoting.SearchOffsetByTimestamp, r.Topic, qid, ms(r.Begin))
			if err != nil {
				return nil, err
			}
			off = max(off, r.Offset)
			for len(out) < r.Max {
				msgs, next, err := a.pullAs(ctx, r.Group, g.addr, r.Topic, qid, off, pullBatch)
				if err != nil {
					return nil, err
				}
				past := false
				for _, m := range msgs {
					if !r.End.IsZero() && m.StoreTimestamp > ms(r.End) {
						past = true
						break
					}
					if m.StoreTimestamp >= ms(r.Begin) && m.QueueOffset >= off && len(out) < r.Max && (len(wantTag) == 0 || wantTag[m.Tags()]) {
						out = append(out, m)
					}
				}
				if past || len(msgs) == 0 || next <= off {
					break
				}
				off = next
			}
		}
	}
	return out, nil
}

// ConsumeQueueUnits asks the broker node at addr (empty: the first broker
// group serving the topic) for a queue's ConsumeQueue units from an index
// (QUERY_CONSUME_QUEUE, 321; mqadmin queryCq). remark is the broker's (an
// index outside the queue answers no units and says so).
func (a *Admin) ConsumeQueueUnits(ctx context.Context, addr string, h protocol.QueryConsumeQueueRequestHeader) (body *protocol.QueryConsumeQueueResponseBody, remark string, err error) {
	if addr == "" {
		_, groups, err := a.routeGroups(ctx, h.Topic)
		if err != nil {
			return nil, "", err
		}
		if len(groups) == 0 {
			return nil, "", fmt.Errorf("%w: no broker group serves topic %s", ErrNoSuchBroker, h.Topic)
		}
		addr = groups[0].addr
	}
	resp, err := a.call(ctx, addr, h.Request(), 0)
	if err != nil {
		return nil, "", err
	}
	if body, err = protocol.DecodeQueryConsumeQueueBody(resp.Body); err != nil {
		return nil, "", fmt.Errorf("client: consume queue from %s: %w", addr, err)
	}
	return body, resp.Remark, nil
}
