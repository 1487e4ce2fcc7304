package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// RECALL_MESSAGE (370, RocketMQ 5.3): a producer recalls a timer message
// that is not due yet, naming it by the recall handle its send answered
// (SendMessageResponseHeader.RecallHandle; the gRPC SendResultEntry's
// recall_handle).

// RecallMessageRequestHeader is the header of RECALL_MESSAGE, producer →
// broker (Java's RecallMessageRequestHeader, a TopicRequestHeader: the
// broker group travels as bname).
//
//	field          ext name       required
//	-------------  -------------  --------
//	ProducerGroup  producerGroup
//	Topic          topic          yes
//	RecallHandle   recallHandle   yes
//	BrokerName     bname
type RecallMessageRequestHeader struct {
	ProducerGroup string
	Topic         string
	RecallHandle  string
	BrokerName    string
}

// Encode returns the ext fields (the optional ones only when set).
func (h *RecallMessageRequestHeader) Encode() map[string]string {
	ext := map[string]string{"topic": h.Topic, "recallHandle": h.RecallHandle}
	if h.ProducerGroup != "" {
		ext["producerGroup"] = h.ProducerGroup
	}
	if h.BrokerName != "" {
		ext["bname"] = h.BrokerName
	}
	return ext
}

// Decode reads the ext fields; a missing topic or handle wraps
// remoting.ErrMissingField.
func (h *RecallMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "RECALL_MESSAGE request header", ext: ext}
	out := RecallMessageRequestHeader{
		ProducerGroup: r.str("producerGroup", false),
		Topic:         r.str("topic", true),
		RecallHandle:  r.str("recallHandle", true),
		BrokerName:    r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the RECALL_MESSAGE request.
func (h *RecallMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.RecallMessage, h.Encode(), nil)
}

// RecallMessageResponseHeader is the header of a successful answer: the
// recalled message's id (its UNIQ_KEY, the handle's message id).
type RecallMessageResponseHeader struct {
	MsgID string
}

// Encode returns the ext fields.
func (h *RecallMessageResponseHeader) Encode() map[string]string {
	return map[string]string{"msgId": h.MsgID}
}

// Decode reads the ext fields.
func (h *RecallMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "RECALL_MESSAGE response header", ext: ext}
	out := RecallMessageResponseHeader{MsgID: r.str("msgId", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// RecallHandle is what a recall handle names (Java's
// RecallMessageHandle.HandleV1): the message's topic, its broker group,
// its time and its id (UNIQ_KEY). Timestamp is kept as written; the
// broker reads it as Unix ms (TimestampMS), one more than the parked
// message's TIMER_OUT_MS.
type RecallHandle struct {
	Topic      string
	BrokerName string
	Timestamp  string
	MessageID  string
}

// ErrBadRecallHandle is a recall handle that does not decode.
var ErrBadRecallHandle = errors.New("recall handle is invalid")

// maxRecallHandle bounds the handle a decoder reads (a topic, a group
// name, a number and a message id fit in far less).
const maxRecallHandle = 4096

// String is the handle's wire form, as Java builds it: the URL-safe
// base64, with padding, of "v1 topic brokerName timestamp messageId".
func (h RecallHandle) String() string {
	raw := strings.Join([]string{"v1", h.Topic, h.BrokerName, h.Timestamp, h.MessageID}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// TimestampMS is the handle's time as Unix ms; -1 when it is not a number
// (as Java's NumberUtils.toLong(s, -1)).
func (h RecallHandle) TimestampMS() int64 {
	n, err := strconv.ParseInt(h.Timestamp, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// NewRecallHandle is the handle of a timer message parked until dueMS
// (its TIMER_OUT_MS): Java writes dueMS+1.
func NewRecallHandle(topic, brokerName string, dueMS int64, messageID string) RecallHandle {
	return RecallHandle{Topic: topic, BrokerName: brokerName, Timestamp: strconv.FormatInt(dueMS+1, 10), MessageID: messageID}
}

// DecodeRecallHandle reads a handle as Java's decodeHandle does: base64
// (URL alphabet, padding optional), split on single spaces (trailing empty
// items dropped), version "v1" and at least five items, the rest
// ignored. It refuses, as well, an empty topic, broker name or message
// id, which no send answers. Errors wrap ErrBadRecallHandle.
func DecodeRecallHandle(s string) (RecallHandle, error) {
	if s == "" || len(s) > maxRecallHandle {
		return RecallHandle{}, fmt.Errorf("%w: %d bytes", ErrBadRecallHandle, len(s))
	}
	var raw []byte
	var err error
	if strings.HasSuffix(s, "=") {
		raw, err = base64.URLEncoding.DecodeString(s)
	} else {
		raw, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil {
		return RecallHandle{}, fmt.Errorf("%w: %w", ErrBadRecallHandle, err)
	}
	items := strings.Split(string(raw), " ")
	for len(items) > 0 && items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	if len(items) < 5 || items[0] != "v1" {
		return RecallHandle{}, fmt.Errorf("%w: not a v1 handle of five items", ErrBadRecallHandle)
	}
	h := RecallHandle{Topic: items[1], BrokerName: items[2], Timestamp: items[3], MessageID: items[4]}
	if h.Topic == "" || h.BrokerName == "" || h.MessageID == "" {
		return RecallHandle{}, fmt.Errorf("%w: an empty topic, broker name or message id", ErrBadRecallHandle)
	}
	return h, nil
}
