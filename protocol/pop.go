package protocol

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// The headers of POP consumption over remoting (RocketMQ 4.9+/5.x):
// POP_MESSAGE (200050), ACK_MESSAGE (200051) and
// CHANGE_MESSAGE_INVISIBLETIME (200053), with the receipt a POP consumer
// sends back, the ExtraInfo string. Their codes exceed int16, so they
// travel with JSON headers only (remoting's doc).

// PopInitMode* are PopMessageRequestHeader.InitMode (Java ConsumeInitMode):
// where a group that never consumed a queue starts.
const (
	PopInitModeMin int32 = 0 // the queue's first message
	PopInitModeMax int32 = 1 // the queue's end: new messages only
)

// PopMessageRequestHeader is the header of POP_MESSAGE, consumer → broker.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes (non-empty)
//	Topic          topic          yes (non-empty)
//	QueueID        queueId        yes  (-1: any queue)
//	MaxMsgNums     maxMsgNums     yes
//	InvisibleTime  invisibleTime  yes  (ms)
//	PollTime       pollTime       yes  (ms the broker may hold the request)
//	BornTime       bornTime       yes  (the client's clock, ms)
//	InitMode       initMode       yes  (PopInitMode*)
//	ExpType        expType             (TAG or SQL92)
//	Exp            exp
//	Order          order               (a FIFO pop)
//	AttemptID      attemptId
type PopMessageRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	MaxMsgNums    int32
	InvisibleTime int64
	PollTime      int64
	BornTime      int64
	InitMode      int32
	ExpType       string
	Exp           string
	Order         bool
	AttemptID     string
}

// Encode returns the ext fields; the optional strings only when set.
func (h *PopMessageRequestHeader) Encode() map[string]string {
	m := map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"maxMsgNums":    itoa32(h.MaxMsgNums),
		"invisibleTime": itoa64(h.InvisibleTime),
		"pollTime":      itoa64(h.PollTime),
		"bornTime":      itoa64(h.BornTime),
		"initMode":      itoa32(h.InitMode),
		"order":         strconv.FormatBool(h.Order),
	}
	for k, v := range map[string]string{"expType": h.ExpType, "exp": h.Exp, "attemptId": h.AttemptID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Decode reads the ext fields, as Java's decodeCommandCustomHeader does:
// a missing required field wraps remoting.ErrMissingField; a malformed
// number or an empty group or topic wraps remoting.ErrBadHeader; unknown
// fields are ignored. It never panics.
func (h *PopMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "POP_MESSAGE request header", ext: ext}
	out := PopMessageRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		MaxMsgNums:    r.int32("maxMsgNums", true),
		InvisibleTime: r.int64("invisibleTime", true),
		PollTime:      r.int64("pollTime", true),
		BornTime:      r.int64("bornTime", true),
		InitMode:      r.int32("initMode", true),
		ExpType:       r.str("expType", false),
		Exp:           r.str("exp", false),
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

// Request returns the POP_MESSAGE request (a JSON header: the code does
// not fit a binary one).
func (h *PopMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.PopMessage, h.Encode(), nil)
}

// PopMessageResponseHeader is the header of a POP_MESSAGE answer. The
// client builds each message's ExtraInfo from it: PopTime, InvisibleTime
// and ReviveQid, and per queue the start offset (StartOffsetInfo) and the
// offsets of the messages (MsgOffsetInfo), each "<retry> <queueId> <…>"
// joined by ';' (see PopQueueInfo).
//
//	field            ext name         required
//	---------------  ---------------  --------
//	PopTime          popTime          yes
//	InvisibleTime    invisibleTime    yes
//	ReviveQid        reviveQid        yes
//	RestNum          restNum          yes
//	StartOffsetInfo  startOffsetInfo
//	MsgOffsetInfo    msgOffsetInfo
//	OrderCountInfo   orderCountInfo
type PopMessageResponseHeader struct {
	PopTime         int64
	InvisibleTime   int64
	ReviveQid       int32
	RestNum         int64
	StartOffsetInfo string
	MsgOffsetInfo   string
	OrderCountInfo  string
}

