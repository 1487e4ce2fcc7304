package client

import "encoding/binary"

// batchItemOverhead is the fixed part of one SEND_BATCH_MESSAGE item:
// size 4, magic 4, body CRC 4, flag 4, body length 4, properties length 2.
const batchItemOverhead = 22

// batchItem is one message of a batch, ready to encode.
type batchItem struct {
	flag  int32
	body  []byte
	props []byte // encoded properties
}

// batchSize is the encoded size of items.
func batchSize(items []batchItem) int {
	n := 0
	for _, it := range items {
		n += batchItemOverhead + len(it.body) + len(it.props)
	}
	return n
}

// encodeBatch lays items out as the body of SEND_BATCH_MESSAGE, in the
// client-side message format the broker's decodeBatch reads (not the
// stored layout); magic and body CRC are 0, as rocketmq-client-go writes
// them:
//
//	size  field
//	----  ------------------------------------------
//	4     item size int32 = 22 + n + p
//	4     magic code (0)
//	4     body CRC (0)
//	4     flag int32
//	4     body length n int32
//	n     body
//	2     properties length p int16 (p <= 32767)
//	p     properties ("name\x01value\x02" items)
func encodeBatch(items []batchItem) []byte {
	out := make([]byte, 0, batchSize(items))
	be := binary.BigEndian
	for _, it := range items {
		out = be.AppendUint32(out, uint32(batchItemOverhead+len(it.body)+len(it.props)))
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, uint32(it.flag))
		out = be.AppendUint32(out, uint32(len(it.body)))
		out = append(out, it.body...)
		out = be.AppendUint16(out, uint16(len(it.props)))
		out = append(out, it.props...)
	}
	return out
}
