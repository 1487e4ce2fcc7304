package protocol

import (
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// Bits of PullMessageRequestHeader.SysFlag (Java PullSysFlag).
const (
	PullFlagCommitOffset int32 = 1 // store CommitOffset as the group's offset
	PullFlagSuspend      int32 = 2 // hold the pull up to SuspendTimeoutMillis when nothing is there
	PullFlagSubscription int32 = 4 // filter by Subscription / ExpressionType
	PullFlagClassFilter  int32 = 8 // Java class filters (not served)
)

// PullMessageRequestHeader is the header of PULL_MESSAGE (11), consumer →
// broker.
//
//	field                 ext name              required
//	--------------------  --------------------  --------
//	ConsumerGroup         consumerGroup         yes (non-empty)
//	Topic                 topic                 yes (non-empty)
//	QueueID               queueId               yes
//	QueueOffset           queueOffset           yes
//	MaxMsgNums            maxMsgNums            yes
//	SysFlag               sysFlag               yes  (PullFlag* bits)
//	CommitOffset          commitOffset          yes
//	SuspendTimeoutMillis  suspendTimeoutMillis  yes
//	Subscription          subscription               ("" from the Go push consumer)
//	SubVersion            subVersion
//	ExpressionType        expressionType             (TAG or SQL92)
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string
	SubVersion           int64
	ExpressionType       string
}

// Encode returns the ext fields, every field written.
func (h *PullMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup":        h.ConsumerGroup,
		"topic":                h.Topic,
		"queueId":              itoa32(h.QueueID),
		"queueOffset":          itoa64(h.QueueOffset),
		"maxMsgNums":           itoa32(h.MaxMsgNums),
		"sysFlag":              itoa32(h.SysFlag),
		"commitOffset":         itoa64(h.CommitOffset),
		"suspendTimeoutMillis": itoa64(h.SuspendTimeoutMillis),
		"subscription":         h.Subscription,
		"subVersion":           itoa64(h.SubVersion),
		"expressionType":       h.ExpressionType,
	}
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField; a malformed number or an empty group or topic
// wraps remoting.ErrBadHeader. It never panics.
func (h *PullMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "PULL_MESSAGE request header", ext: ext}
	out := PullMessageRequestHeader{
		ConsumerGroup:        r.str("consumerGroup", true),
		Topic:                r.str("topic", true),
		QueueID:              r.int32("queueId", true),
		QueueOffset:          r.int64("queueOffset", true),
		MaxMsgNums:           r.int32("maxMsgNums", true),
		SysFlag:              r.int32("sysFlag", true),
		CommitOffset:         r.int64("commitOffset", true),
		SuspendTimeoutMillis: r.int64("suspendTimeoutMillis", true),
		Subscription:         r.str("subscription", false),
		SubVersion:           r.int64("subVersion", false),
		ExpressionType:       r.str("expressionType", false),
	}
	if r.err == nil && (out.ConsumerGroup == "" || out.Topic == "") {
		r.fail(fmt.Errorf("%w: empty consumerGroup or topic", remoting.ErrBadHeader))
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the PULL_MESSAGE request.
func (h *PullMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, h.Encode(), nil)
}

// PullMessageResponseHeader is the header of a PULL_MESSAGE answer (codes
// SUCCESS, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED): where
// the next pull starts and the queue's bounds. Our brokers always suggest
// broker id 0, the leader.
//
//	field                 ext name              required
//	--------------------  --------------------  --------
//	NextBeginOffset       nextBeginOffset       yes
//	MinOffset             minOffset             yes
//	MaxOffset             maxOffset             yes
//	SuggestWhichBrokerID  suggestWhichBrokerId
type PullMessageResponseHeader struct {
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	SuggestWhichBrokerID int64
}

// Encode returns the ext fields, every field written.
func (h *PullMessageResponseHeader) Encode() map[string]string {
	return map[string]string{
		"nextBeginOffset":      itoa64(h.NextBeginOffset),
		"minOffset":            itoa64(h.MinOffset),
		"maxOffset":            itoa64(h.MaxOffset),
		"suggestWhichBrokerId": itoa64(h.SuggestWhichBrokerID),
	}
}

// Decode reads the ext fields, with the rules of the request's Decode.
func (h *PullMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "PULL_MESSAGE response header", ext: ext}
	out := PullMessageResponseHeader{
		NextBeginOffset:      r.int64("nextBeginOffset", true),
		MinOffset:            r.int64("minOffset", true),
		MaxOffset:            r.int64("maxOffset", true),
		SuggestWhichBrokerID: r.int64("suggestWhichBrokerId", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}
