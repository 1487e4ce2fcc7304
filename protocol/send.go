package protocol

import (
	"fmt"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// Defaults of the send headers as RocketMQ clients fill them.
const (
	// DefaultTopic is the auto-create template topic every send names in
	// defaultTopic (Java TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC).
	DefaultTopic = "TBW102"
	// DefaultTopicQueueNums is the queue count asked for a topic the
	// broker auto-creates.
	DefaultTopicQueueNums int32 = 4
)

// SendMessageRequestHeader is the header of SEND_MESSAGE (10), RocketMQ's
// SendMessageRequestHeader, with the long ext names. SEND_MESSAGE_V2 (310)
// and SEND_BATCH_MESSAGE (320) carry the same fields under one-letter
// names: see SendMessageRequestHeaderV2, a conversion away.
//
//	field                  long name              V2  required
//	---------------------  ---------------------  --  --------
//	ProducerGroup          producerGroup          a   yes
//	Topic                  topic                  b   yes
//	DefaultTopic           defaultTopic           c   yes
//	DefaultTopicQueueNums  defaultTopicQueueNums  d   yes
//	QueueID                queueId                e   yes
//	SysFlag                sysFlag                f   yes
//	BornTimestamp          bornTimestamp          g   yes
//	Flag                   flag                   h   yes
//	Properties             properties             i
//	ReconsumeTimes         reconsumeTimes         j
//	UnitMode               unitMode               k
//	MaxReconsumeTimes      maxReconsumeTimes      l
//	Batch                  batch                  m
//	BrokerName             bname                  n
type SendMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	// SysFlag holds the message sysflag bits (message.SysFlag*): 1 for a
	// zlib-compressed body, 4 for a transaction half message.
	SysFlag       int32
	BornTimestamp int64 // ms since the Unix epoch
	Flag          int32 // the user flag
	// Properties is the encoded properties ("name\x01value\x02" items).
	Properties        string
	ReconsumeTimes    int32
	UnitMode          bool
	MaxReconsumeTimes int32
	Batch             bool
	// BrokerName is the broker group the client targeted ("bname").
	BrokerName string
}

// SendMessageRequestHeaderV2 is the same header under the one-letter names
// of RocketMQ's SendMessageRequestHeaderV2, used by SEND_MESSAGE_V2 (310,
// Java producers) and SEND_BATCH_MESSAGE (320, every client's batches,
// with Batch set). Convert with SendMessageRequestHeaderV2(h) and back.
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// sendField pairs the long and the V2 ext name of one header field.
type sendField struct{ long, short string }

var (
	fProducerGroup     = sendField{"producerGroup", "a"}
	fTopic             = sendField{"topic", "b"}
	fDefaultTopic      = sendField{"defaultTopic", "c"}
	fDefaultQueueNums  = sendField{"defaultTopicQueueNums", "d"}
	fQueueID           = sendField{"queueId", "e"}
	fSysFlag           = sendField{"sysFlag", "f"}
	fBornTimestamp     = sendField{"bornTimestamp", "g"}
	fFlag              = sendField{"flag", "h"}
	fProperties        = sendField{"properties", "i"}
	fReconsumeTimes    = sendField{"reconsumeTimes", "j"}
	fUnitMode          = sendField{"unitMode", "k"}
	fMaxReconsumeTimes = sendField{"maxReconsumeTimes", "l"}
	fBatch             = sendField{"batch", "m"}
	fBrokerName        = sendField{"bname", "n"}
)

// Encode returns the ext fields under the long names, every field written
// (as the Go client does).
func (h *SendMessageRequestHeader) Encode() map[string]string { return h.encode(false) }

// Decode reads the long-name ext fields of SEND_MESSAGE. A missing
// required field wraps remoting.ErrMissingField, a malformed number
// remoting.ErrBadHeader; unknown fields are ignored. It never panics.
func (h *SendMessageRequestHeader) Decode(ext map[string]string) error {
	return h.decode(ext, false, "SEND_MESSAGE request header")
}

// Request returns the SEND_MESSAGE (10) request carrying body.
func (h *SendMessageRequestHeader) Request(body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, h.Encode(), body)
}

// Encode returns the ext fields under the one-letter names.
func (h *SendMessageRequestHeaderV2) Encode() map[string]string {
	return (*SendMessageRequestHeader)(h).encode(true)
}

