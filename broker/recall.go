package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Message recall (RocketMQ 5.3): a producer recalls a timer message before
// it is due, by the recall handle its send answered.
//
// The handle (protocol.RecallHandle, Java's RecallMessageHandle.HandleV1)
// is the URL-safe base64 of "v1 topic brokerName timestamp messageId",
// timestamp being the parked message's TIMER_OUT_MS + 1 and messageId its
// UNIQ_KEY. The leader answers a SEND_MESSAGE or SEND_MESSAGE_V2 that
// parked a timer message (not a batch, not a %RETRY% topic, as Java) with
// it in the ext field recallHandle; the gRPC port copies it into the
// SendResultEntry.
//
// RECALL_MESSAGE (370) is served by the leader (a follower forwards it),
// checked as Java's RecallMessageProcessor checks it:
//
//	check                                      answer
//	-----------------------------------------  -------------------------------------
//	header without topic or recallHandle       1  SYSTEM_ERROR
//	the topic unknown                          17 TOPIC_NOT_EXIST
//	a handle that does not decode              604 ILLEGAL_OPERATION "recall handle
//	                                             is invalid"
//	the handle's topic is not the header's     604 "recall failed, topic not match"
//	the handle names another broker group      604 "recall failed, broker service not
//	                                             available"
//	its time passed, or beyond the max delay   604 "recall failed, timestamp invalid"
//	the timer already delivered (the cursor    604 "recall failed, timestamp invalid"
//	  reached its time)
//	otherwise (whether or not such a message   0  SUCCESS, msgId = the handle's
//	  is parked, as Java)                         message id
//
// What a recall leaves is replicated state, so every replica and every
// later leader holds it: one consumer offset of the internal group
// %LEDGERMQ_TIMER_RECALL%<s> (s = the handle's timestamp in seconds) for
// the "topic" <topic>:<base64url(messageId)>, queue 0, the timestamp as
// its value (metadata's commitOffsets op, which every format version
// applies). The leader's timer scheduler does not deliver a timer whose
// topic and UNIQ_KEY are recalled in the second of its due time + 1; it
// counts it as done, in the same entry as the other deliveries. The
// recall and the scheduler's rounds exclude each other (timerService.mu),
// and a recall first waits for a barrier, so no delivery entry built
// before the recall applies after it. Once the scheduler has handled every
// timer due by now (its index complete, nothing late left), it drops the
// groups of the seconds before now (a deleteGroup op each): the state of a
// recall lives until the message's time has passed.

// recallGroupPrefix names the internal groups of the recalled timers.
const recallGroupPrefix = "%LEDGERMQ_TIMER_RECALL%"

// recallGroup is the internal group of the recalls whose handle's
// timestamp is ts (Unix ms).
func recallGroup(ts int64) string {
	return recallGroupPrefix + strconv.FormatInt(ts/1000, 10)
}

// recallKey is the offsets-table "topic" of a recalled message.
func recallKey(topic, msgID string) string {
	return topic + ":" + base64.RawURLEncoding.EncodeToString([]byte(msgID))
}

// recallOp is the replicated record of a recall.
func recallOp(topic, msgID string, ts int64) metadata.Op {
	return metadata.Op{Kind: metadata.OpCommitOffsets, Offsets: []metadata.OffsetCommit{
		{Group: recallGroup(ts), Topic: recallKey(topic, msgID), QueueID: 0, Offset: ts}}}
}

// isRecalled reports whether the timer of topic and UNIQ_KEY msgID due at
// due (ms) was recalled.
func isRecalled(md *metadata.State, topic, msgID string, due int64) bool {
	if msgID == "" {
		return false
	}
	_, ok := md.Offset(recallGroup(due+1), recallKey(topic, msgID), 0)
	return ok
}

// errRecallDelivered: the timer a recall names was delivered already.
var errRecallDelivered = errors.New("broker: the timer message was delivered already")

// recallMessage serves RECALL_MESSAGE on the leader (the table above).
func (b *Broker) recallMessage(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.RecallMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	illegal := func(remark string) (*remoting.Command, error) {
		resp := remoting.NewResponse(req, remoting.IllegalOperation, remark)
		resp.ExtFields = map[string]string{"MSG_REGION": defaultRegion}
		return resp, nil
	}
	if _, ok := b.group.Metadata().Topic(h.Topic); !ok {
		return nil, fmt.Errorf("%w: recall failed, the topic[%s] not exist", ErrTopicNotExist, h.Topic)
	}
	handle, err := protocol.DecodeRecallHandle(h.RecallHandle)
	if err != nil {
		return illegal(err.Error())
	}
	if handle.Topic != h.Topic {
		return illegal("recall failed, topic not match")
	}
	if handle.BrokerName != b.cfg.BrokerName {
		return illegal("recall failed, broker service not available")
	}
	ts := handle.TimestampMS()
	left := ts - b.cfg.Clock().UnixMilli()
	if left <= 0 || left >= b.cfg.TimerMaxDelay.Milliseconds() {
		return illegal("recall failed, timestamp invalid")
	}
	if err := b.timers.recall(ctx, h.Topic, handle.MessageID, ts); errors.Is(err, errRecallDelivered) {
		return illegal("recall failed, timestamp invalid")
	} else if err != nil {
		return nil, fmt.Errorf("recall failed: %w", err)
	}
	b.log.Debug("timer message recalled", "topic", h.Topic, "message", handle.MessageID, "due", ts-1)
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = map[string]string{"msgId": handle.MessageID, "MSG_REGION": defaultRegion}
	return resp, nil
}

// recall records that the timer of topic and UNIQ_KEY msgID, whose handle
// says ts (its due time + 1), must not be delivered; errRecallDelivered
// when the scheduler's cursor reached its time already. It excludes the
// scheduler's rounds and waits for a barrier first, so the progress it
// reads includes every delivery proposed before it.
func (s *timerService) recall(ctx context.Context, topic, msgID string, ts int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.g.Barrier(ctx); err != nil {
		return err
	}
	if p := readTimerProgress(s.g.Metadata()); p.R.Due >= ts-1 {
		return errRecallDelivered
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if _, err := s.g.ProposeWithOp(pctx, nil, recallOp(topic, msgID, ts)); err != nil {
		return err
	}
	return nil
}

// maxRecallDrops bounds the recall groups one round drops.
const maxRecallDrops = 64

// dropRecalls drops the recall groups of the seconds before horizon (ms):
// every timer due by then has been handled. The scheduler calls it with
// s.mu held.
func (s *timerService) dropRecalls(ctx context.Context, horizon int64) error {
	groups := s.g.Metadata().OffsetGroupsWithPrefix(recallGroupPrefix)
	n := 0
	for _, g := range groups {
		sec, err := strconv.ParseInt(strings.TrimPrefix(g, recallGroupPrefix), 10, 64)
		if err != nil || (sec+1)*1000 > horizon {
			continue
		}
		if n == maxRecallDrops {
			break
		}
		n++
		pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
		_, err = s.g.ProposeWithOp(pctx, nil, metadata.Op{Kind: metadata.OpDeleteGroup, Name: g})
		cancel()
		if err != nil {
			return fmt.Errorf("dropping recalls %s: %w", g, err)
		}
	}
	return nil
}
