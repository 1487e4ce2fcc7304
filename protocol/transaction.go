package protocol

import (
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// Transaction states of END_TRANSACTION's commitOrRollback, which are also
// the transaction bits of a message's sysFlag (Java MessageSysFlag):
// a half message is stored with TransactionPrepared, its committed copy
// with TransactionCommit.
const (
	TransactionNotType  int32 = 0  // unknown: leave it to the check-back
	TransactionPrepared int32 = 4  // a half message
	TransactionCommit   int32 = 8  // commit
	TransactionRollback int32 = 12 // roll back
	// TransactionTypeMask selects the transaction bits of a sysFlag.
	TransactionTypeMask int32 = 12
)

// TransactionType returns the transaction bits of sysFlag.
func TransactionType(sysFlag int32) int32 { return sysFlag & TransactionTypeMask }

// EndTransactionRequestHeader is the header of END_TRANSACTION (37),
// producer → broker: the outcome of the local transaction of the half
// message stored at CommitLogOffset. rocketmq-client-go sends it without
// the one-way bit and does not wait for an answer.
//
//	field                 ext name              required
//	--------------------  --------------------  --------
//	ProducerGroup         producerGroup         yes
//	TranStateTableOffset  tranStateTableOffset  yes  (the half message's queue offset)
//	CommitLogOffset       commitLogOffset       yes  (from its offset msgId)
//	CommitOrRollback      commitOrRollback      yes  (0, 8 or 12)
//	FromTransactionCheck  fromTransactionCheck       (true when answering a check)
//	MsgID                 msgId                 yes  (UNIQ_KEY)
//	TransactionID         transactionId
//	BrokerName            bname
type EndTransactionRequestHeader struct {
	ProducerGroup        string
	TranStateTableOffset int64
	CommitLogOffset      int64
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string
	BrokerName           string
}

// Encode returns the ext fields, every field written.
func (h *EndTransactionRequestHeader) Encode() map[string]string {
	return map[string]string{
		"producerGroup":        h.ProducerGroup,
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"commitOrRollback":     itoa32(h.CommitOrRollback),
		"fromTransactionCheck": boolString(h.FromTransactionCheck),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"bname":                h.BrokerName,
	}
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField; a malformed number, a negative offset or a
// state other than 0, 8 and 12 wraps remoting.ErrBadHeader. It never
// panics.
func (h *EndTransactionRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "END_TRANSACTION request header", ext: ext}
	out := EndTransactionRequestHeader{
		ProducerGroup:        r.str("producerGroup", true),
		TranStateTableOffset: r.int64("tranStateTableOffset", true),
		CommitLogOffset:      r.int64("commitLogOffset", true),
		CommitOrRollback:     r.int32("commitOrRollback", true),
		FromTransactionCheck: r.bool("fromTransactionCheck"),
		MsgID:                r.str("msgId", true),
		TransactionID:        r.str("transactionId", false),
		BrokerName:           r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	switch {
	case out.TranStateTableOffset < 0 || out.CommitLogOffset < 0:
		r.fail(fmt.Errorf("%w: negative offset (tranStateTableOffset %d, commitLogOffset %d)",
			remoting.ErrBadHeader, out.TranStateTableOffset, out.CommitLogOffset))
	case out.CommitOrRollback != TransactionNotType && out.CommitOrRollback != TransactionCommit &&
		out.CommitOrRollback != TransactionRollback:
		r.fail(fmt.Errorf("%w: commitOrRollback %d is not 0, 8 or 12", remoting.ErrBadHeader, out.CommitOrRollback))
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the END_TRANSACTION request; remark carries the local
// transaction's error, if any, as Java clients send it.
func (h *EndTransactionRequestHeader) Request(remark string) *remoting.Command {
	cmd := remoting.NewRequest(remoting.EndTransaction, h.Encode(), nil)
	cmd.Remark = remark
	return cmd
}

// CheckTransactionStateRequestHeader is the header of
// CHECK_TRANSACTION_STATE (39), broker → producer: "what became of this
// half message?". The body is the half message as a stored record with
// its real topic and queue restored. The producer does not answer the
// frame; it sends a new END_TRANSACTION with FromTransactionCheck set and
// the offsets echoed.
//
//	field                 ext name              required
//	--------------------  --------------------  --------
//	TranStateTableOffset  tranStateTableOffset  yes
//	CommitLogOffset       commitLogOffset       yes
//	MsgID                 msgId                      (UNIQ_KEY)
//	TransactionID         transactionId              (UNIQ_KEY)
//	OffsetMsgID           offsetMsgId
//	Topic                 topic
//	BrokerName            bname
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
	Topic                string
	BrokerName           string
}

// Encode returns the ext fields, every field written.
func (h *CheckTransactionStateRequestHeader) Encode() map[string]string {
	return map[string]string{
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"offsetMsgId":          h.OffsetMsgID,
		"topic":                h.Topic,
		"bname":                h.BrokerName,
	}
}

// Decode reads the ext fields, with the rules of
// EndTransactionRequestHeader.Decode. It never panics.
func (h *CheckTransactionStateRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "CHECK_TRANSACTION_STATE request header", ext: ext}
	out := CheckTransactionStateRequestHeader{
		TranStateTableOffset: r.int64("tranStateTableOffset", true),
		CommitLogOffset:      r.int64("commitLogOffset", true),
		MsgID:                r.str("msgId", false),
		TransactionID:        r.str("transactionId", false),
		OffsetMsgID:          r.str("offsetMsgId", false),
		Topic:                r.str("topic", false),
		BrokerName:           r.str("bname", false),
	}
	if r.err == nil && (out.TranStateTableOffset < 0 || out.CommitLogOffset < 0) {
		r.fail(fmt.Errorf("%w: negative offset (tranStateTableOffset %d, commitLogOffset %d)",
			remoting.ErrBadHeader, out.TranStateTableOffset, out.CommitLogOffset))
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the CHECK_TRANSACTION_STATE request carrying record, the
// half message in the stored layout.
func (h *CheckTransactionStateRequestHeader) Request(record []byte) *remoting.Command {
	return remoting.NewRequest(remoting.CheckTransactionState, h.Encode(), record)
}