// Encode returns the ext fields; the info strings only when set.
func (h *PopMessageResponseHeader) Encode() map[string]string {
	m := map[string]string{
		"popTime":       itoa64(h.PopTime),
		"invisibleTime": itoa64(h.InvisibleTime),
		"reviveQid":     itoa32(h.ReviveQid),
		"restNum":       itoa64(h.RestNum),
	}
	for k, v := range map[string]string{"startOffsetInfo": h.StartOffsetInfo, "msgOffsetInfo": h.MsgOffsetInfo, "orderCountInfo": h.OrderCountInfo} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Decode reads the ext fields, with the rules of the request's Decode.
func (h *PopMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "POP_MESSAGE response header", ext: ext}
	out := PopMessageResponseHeader{
		PopTime:         r.int64("popTime", true),
		InvisibleTime:   r.int64("invisibleTime", true),
		ReviveQid:       r.int32("reviveQid", true),
		RestNum:         r.int64("restNum", true),
		StartOffsetInfo: r.str("startOffsetInfo", false),
		MsgOffsetInfo:   r.str("msgOffsetInfo", false),
		OrderCountInfo:  r.str("orderCountInfo", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// AckMessageRequestHeader is the header of ACK_MESSAGE, consumer →
// broker; ChangeInvisibleTimeRequestHeader adds the new invisible time.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes (non-empty)
//	Topic          topic          yes (non-empty)
//	QueueID        queueId        yes
//	ExtraInfo      extraInfo      yes (the message's ExtraInfo)
//	Offset         offset         yes (the message's queue offset)
type AckMessageRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	ExtraInfo     string
	Offset        int64
}

// Encode returns the ext fields, every field written.
func (h *AckMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"extraInfo":     h.ExtraInfo,
		"offset":        itoa64(h.Offset),
	}
}

// Decode reads the ext fields, with the rules of PopMessageRequestHeader's.
func (h *AckMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "ACK_MESSAGE request header", ext: ext}
	out := readAckFields(&r)
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// readAckFields reads the fields ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME share.
func readAckFields(r *extReader) AckMessageRequestHeader {
	out := AckMessageRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		ExtraInfo:     r.str("extraInfo", true),
		Offset:        r.int64("offset", true),
	}
	checkGroupTopic(r, out.ConsumerGroup, out.Topic)
	return out
}

// checkGroupTopic fails r on an empty group or topic.
func checkGroupTopic(r *extReader, group, topic string) {
	if r.err == nil && (group == "" || topic == "") {
		r.fail(fmt.Errorf("%w: empty consumerGroup or topic", remoting.ErrBadHeader))
	}
}

// Request returns the ACK_MESSAGE request.
func (h *AckMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.AckMessage, h.Encode(), nil)
}

// ChangeInvisibleTimeRequestHeader is the header of
// CHANGE_MESSAGE_INVISIBLETIME: AckMessageRequestHeader's fields and
// invisibleTime (required, ms from now).
type ChangeInvisibleTimeRequestHeader struct {
	AckMessageRequestHeader
	InvisibleTime int64
}

// Encode returns the ext fields, every field written.
func (h *ChangeInvisibleTimeRequestHeader) Encode() map[string]string {
	m := h.AckMessageRequestHeader.Encode()
	m["invisibleTime"] = itoa64(h.InvisibleTime)
	return m
}

// Decode reads the ext fields, with the rules of PopMessageRequestHeader's.
func (h *ChangeInvisibleTimeRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "CHANGE_MESSAGE_INVISIBLETIME request header", ext: ext}
	out := ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: readAckFields(&r), InvisibleTime: r.int64("invisibleTime", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the CHANGE_MESSAGE_INVISIBLETIME request.
func (h *ChangeInvisibleTimeRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.ChangeMessageInvisibleTime, h.Encode(), nil)
}

// ChangeInvisibleTimeResponseHeader is the header of a
// CHANGE_MESSAGE_INVISIBLETIME answer: the message's new ExtraInfo is the
// old one with these three (all required).
type ChangeInvisibleTimeResponseHeader struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}

