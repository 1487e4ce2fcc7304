package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ledgermq/ledgermq/remoting"
)

// Pending work of a broker group, for operators: ledgermq's own requests
// (RocketMQ has none), answered by the group's leader (a follower
// forwards them).
//
//	code  name                                 header              body of the answer
//	----  -----------------------------------  ------------------  -------------------
//	4011  LEDGERMQ_LIST_PENDING_TIMERS         PendingListHeader   PendingTimers
//	4012  LEDGERMQ_LIST_PENDING_TRANSACTIONS   PendingListHeader   PendingTransactions
//
// PendingListHeader's one ext field, limit, is how many items to list
// (1..MaxPendingList; absent: DefaultPendingList). The answer always
// carries the total count; the items are the first ones in due order
// (timers) or in half-queue order, oldest first (transactions).

// Bounds of the pending listings.
const (
	DefaultPendingList = 20
	MaxPendingList     = 1000
)

// PendingListHeader is the header of 4011 and 4012.
type PendingListHeader struct {
	Limit int
}

// Request builds the request of code (ListPendingTimers or
// ListPendingTransactions).
func (h PendingListHeader) Request(code int32) *remoting.Command {
	ext := map[string]string{}
	if h.Limit != 0 {
		ext["limit"] = strconv.Itoa(h.Limit)
	}
	return remoting.NewRequest(code, ext, nil)
}

// DecodePendingListHeader parses the header; a limit that is not an
// integer in 1..MaxPendingList is remoting.ErrBadHeader.
func DecodePendingListHeader(ext map[string]string) (PendingListHeader, error) {
	h := PendingListHeader{Limit: DefaultPendingList}
	v, ok := ext["limit"]
	if !ok {
		return h, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPendingList {
		return PendingListHeader{}, fmt.Errorf("%w: limit %q is not an integer in 1..%d", remoting.ErrBadHeader, v, MaxPendingList)
	}
	h.Limit = n
	return h, nil
}

// PendingTimer is one timer message not yet delivered.
type PendingTimer struct {
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	// DueMs is when it is delivered (Unix ms); BornMs when the producer
	// sent it.
	DueMs  int64 `json:"dueMs"`
	BornMs int64 `json:"bornMs"`
	// MsgID is the producer's message id (UNIQ_KEY); ParkedOffset its
	// offset in the timer topic's queue.
	MsgID        string `json:"msgId"`
	ParkedOffset int64  `json:"parkedOffset"`
}

// PendingTimers is the body of a 4011 answer.
type PendingTimers struct {
	// Count is how many timer messages are parked and not yet delivered.
	Count int64 `json:"count"`
	// NextDueMs is the earliest due time among them (0: none).
	NextDueMs int64 `json:"nextDueMs,omitempty"`
	// MaxDelayMs is the broker's longest accepted delay.
	MaxDelayMs int64          `json:"maxDelayMs"`
	Timers     []PendingTimer `json:"timers"`
}

// Encode is the 4011 answer's body.
func (p PendingTimers) Encode() ([]byte, error) { return json.Marshal(p) }

// DecodePendingTimers parses a 4011 body; JSON of another shape, more than
// MaxPendingList items or negative counts are remoting.ErrBadHeader.
func DecodePendingTimers(body []byte) (PendingTimers, error) {
	var p PendingTimers
	if err := json.Unmarshal(body, &p); err != nil {
		return PendingTimers{}, fmt.Errorf("%w: pending timers body: %w", remoting.ErrBadHeader, err)
	}
	if len(p.Timers) > MaxPendingList || p.Count < 0 || p.MaxDelayMs < 0 {
		return PendingTimers{}, fmt.Errorf("%w: pending timers: %d items, count %d", remoting.ErrBadHeader, len(p.Timers), p.Count)
	}
	return p, nil
}

// PendingTransaction is one transaction not yet committed or rolled back.
type PendingTransaction struct {
	MsgID         string `json:"msgId"`
	ProducerGroup string `json:"producerGroup"`
	Topic         string `json:"topic"`
	// AgeMs is how long ago the producer sent the half message; CheckTimes
	// how often the broker has asked the producer about it.
	AgeMs      int64 `json:"ageMs"`
	BornMs     int64 `json:"bornMs"`
	CheckTimes int   `json:"checkTimes"`
	// HalfOffset is its latest half copy's offset in the half queue.
	HalfOffset int64 `json:"halfOffset"`
}

// PendingTransactions is the body of a 4012 answer.
type PendingTransactions struct {
	Count        int64                `json:"count"`
	Transactions []PendingTransaction `json:"transactions"`
}

// Encode is the 4012 answer's body.
func (p PendingTransactions) Encode() ([]byte, error) { return json.Marshal(p) }

// DecodePendingTransactions parses a 4012 body, bounded as
// DecodePendingTimers.
func DecodePendingTransactions(body []byte) (PendingTransactions, error) {
	var p PendingTransactions
	if err := json.Unmarshal(body, &p); err != nil {
		return PendingTransactions{}, fmt.Errorf("%w: pending transactions body: %w", remoting.ErrBadHeader, err)
	}
	if len(p.Transactions) > MaxPendingList || p.Count < 0 {
		return PendingTransactions{}, fmt.Errorf("%w: pending transactions: %d items, count %d", remoting.ErrBadHeader, len(p.Transactions), p.Count)
	}
	return p, nil
}
