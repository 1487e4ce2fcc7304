package broker

import (
	"strconv"
	"unsafe"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// sendResponse is a send's success answer and its header's fields in one
// allocation. The header goes out as remoting.Command.ExtList: the answer
// is only encoded, so the map protocol's Encode builds (and the command
// and fields allocated apart) would be made for nothing on every send.
type sendResponse struct {
	remoting.Command
	ext [9]remoting.ExtField
	// offset holds the digits of the queueOffset field's value, which
	// would otherwise be a string of its own; window the dedupWindowMs
	// field's.
	offset [20]byte
	window [20]byte
}

// newSendResponse answers req with SUCCESS and h's fields, the fields and
// values of h.Encode (TestSendResponseMatchesEncode keeps them so).
func newSendResponse(req *remoting.Command, h *protocol.SendMessageResponseHeader) *remoting.Command {
	// remoting.NewResponse's fields, set in place rather than copied in.
	r := new(sendResponse)
	r.Code, r.Language, r.Version = remoting.Success, remoting.LanguageJava, remoting.Version
	r.Opaque, r.Flag, r.SerializeType = req.Opaque, remoting.FlagResponse, req.SerializeType
	r.ext[0] = remoting.ExtField{Key: "msgId", Value: h.MsgID}
	r.ext[1] = remoting.ExtField{Key: "queueId", Value: strconv.FormatInt(int64(h.QueueID), 10)}
	r.ext[2] = remoting.ExtField{Key: "queueOffset", Value: r.digits(h.QueueOffset)}
	r.ext[3] = remoting.ExtField{Key: "transactionId", Value: h.TransactionID}
	r.ext[4] = remoting.ExtField{Key: "TRACE_ON", Value: strconv.FormatBool(h.TraceOn)}
	n := 5
	if h.Region != "" {
		r.ext[n] = remoting.ExtField{Key: "MSG_REGION", Value: h.Region}
		n++
	}
	if h.RecallHandle != "" {
		r.ext[n] = remoting.ExtField{Key: protocol.ExtRecallHandle, Value: h.RecallHandle}
		n++
	}
	if h.DedupWindowMs > 0 {
		b := strconv.AppendInt(r.window[:0], h.DedupWindowMs, 10)
		r.ext[n] = remoting.ExtField{Key: protocol.ExtDedupWindow, Value: unsafe.String(unsafe.SliceData(b), len(b))}
		n++
	}
	if h.Duplicate {
		r.ext[n] = remoting.ExtField{Key: protocol.ExtDuplicate, Value: "true"}
		n++
	}
	r.ExtList = r.ext[:n:n]
	return &r.Command
}

// digits is strconv.FormatInt(n, 10) held in r.offset: written once
// here, never changed after, so the string may alias it.
func (r *sendResponse) digits(n int64) string {
	b := strconv.AppendInt(r.offset[:0], n, 10)
	return unsafe.String(unsafe.SliceData(b), len(b))
}