// Decode reads the one-letter ext fields of SEND_MESSAGE_V2 and
// SEND_BATCH_MESSAGE, with the rules of SendMessageRequestHeader.Decode.
func (h *SendMessageRequestHeaderV2) Decode(ext map[string]string) error {
	return (*SendMessageRequestHeader)(h).decode(ext, true, "SEND_MESSAGE_V2 request header")
}

// Request returns the request carrying body: SEND_BATCH_MESSAGE (320) when
// h.Batch is set, SEND_MESSAGE_V2 (310) otherwise.
func (h *SendMessageRequestHeaderV2) Request(body []byte) *remoting.Command {
	code := remoting.SendMessageV2
	if h.Batch {
		code = remoting.SendBatchMessage
	}
	return remoting.NewRequest(code, h.Encode(), body)
}

// DecodeSendRequestHeader decodes the header of a send request by its
// code: long names for SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324),
// one-letter names for SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
// SEND_REPLY_MESSAGE_V2 (325). Other codes are
// remoting.ErrBadHeader.
func DecodeSendRequestHeader(code int32, ext map[string]string) (SendMessageRequestHeader, error) {
	return decodeSendRequestHeader(code, extReader{ext: ext})
}

// DecodeSendRequestHeaderList is DecodeSendRequestHeader of the fields
// of a header decoded into a list (remoting.Command.ExtList), with the
// same result and error as of the map of those fields.
func DecodeSendRequestHeaderList(code int32, ext []remoting.ExtField) (SendMessageRequestHeader, error) {
	if h, ok := decodeSendList(code, ext); ok {
		return h, nil
	}
	slot := sendSlotLong
	if sendShortNames(code) {
		slot = sendSlotShort
	}
	return decodeSendRequestHeader(code, slotReader(ext, slot))
}

// decodeSendList decodes the list of a send header in one pass when it is
// of the form every client sends: the required fields present, and every
// number present a plain decimal (an optional minus sign and at most
// 9 digits, 18 for bornTimestamp), which strconv reads as these do. ok is
// false for anything else, which the general decoding reads (the same
// header) or refuses (and says why).
func decodeSendList(code int32, ext []remoting.ExtField) (h SendMessageRequestHeader, ok bool) {
	switch code {
	case remoting.SendMessage, remoting.SendReplyMessage,
		remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
	default:
		return h, false
	}
	short := sendShortNames(code)
	var val [14]string
	var has uint16
	for _, f := range ext {
		var i int
		if short {
			i = sendSlotShort(f.Key)
		} else {
			i = sendSlotLong(f.Key)
		}
		if i >= 0 {
			val[i], has = f.Value, has|1<<i
		}
	}
	// Slots 0 to 7 are the required fields.
	if has&0xFF != 0xFF {
		return h, false
	}
	var n [14]int64
	for _, i := range [...]int{3, 4, 5, 6, 7, 9, 11} {
		if i >= 9 && val[i] == "" {
			continue
		}
		digits := 9
		if i == 6 {
			digits = 18
		}
		if n[i], ok = plainDecimal(val[i], digits); !ok {
			return h, false
		}
	}
	return SendMessageRequestHeader{
		ProducerGroup:         val[0],
		Topic:                 val[1],
		DefaultTopic:          val[2],
		DefaultTopicQueueNums: int32(n[3]),
		QueueID:               int32(n[4]),
		SysFlag:               int32(n[5]),
		BornTimestamp:         n[6],
		Flag:                  int32(n[7]),
		Properties:            val[8],
		ReconsumeTimes:        int32(n[9]),
		UnitMode:              strings.EqualFold(val[10], "true"),
		MaxReconsumeTimes:     int32(n[11]),
		Batch:                 strings.EqualFold(val[12], "true"),
		BrokerName:            val[13],
	}, true
}

// plainDecimal reads s, an optional minus sign and 1 to digits decimal
// digits; ok is false for anything else.
func plainDecimal(s string, digits int) (n int64, ok bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > digits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	return n, true
}

// sendShortNames: code's header has the one-letter names.
func sendShortNames(code int32) bool {
	return code == remoting.SendMessageV2 || code == remoting.SendBatchMessage || code == remoting.SendReplyMessageV2
}

