package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/ledgermq/ledgermq/message"
)

// batchItemHeader is the fixed part of one item of a SEND_BATCH_MESSAGE
// body before its body bytes: size, magic, body CRC, flag, body length.
const batchItemHeader = 20

// batchItemMin is the smallest item: the fixed fields, an empty body and
// empty properties (size 4 + magic 4 + crc 4 + flag 4 + body length 4 +
// properties length 2).
const batchItemMin = batchItemHeader + 2

// batchItem is one message of a SEND_BATCH_MESSAGE body, in the client-side
// message format (not the stored layout):
//
//	size  field
//	----  ------------------------------------------------
//	4     total size int32 (this field included) = 22 + n + p
//	4     magic code (clients write 0; ignored)
//	4     body CRC (clients write 0; ignored)
//	4     flag int32
//	4     body length n int32
//	n     body
//	2     properties length p int16
//	p     properties ("name\x01value\x02" items)
//
// Body and Properties alias the request body.
type batchItem struct {
	Flag       int32
	Body       []byte
	Properties map[string]string
}

// decodeBatch splits a SEND_BATCH_MESSAGE body into its items. It is
// strict: every item's size field must equal the sum of its parts, lengths
// must be non-negative and inside the body, and properties must be
// well-formed. Errors wrap ErrMessageIllegal and name the item's index and
// byte offset. It never panics, whatever body holds. An empty body is an
// error: a batch has at least one message.
func decodeBatch(body []byte) ([]batchItem, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty batch body", ErrMessageIllegal)
	}
	var items []batchItem
	for off := 0; off < len(body); {
		i := len(items)
		rest := body[off:]
		if len(rest) < batchItemMin {
			return nil, fmt.Errorf("%w: batch item %d at %d: %d bytes left, need %d", ErrMessageIllegal, i, off, len(rest), batchItemMin)
		}
		size := int64(int32(binary.BigEndian.Uint32(rest[0:4])))
		flag := int32(binary.BigEndian.Uint32(rest[12:16]))
		n := int64(int32(binary.BigEndian.Uint32(rest[16:20])))
		if n < 0 || n > int64(len(rest))-batchItemMin {
			return nil, fmt.Errorf("%w: batch item %d at %d: body length %d out of range", ErrMessageIllegal, i, off, n)
		}
		pAt := batchItemHeader + int(n)
		p := int64(int16(binary.BigEndian.Uint16(rest[pAt : pAt+2])))
		if p < 0 || p > int64(len(rest)-pAt-2) {
			return nil, fmt.Errorf("%w: batch item %d at %d: properties length %d out of range", ErrMessageIllegal, i, off, p)
		}
		if want := int64(batchItemMin) + n + p; size != want {
			return nil, fmt.Errorf("%w: batch item %d at %d: size field %d, fields add up to %d", ErrMessageIllegal, i, off, size, want)
		}
		props, err := message.DecodeProperties(rest[pAt+2 : pAt+2+int(p)])
		if err != nil {
			return nil, fmt.Errorf("%w: batch item %d at %d: %w", ErrMessageIllegal, i, off, err)
		}
		items = append(items, batchItem{
			Flag:       flag,
			Body:       rest[batchItemHeader:pAt:pAt],
			Properties: props,
		})
		off += int(size)
	}
	return items, nil
}
