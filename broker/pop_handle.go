package broker

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Receipt handles: what a POP consumer sends back to acknowledge a message
// or change its invisible time. Opaque to clients; base64url (no padding)
// of
//
//	version (1) | broker name | group | topic   each uvarint length + bytes
//	queue id, queue offset, epoch               uvarints
//	CRC32-IEEE of what precedes                 4 bytes, big-endian
//
// The epoch is the receipt's (metadata.PopReceipt): it grows with every
// redelivery and new invisible time, so a handle of an earlier delivery is
// refused (ErrInvalidReceipt) once the message went out again.

const (
	receiptHandleVersion = 1
	// maxReceiptHandle bounds an encoded handle (names are at most 255
	// bytes each: ValidateTopic, ValidateGroup, broker names).
	maxReceiptHandle = 1024
)

// ReceiptHandle is a decoded receipt handle.
type ReceiptHandle struct {
	BrokerName string
	Group      string
	Topic      string
	QueueID    int32
	Offset     int64
	Epoch      int64
}

// Encode returns the handle's opaque form.
func (h ReceiptHandle) Encode() string {
	b := make([]byte, 0, 64+len(h.BrokerName)+len(h.Group)+len(h.Topic))
	b = append(b, receiptHandleVersion)
	for _, s := range []string{h.BrokerName, h.Group, h.Topic} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(h.QueueID))
	b = binary.AppendUvarint(b, uint64(h.Offset))
	b = binary.AppendUvarint(b, uint64(h.Epoch))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeReceiptHandle parses a handle made by Encode. It never panics;
// anything else is ErrInvalidReceipt.
func DecodeReceiptHandle(s string) (ReceiptHandle, error) {
	var h ReceiptHandle
	bad := func(why string) (ReceiptHandle, error) {
		return ReceiptHandle{}, fmt.Errorf("%w: %s", ErrInvalidReceipt, why)
	}
	if len(s) == 0 || len(s) > maxReceiptHandle {
		return bad("empty or too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	if len(b) < 1+4 || b[0] != receiptHandleVersion {
		return bad("unknown version")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return bad("checksum")
	}
	p := body[1:]
	var names [3]string
	for i := range names {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > 255 || n > uint64(len(p)-k) {
			return bad("name")
		}
		names[i] = string(p[k : k+int(n)])
		p = p[k+int(n):]
	}
	var nums [3]uint64
	for i := range nums {
		n, k := binary.Uvarint(p)
		if k <= 0 {
			return bad("number")
		}
		nums[i] = n
		p = p[k:]
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	if names[1] == "" || names[2] == "" || nums[0] > math.MaxInt32 || nums[1] > math.MaxInt64 || nums[2] < 1 || nums[2] > math.MaxInt64 {
		return bad("field out of range")
	}
	h.BrokerName, h.Group, h.Topic = names[0], names[1], names[2]
	h.QueueID, h.Offset, h.Epoch = int32(nums[0]), int64(nums[1]), int64(nums[2])
	return h, nil
}