// sendSlotLong and sendSlotShort give a send header field's slot by its
// long or one-letter name (the table of SendMessageRequestHeader, in
// order), -1 for other keys. TestSendSlots holds them to the names.
func sendSlotLong(key string) int {
	switch key {
	case "producerGroup":
		return 0
	case "topic":
		return 1
	case "defaultTopic":
		return 2
	case "defaultTopicQueueNums":
		return 3
	case "queueId":
		return 4
	case "sysFlag":
		return 5
	case "bornTimestamp":
		return 6
	case "flag":
		return 7
	case "properties":
		return 8
	case "reconsumeTimes":
		return 9
	case "unitMode":
		return 10
	case "maxReconsumeTimes":
		return 11
	case "batch":
		return 12
	case "bname":
		return 13
	}
	return -1
}

func sendSlotShort(key string) int {
	if len(key) == 1 && key[0] >= 'a' && key[0] <= 'n' {
		return int(key[0] - 'a')
	}
	return -1
}

func decodeSendRequestHeader(code int32, r extReader) (SendMessageRequestHeader, error) {
	var h SendMessageRequestHeader
	var err error
	switch code {
	case remoting.SendMessage:
		err = h.decodeFrom(r, false, "SEND_MESSAGE request header")
	case remoting.SendMessageV2:
		err = h.decodeFrom(r, true, "SEND_MESSAGE_V2 request header")
	case remoting.SendBatchMessage:
		err = h.decodeFrom(r, true, "SEND_BATCH_MESSAGE request header")
	case remoting.SendReplyMessage:
		err = h.decodeFrom(r, false, "SEND_REPLY_MESSAGE request header")
	case remoting.SendReplyMessageV2:
		err = h.decodeFrom(r, true, "SEND_REPLY_MESSAGE_V2 request header")
	default:
		return h, fmt.Errorf("%w: request code %s has no send header", remoting.ErrBadHeader, remoting.RequestCodeName(code))
	}
	if err != nil {
		return SendMessageRequestHeader{}, err
	}
	return h, nil
}

func (h *SendMessageRequestHeader) encode(short bool) map[string]string {
	name := func(f sendField) string {
		if short {
			return f.short
		}
		return f.long
	}
	return map[string]string{
		name(fProducerGroup):     h.ProducerGroup,
		name(fTopic):             h.Topic,
		name(fDefaultTopic):      h.DefaultTopic,
		name(fDefaultQueueNums):  itoa32(h.DefaultTopicQueueNums),
		name(fQueueID):           itoa32(h.QueueID),
		name(fSysFlag):           itoa32(h.SysFlag),
		name(fBornTimestamp):     itoa64(h.BornTimestamp),
		name(fFlag):              itoa32(h.Flag),
		name(fProperties):        h.Properties,
		name(fReconsumeTimes):    itoa32(h.ReconsumeTimes),
		name(fUnitMode):          boolString(h.UnitMode),
		name(fMaxReconsumeTimes): itoa32(h.MaxReconsumeTimes),
		name(fBatch):             boolString(h.Batch),
		name(fBrokerName):        h.BrokerName,
	}
}

func (h *SendMessageRequestHeader) decode(ext map[string]string, short bool, header string) error {
	return h.decodeFrom(extReader{ext: ext}, short, header)
}

