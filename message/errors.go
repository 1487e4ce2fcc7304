package message

import "errors"

// Sentinel errors. Functions wrap them with %w and a detail (usually a byte
// offset or the offending value); compare with errors.Is.
var (
	// ErrTruncated: the buffer ends before the record (or the 8-byte header
	// being peeked) does. In a commitlog scan this marks the end of the
	// written region rather than corruption.
	ErrTruncated = errors.New("message: truncated record")

	// ErrBadMagic: the MAGICCODE field is not MagicV1.
	ErrBadMagic = errors.New("message: bad magic code")

	// ErrBadSize: TOTALSIZE is below the minimum record size or disagrees
	// with the lengths of the fields, or a length field is out of range.
	ErrBadSize = errors.New("message: record size disagrees with its fields")

	// ErrBadProperties: the properties are not a sequence of
	// "name\x01value\x02" items with a non-empty name (decoding), or a name
	// or value would break that framing (encoding).
	ErrBadProperties = errors.New("message: malformed properties")

	// ErrBodyCRC: the stored BODYCRC is not CRC32-IEEE(body) & 0x7FFFFFFF.
	ErrBodyCRC = errors.New("message: body CRC mismatch")

	// ErrBadMsgID: a string is not an offset message id.
	ErrBadMsgID = errors.New("message: malformed offset message id")

	// ErrEmptyTopic: a record cannot be encoded without a topic.
	ErrEmptyTopic = errors.New("message: empty topic")

	// ErrTopicTooLong: the topic is longer than MaxTopicLength bytes.
	ErrTopicTooLong = errors.New("message: topic longer than 127 bytes")

	// ErrPropertiesTooLong: the encoded properties are longer than
	// MaxPropertiesLength bytes.
	ErrPropertiesTooLong = errors.New("message: properties longer than 32767 bytes")

	// ErrInvalidHost: a born or store host is the zero netip.AddrPort when
	// encoding, or a stored port does not fit in 16 bits when decoding.
	ErrInvalidHost = errors.New("message: invalid host address")
)
