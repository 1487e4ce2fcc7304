package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// The other requests of POP consumption over remoting (RocketMQ 5.x):
// PEEK_MESSAGE (200052), NOTIFICATION (200054), POLLING_INFO (200055) and
// BATCH_ACK_MESSAGE (200151). Like POP_MESSAGE's, their codes exceed
// int16: JSON headers only.
//
//	code    request             header                      body
//	------  ------------------  --------------------------  --------------------------
//	200052  PEEK_MESSAGE        PeekMessageRequestHeader    —
//	        answer              PopMessageResponseHeader    stored records (a pull's)
//	200054  NOTIFICATION        NotificationRequestHeader   —
//	        answer              NotificationResponseHeader  —
//	200055  POLLING_INFO        PollingInfoRequestHeader    —
//	        answer              PollingInfoResponseHeader   —
//	200151  BATCH_ACK_MESSAGE   —                           BatchAckMessageRequestBody
//	        answer              —                           —

// PeekMessageRequestHeader is the header of PEEK_MESSAGE, consumer →
// broker: a look at the messages a POP of the group would get, changing
// nothing.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes (non-empty)
//	Topic          topic          yes (non-empty)
//	QueueID        queueId        yes (-1: every queue)
//	MaxMsgNums     maxMsgNums     yes
type PeekMessageRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	MaxMsgNums    int32
}

// Encode returns the ext fields, every field written.
func (h *PeekMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"maxMsgNums":    itoa32(h.MaxMsgNums),
	}
}

// Decode reads the ext fields, with the rules of PopMessageRequestHeader's.
func (h *PeekMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "PEEK_MESSAGE request header", ext: ext}
	out := PeekMessageRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		MaxMsgNums:    r.int32("maxMsgNums", true),
	}
	checkGroupTopic(&r, out.ConsumerGroup, out.Topic)
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the PEEK_MESSAGE request.
func (h *PeekMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.PeekMessage, h.Encode(), nil)
}

// NotificationRequestHeader is the header of NOTIFICATION, consumer →
// broker: is there a message a POP of the group could get, waiting up to
// PollTime for one.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes (non-empty)
//	Topic          topic          yes (non-empty)
//	QueueID        queueId        yes (-1: any queue)
//	PollTime       pollTime       yes (ms the broker may hold the request)
//	BornTime       bornTime           (the client's clock, ms; Java's broker
//	                                  fills it in when absent)
//	Order          order              (a FIFO consumer)
//	AttemptID      attemptId
type NotificationRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	PollTime      int64
	BornTime      int64
	Order         bool
	AttemptID     string
}

// Encode returns the ext fields; attemptId only when set.
func (h *NotificationRequestHeader) Encode() map[string]string {
	m := map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"pollTime":      itoa64(h.PollTime),
		"bornTime":      itoa64(h.BornTime),
		"order":         strconv.FormatBool(h.Order),
	}
	if h.AttemptID != "" {
		m["attemptId"] = h.AttemptID
	}
	return m
}

// Decode reads the ext fields, with the rules of PopMessageRequestHeader's.
func (h *NotificationRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "NOTIFICATION request header", ext: ext}
	out := NotificationRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		PollTime:      r.int64("pollTime", true),
		BornTime:      r.int64("bornTime", false),
		Order:         r.bool("order"),
		AttemptID:     r.str("attemptId", false),
	}
	checkGroupTopic(&r, out.ConsumerGroup, out.Topic)
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the NOTIFICATION request.
func (h *NotificationRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.Notification, h.Encode(), nil)
}

// NotificationResponseHeader is the header of a NOTIFICATION answer:
// hasMsg (required) and pollingFull (the broker holds as many waiting
// requests as it will: asked again later, it may know more).
type NotificationResponseHeader struct {
	HasMsg      bool
	PollingFull bool
}

// Encode returns the ext fields.
func (h *NotificationResponseHeader) Encode() map[string]string {
	return map[string]string{"hasMsg": strconv.FormatBool(h.HasMsg), "pollingFull": strconv.FormatBool(h.PollingFull)}
}

// Decode reads the ext fields; hasMsg must be present.
func (h *NotificationResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "NOTIFICATION response header", ext: ext}
	out := NotificationResponseHeader{HasMsg: strings.EqualFold(r.str("hasMsg", true), "true"), PollingFull: r.bool("pollingFull")}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// PollingInfoRequestHeader is the header of POLLING_INFO, consumer →
// broker: how many POP requests of the group for the topic and queue
// (-1: those asking for any queue) the broker holds waiting.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes (non-empty)
//	Topic          topic          yes (non-empty)
//	QueueID        queueId        yes
type PollingInfoRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
}

// Encode returns the ext fields.
func (h *PollingInfoRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID)}
}