func (h *SendMessageRequestHeader) decodeFrom(r extReader, short bool, header string) error {
	name := func(f sendField) string {
		if short {
			return f.short
		}
		return f.long
	}
	r.header = header
	out := SendMessageRequestHeader{
		ProducerGroup:         r.str(name(fProducerGroup), true),
		Topic:                 r.str(name(fTopic), true),
		DefaultTopic:          r.str(name(fDefaultTopic), true),
		DefaultTopicQueueNums: r.int32(name(fDefaultQueueNums), true),
		QueueID:               r.int32(name(fQueueID), true),
		SysFlag:               r.int32(name(fSysFlag), true),
		BornTimestamp:         r.int64(name(fBornTimestamp), true),
		Flag:                  r.int32(name(fFlag), true),
		Properties:            r.str(name(fProperties), false),
		ReconsumeTimes:        r.int32(name(fReconsumeTimes), false),
		UnitMode:              r.bool(name(fUnitMode)),
		MaxReconsumeTimes:     r.int32(name(fMaxReconsumeTimes), false),
		Batch:                 r.bool(name(fBatch)),
		BrokerName:            r.str(name(fBrokerName), false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// SendMessageResponseHeader is the header of a successful answer to
// SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (RocketMQ's
// SendMessageResponseHeader; also sent with codes 10, 11 and 12, which
// mean stored).
//
//	field          ext name       required  meaning
//	-------------  -------------  --------  ------------------------------
//	MsgID          msgId          yes       offset message id; for a batch,
//	                                        one per message, comma-joined
//	QueueID        queueId        yes       queue the message(s) went to
//	QueueOffset    queueOffset    yes       queue offset of the (first) message
//	TransactionID  transactionId            the UNIQ_KEY(s) (Java: UNIQ_KEY)
//	Region         MSG_REGION               "DefaultRegion"
//	TraceOn        TRACE_ON                 any value but "false" and "" is on
//	RecallHandle   recallHandle             a timer message's (RocketMQ 5.3,
//	                                        recall.go); only when set
type SendMessageResponseHeader struct {
	MsgID         string
	QueueID       int32
	QueueOffset   int64
	TransactionID string
	Region        string
	TraceOn       bool
	RecallHandle  string
	// DedupWindowMs is ledgermq's: the duplicate window the broker applied
	// to this send, in ms (0: none; the field is then left out), and
	// Duplicate says the send repeated a message stored within it and was
	// answered with that store instead of being stored again. RocketMQ's
	// clients ignore both; ledgermq's reports a send whose earlier attempt
	// was of unknown outcome as maybe duplicated only when no window
	// covered its retry.
	DedupWindowMs int64
	Duplicate     bool
}

// Ext names of the send response header.
const (
	// ExtDedupWindow and ExtDuplicate carry DedupWindowMs and Duplicate.
	ExtDedupWindow = "dedupWindowMs"
	ExtDuplicate   = "duplicate"

	extMsgRegion = "MSG_REGION"
	extTraceOn   = "TRACE_ON"
	// ExtRecallHandle is the send answer's recall handle of a timer
	// message.
	ExtRecallHandle = "recallHandle"
)

// Encode returns the ext fields as the broker writes them (MSG_REGION only
// when set).
func (h *SendMessageResponseHeader) Encode() map[string]string {
	ext := map[string]string{
		"msgId":         h.MsgID,
		"queueId":       itoa32(h.QueueID),
		"queueOffset":   itoa64(h.QueueOffset),
		"transactionId": h.TransactionID,
		extTraceOn:      boolString(h.TraceOn),
	}
	if h.Region != "" {
		ext[extMsgRegion] = h.Region
	}
	if h.RecallHandle != "" {
		ext[ExtRecallHandle] = h.RecallHandle
	}
	if h.DedupWindowMs > 0 {
		ext[ExtDedupWindow] = itoa64(h.DedupWindowMs)
	}
	if h.Duplicate {
		ext[ExtDuplicate] = "true"
	}
	return ext
}

// Decode reads the ext fields of a send response; errors as
// SendMessageRequestHeader.Decode.
func (h *SendMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "SEND_MESSAGE response header", ext: ext}
	trace := r.str(extTraceOn, false)
	out := SendMessageResponseHeader{
		MsgID:         r.str("msgId", true),
		QueueID:       r.int32("queueId", true),
		QueueOffset:   r.int64("queueOffset", true),
		TransactionID: r.str("transactionId", false),
		Region:        r.str(extMsgRegion, false),
		TraceOn:       trace != "" && trace != "false",
		RecallHandle:  r.str(ExtRecallHandle, false),
		Duplicate:     r.str(ExtDuplicate, false) == "true",
	}
	if r.str(ExtDedupWindow, false) != "" {
		out.DedupWindowMs = r.int64(ExtDedupWindow, false)
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Response returns a response to req with code (Success, or one of the
// stored-with-a-warning codes 10, 11, 12) carrying h.
func (h *SendMessageResponseHeader) Response(req *remoting.Command, code int32) *remoting.Command {
	resp := remoting.NewResponse(req, code, "")
	resp.ExtFields = h.Encode()
	return resp
}

// MsgIDs splits MsgID into the offset message ids of a batch (one item for
// a single message; none when MsgID is empty).
func (h *SendMessageResponseHeader) MsgIDs() []string {
	if h.MsgID == "" {
		return nil
	}
	return strings.Split(h.MsgID, ",")
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
