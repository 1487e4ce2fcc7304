package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// maxQueryCQUnits bounds the units one QUERY_CONSUME_QUEUE answers.
const maxQueryCQUnits = 1024

// queryConsumeQueue serves QUERY_CONSUME_QUEUE (321, mqadmin queryCq) as
// Java's AdminBrokerProcessor does, from the answering node's replica:
// ext topic, queueId, index, count (at most maxQueryCQUnits) and
// optionally consumerGroup. The body has the queue's min and max index
// and its units from index on (CommitLog offset, size, tags hash); with a
// group, the group's subscription (this node's heartbeats) and whether
// each unit passes its filter, or "<group>@<topic> is not online!". An
// unknown queue is SYSTEM_ERROR "<queueId>@<topic> is not exist!"; an
// index outside the queue is SUCCESS without units and with the remark
// "Index <i> of <queueId>@<topic> is not exist!", as Java's.
func (b *Broker) queryConsumeQueue(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.QueryConsumeQueueRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	tc, ok := b.group.Metadata().Topic(h.Topic)
	if !ok || h.QueueID < 0 || h.QueueID >= max(tc.ReadQueueNums, tc.WriteQueueNums) {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("%d@%s is not exist!", h.QueueID, h.Topic))
	}
	st := b.group.Store()
	body := protocol.QueryConsumeQueueResponseBody{}
	body.MinQueueIndex, _ = st.MinOffset(h.Topic, h.QueueID)
	body.MaxQueueIndex, _ = st.MaxOffset(h.Topic, h.QueueID)

	var eval func(tagsCode int64) bool
	if h.ConsumerGroup != "" {
		sub, ok := b.consumers.subscription(h.ConsumerGroup, h.Topic)
		if !ok {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", h.ConsumerGroup, h.Topic)
		} else {
			sd := subscriptionDataOf(h.Topic, sub)
			body.SubscriptionData = &sd
			body.FilterData = "null" // Java's ConsumerFilterData of a tag subscription
			switch {
			case sub.err != nil:
				eval = func(int64) bool { return false }
			case sub.filter.sql != nil:
				// SQL92 needs the message's properties: Java's
				// ConsumeQueue check passes every unit without a bloom
				// filter, and so does this one.
				f, _ := json.Marshal(map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic,
					"expression": sub.expr, "expressionType": sub.exprType})
				body.FilterData = string(f)
				eval = func(int64) bool { return true }
			default:
				eval = sub.filter.tags.MatchTagsCode
			}
		}
	}

	body.QueueData = []protocol.ConsumeQueueData{}
	remark := ""
	if n := min(int(h.Count), maxQueryCQUnits); n > 0 {
		res, err := st.Get(h.Topic, h.QueueID, h.Index, n, nil)
		if err != nil || len(res.Records) == 0 || res.Records[0].QueueOffset != h.Index {
			remark = fmt.Sprintf("Index %d of %d@%s is not exist!", h.Index, h.QueueID, h.Topic)
		} else {
			for _, r := range res.Records {
				d := protocol.ConsumeQueueData{PhysicOffset: r.PhysicalOffset, PhysicSize: int32(len(r.Bytes)), TagsCode: r.TagsCode}
				if eval != nil {
					d.Eval = eval(r.TagsCode)
				}
				body.QueueData = append(body.QueueData, d)
			}
		}
		if err == nil {
			res.Release()
		}
	}
	resp := jsonResponse(req, body)
	resp.Remark = remark
	return resp
}
