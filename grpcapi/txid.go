package grpcapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/message"
)

// A transaction id, as SendMessage answers it for a half message and
// EndTransaction reads it back, carries what the broker's END_TRANSACTION
// needs to find the half message: its offset message id (store host and
// CommitLog offset) and its queue offset in the half topic, as
// "OFFSETMSGID-QUEUEOFFSET". The client only echoes it, so no table of
// open transactions is kept here, and any node of the group can end it.

// txn is a decoded transaction id.
type txn struct {
	offsetMsgID     string
	commitLogOffset int64
	queueOffset     int64
	brokerName      string
}

func formatTxnID(offsetMsgID string, queueOffset int64, brokerName string) string {
	id := offsetMsgID + "-" + strconv.FormatInt(queueOffset, 10)
	if brokerName != "" {
		id += "@" + brokerName
	}
	return id
}

// parseTxnID decodes a transaction id from a client; it never panics
// (FuzzParseTxnID).
func parseTxnID(full string) (txn, error) {
	id, brokerName, _ := strings.Cut(full, "@")
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return txn{}, fmt.Errorf("transaction id %q is not OFFSETMSGID-QUEUEOFFSET", id)
	}
	_, phy, err := message.ParseOffsetMsgID(id[:i])
	if err != nil {
		return txn{}, fmt.Errorf("transaction id %q: %w", id, err)
	}
	qo, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil || qo < 0 || phy < 0 {
		return txn{}, fmt.Errorf("transaction id %q: bad offsets", id)
	}
	return txn{offsetMsgID: id[:i], commitLogOffset: phy, queueOffset: qo, brokerName: brokerName}, nil
}