// Decode reads the ext fields, with the rules of PopMessageRequestHeader's.
func (h *PollingInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "POLLING_INFO request header", ext: ext}
	out := PollingInfoRequestHeader{ConsumerGroup: r.str("consumerGroup", true), Topic: r.str("topic", true), QueueID: r.int32("queueId", true)}
	checkGroupTopic(&r, out.ConsumerGroup, out.Topic)
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the POLLING_INFO request.
func (h *PollingInfoRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.PollingInfo, h.Encode(), nil)
}

// PollingInfoResponseHeader is the header of a POLLING_INFO answer:
// pollingNum (required).
type PollingInfoResponseHeader struct {
	PollingNum int32
}

// Encode returns the ext fields.
func (h *PollingInfoResponseHeader) Encode() map[string]string {
	return map[string]string{"pollingNum": itoa32(h.PollingNum)}
}

// Decode reads the ext fields.
func (h *PollingInfoResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "POLLING_INFO response header", ext: ext}
	out := PollingInfoResponseHeader{PollingNum: r.int32("pollingNum", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// MaxBatchAckOffsets bounds the offsets (and the entries) of one
// BATCH_ACK_MESSAGE: DecodeBatchAckMessageRequestBody refuses more.
const MaxBatchAckOffsets = 1024

// BatchAck is one entry of a BATCH_ACK_MESSAGE body: the messages of one
// queue that one POP answer handed out (Java BatchAck). A Java client
// merges the ExtraInfos it acknowledges by retry, queue, start offset and
// pop time; each becomes one bit of the entry's bit set, at its queue
// offset less StartOffset.
//
// Its JSON object, as fastjson writes it: Java's short names; the long
// names are read too (the short one wins when both are present).
//
//	name  long name      type    field
//	----  -------------  ------  ------------------------------------------
//	c     consumerGroup  string  ConsumerGroup (required, non-empty)
//	t     topic          string  Topic (required, non-empty)
//	r     retry          string  Retry: "0" the topic itself, "1" and "2"
//	                             Java's POP retry topics
//	so    startOffset    int64   StartOffset (ExtraInfo's first field, ≥ 0)
//	q     queueId        int32   QueueID
//	rq    reviveQueueId  int32   ReviveQueueID (999: a FIFO pop's)
//	pt    popTime        int64   PopTime
//	it    invisibleTime  int64   InvisibleTime
//	b     bitSet         string  the bit set: base64 (standard, padded) of
//	                             java.util.BitSet.toByteArray; bit i (byte
//	                             i/8, bit i%8 from the least significant)
//	                             set for queue offset StartOffset + i
type BatchAck struct {
	ConsumerGroup string
	Topic         string
	Retry         string
	StartOffset   int64
	QueueID       int32
	ReviveQueueID int32
	PopTime       int64
	InvisibleTime int64
	// Offsets are the queue offsets acknowledged, ascending, each once
	// (nil when the bit set is empty).
	Offsets []int64
}

// BatchAckMessageRequestBody is the body of BATCH_ACK_MESSAGE (Java
// BatchAckMessageRequestBody): {"brokerName": …, "acks": [BatchAck…]}.
type BatchAckMessageRequestBody struct {
	BrokerName string
	Acks       []BatchAck
}

// batchAckJSON is a BatchAck as JSON: Java's short names and the long
// ones it reads too.
type batchAckJSON struct {
	C             *string `json:"c,omitempty"`
	ConsumerGroup *string `json:"consumerGroup,omitempty"`
	T             *string `json:"t,omitempty"`
	Topic         *string `json:"topic,omitempty"`
	R             *string `json:"r,omitempty"`
	Retry         *string `json:"retry,omitempty"`
	SO            *int64  `json:"so,omitempty"`
	StartOffset   *int64  `json:"startOffset,omitempty"`
	Q             *int32  `json:"q,omitempty"`
	QueueID       *int32  `json:"queueId,omitempty"`
	RQ            *int32  `json:"rq,omitempty"`
	ReviveQueueID *int32  `json:"reviveQueueId,omitempty"`
	PT            *int64  `json:"pt,omitempty"`
	PopTime       *int64  `json:"popTime,omitempty"`
	IT            *int64  `json:"it,omitempty"`
	InvisibleTime *int64  `json:"invisibleTime,omitempty"`
	B             *string `json:"b,omitempty"`
	BitSet        *string `json:"bitSet,omitempty"`
}

type batchAckBodyJSON struct {
	BrokerName string         `json:"brokerName,omitempty"`
	Acks       []batchAckJSON `json:"acks"`
}

// either is the first of a and b that is set, else the zero value.
func either[T any](a, b *T) T {
	if a != nil {
		return *a
	}
	if b != nil {
		return *b
	}
	var zero T
	return zero
}

// Encode returns the JSON body as a Java client writes it (short names).
// An offset below its entry's StartOffset, or MaxInt32 or more above it,
// cannot be written as a bit and is an error.
func (b *BatchAckMessageRequestBody) Encode() ([]byte, error) {
	out := batchAckBodyJSON{BrokerName: b.BrokerName}
	if b.Acks != nil {
		out.Acks = make([]batchAckJSON, 0, len(b.Acks))
	}
	for _, a := range b.Acks {
		set, err := offsetBits(a.StartOffset, a.Offsets)
		if err != nil {
			return nil, err
		}
		bs := base64.StdEncoding.EncodeToString(set)
		out.Acks = append(out.Acks, batchAckJSON{C: &a.ConsumerGroup, T: &a.Topic, R: &a.Retry, SO: &a.StartOffset, Q: &a.QueueID,
			RQ: &a.ReviveQueueID, PT: &a.PopTime, IT: &a.InvisibleTime, B: &bs})
	}
	return json.Marshal(out)
}

// offsetBits is the java.util.BitSet.toByteArray of offsets less start.
func offsetBits(start int64, offsets []int64) ([]byte, error) {
	var set []byte
	for _, o := range offsets {
		i := o - start
		if o < start || i >= math.MaxInt32 {
			return nil, fmt.Errorf("protocol: batch ack offset %d is not within %d bits of its start offset %d", o, math.MaxInt32, start)
		}
		for int64(len(set)) <= i/8 {
			set = append(set, 0)
		}
		set[i/8] |= 1 << (i % 8)
	}
	return set, nil
}

// Request returns the BATCH_ACK_MESSAGE request (no header fields).
func (b *BatchAckMessageRequestBody) Request() (*remoting.Command, error) {
	body, err := b.Encode()
	if err != nil {
		return nil, err
	}
	return remoting.NewRequest(remoting.BatchAckMessage, map[string]string{}, body), nil
}

// DecodeBatchAckMessageRequestBody decodes the body of BATCH_ACK_MESSAGE;
// an error wraps ErrBadBody: not the JSON object, an entry without a
// consumer group or topic, a negative start offset, a bit set that is not
// base64 or names an offset past MaxInt64, more than MaxBatchAckOffsets
// entries or offsets in all. Its memory is bounded by the body's length
// and MaxBatchAckOffsets; the broker checks what the entries name.
func DecodeBatchAckMessageRequestBody(body []byte) (*BatchAckMessageRequestBody, error) {
	var in batchAckBodyJSON
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("%w: batch ack body: %w", ErrBadBody, err)
	}
	if len(in.Acks) > MaxBatchAckOffsets {
		return nil, fmt.Errorf("%w: batch ack of %d entries (at most %d)", ErrBadBody, len(in.Acks), MaxBatchAckOffsets)
	}
	out := &BatchAckMessageRequestBody{BrokerName: in.BrokerName}
	if in.Acks != nil {
		out.Acks = make([]BatchAck, 0, len(in.Acks))
	}
	total := 0
	for i, j := range in.Acks {
		a := BatchAck{
			ConsumerGroup: either(j.C, j.ConsumerGroup),
			Topic:         either(j.T, j.Topic),
			Retry:         either(j.R, j.Retry),
			StartOffset:   either(j.SO, j.StartOffset),
			QueueID:       either(j.Q, j.QueueID),
			ReviveQueueID: either(j.RQ, j.ReviveQueueID),
			PopTime:       either(j.PT, j.PopTime),
			InvisibleTime: either(j.IT, j.InvisibleTime),
		}
		if a.ConsumerGroup == "" || a.Topic == "" || a.StartOffset < 0 {
			return nil, fmt.Errorf("%w: batch ack entry %d: consumer group %s, topic %s, start offset %d",
				ErrBadBody, i, quote(a.ConsumerGroup), quote(a.Topic), a.StartOffset)
		}
		set, err := base64.StdEncoding.DecodeString(either(j.B, j.BitSet))
		if err != nil {
			return nil, fmt.Errorf("%w: batch ack entry %d: bit set: %w", ErrBadBody, i, err)
		}
		for k, v := range set {
			total += bits.OnesCount8(v)
			if total > MaxBatchAckOffsets {
				return nil, fmt.Errorf("%w: batch ack of more than %d offsets", ErrBadBody, MaxBatchAckOffsets)
			}
			for ; v != 0; v &= v - 1 {
				// Java stops at bit MaxInt32 (its BitSet's int index).
				bit := int64(k)*8 + int64(bits.TrailingZeros8(v))
				if bit >= math.MaxInt32 || a.StartOffset > math.MaxInt64-bit {
					return nil, fmt.Errorf("%w: batch ack entry %d: bit %d past the offsets from %d", ErrBadBody, i, bit, a.StartOffset)
				}
				a.Offsets = append(a.Offsets, a.StartOffset+bit)
			}
		}
		out.Acks = append(out.Acks, a)
	}
	return out, nil
}