// Encode returns the ext fields.
func (h *ChangeInvisibleTimeResponseHeader) Encode() map[string]string {
	return map[string]string{"popTime": itoa64(h.PopTime), "invisibleTime": itoa64(h.InvisibleTime), "reviveQid": itoa32(h.ReviveQid)}
}

// Decode reads the ext fields.
func (h *ChangeInvisibleTimeResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "CHANGE_MESSAGE_INVISIBLETIME response header", ext: ext}
	out := ChangeInvisibleTimeResponseHeader{PopTime: r.int64("popTime", true), InvisibleTime: r.int64("invisibleTime", true), ReviveQid: r.int32("reviveQid", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// PopRetryNormal is ExtraInfo.Retry of a message of the topic itself; Java
// uses "1" and "2" for its POP retry topics, which ledgermq has no need of
// (a message is delivered again from its own queue).
const PopRetryNormal = "0"

// ExtraInfo is a POP message's receipt as the Java client keeps it
// (property POP_CK) and sends it back in ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME: eight fields joined by single spaces,
//
//	startOffset popTime invisibleTime reviveQid retry brokerName queueId offset
//
// (Java ExtraInfoUtil). The last is absent in the 7-field form of older
// clients; QueueOffset is then -1.
type ExtraInfo struct {
	StartOffset   int64
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
	Retry         string
	BrokerName    string
	QueueID       int32
	QueueOffset   int64
}

// String is the ExtraInfo's wire form (eight fields; seven when
// QueueOffset is negative).
func (e ExtraInfo) String() string {
	s := fmt.Sprintf("%d %d %d %d %s %s %d", e.StartOffset, e.PopTime, e.InvisibleTime, e.ReviveQid, e.Retry, e.BrokerName, e.QueueID)
	if e.QueueOffset >= 0 {
		s += " " + itoa64(e.QueueOffset)
	}
	return s
}

// maxExtraInfo bounds the ExtraInfo ParseExtraInfo reads: eight numbers
// and a broker name.
const maxExtraInfo = 512

// ParseExtraInfo reads an ExtraInfo of seven or eight fields. Anything
// else wraps remoting.ErrBadHeader; it never panics.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	bad := func(why string) (ExtraInfo, error) {
		return ExtraInfo{}, fmt.Errorf("%w: extraInfo %s: %s", remoting.ErrBadHeader, quote(s), why)
	}
	if len(s) > maxExtraInfo {
		return bad("too long")
	}
	f := strings.Split(s, " ")
	if len(f) != 7 && len(f) != 8 {
		return bad(fmt.Sprintf("%d fields, want 7 or 8", len(f)))
	}
	e := ExtraInfo{Retry: f[4], BrokerName: f[5], QueueOffset: -1}
	var err error
	num := func(i, bits int) int64 {
		n, perr := strconv.ParseInt(f[i], 10, bits)
		if perr != nil && err == nil {
			err = perr
		}
		return n
	}
	e.StartOffset, e.PopTime, e.InvisibleTime = num(0, 64), num(1, 64), num(2, 64)
	e.ReviveQid, e.QueueID = int32(num(3, 32)), int32(num(6, 32))
	if len(f) == 8 {
		e.QueueOffset = num(7, 64)
	}
	if err != nil {
		return bad("a number field does not parse")
	}
	if e.QueueOffset < -1 || e.Retry == "" {
		return bad("field out of range")
	}
	return e, nil
}

// PopQueueInfo is one queue's entry of a POP_MESSAGE answer's info strings:
// "<retry> <queueId> <value>", Value a start offset (startOffsetInfo), the
// offsets of the messages joined by ',' (msgOffsetInfo) or a count
// (orderCountInfo).
type PopQueueInfo struct {
	Retry   string
	QueueID int32
	Value   string
}

// JoinPopQueueInfo is the info string of entries: each "<retry> <queueId>
// <value>", joined by ';'.
func JoinPopQueueInfo(entries []PopQueueInfo) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "%s %d %s", e.Retry, e.QueueID, e.Value)
	}
	return b.String()
}
