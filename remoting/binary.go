package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// binaryFixedLength is the size of a ROCKETMQ header without its remark and
// ext bytes: code 2, language 1, version 2, opaque 4, flag 4, remark length
// 4, ext length 4.
const binaryFixedLength = 21

// appendBinaryHeader appends c's header in the ROCKETMQ binary layout, with
// the given opaque and flag. Ext entries are written in ascending key
// order (ExtList's in their own order). The language name is written as
// its byte code (OTHER when the name is not in the table).
func appendBinaryHeader(dst []byte, c *Command, opaque, flag int32) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		// Java writes the code's low 16 bits (RocketMQSerializable's
		// writeShort), so POP_MESSAGE (200050) would arrive as 3442: a
		// code above int16 is only sent in a JSON header.
		return dst, fmt.Errorf("%w: code %d does not fit a binary header's int16 (send it with a JSON header)", ErrBadHeader, c.Code)
	}
	var small [24]ExtField
	pairs := c.ExtList
	if c.ExtFields != nil {
		pairs = small[:0]
		for k, v := range c.ExtFields {
			pairs = append(pairs, ExtField{k, v})
		}
		sortPairs(pairs)
	}
	extLen := 0
	for _, p := range pairs {
		if len(p.Key) > math.MaxInt16 {
			return dst, fmt.Errorf("%w: ext key of %d bytes exceeds %d", ErrBadHeader, len(p.Key), math.MaxInt16)
		}
		extLen += 2 + len(p.Key) + 4 + len(p.Value)
	}
	if len(c.Remark) > maxHeaderLength || extLen > maxHeaderLength {
		return dst, fmt.Errorf("%w: header exceeds %d bytes", ErrBadHeader, maxHeaderLength)
	}
	lang, _ := LanguageCode(c.Language)
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, lang)
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(extLen))
	for _, p := range pairs {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(p.Key)))
		dst = append(dst, p.Key...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	return dst, nil
}

// decodeBinaryHeader parses a ROCKETMQ binary header into c, returning its
// ext fields appended to pairs (the caller puts them in a map or a list;
// a later duplicate key wins there). Every length is
// checked against the bytes that remain; negative lengths, a header that
// ends early, bytes left over after the ext entries and more entries than
// lim.MaxExtFields all fail with ErrBadHeader. Strings are taken as raw
// bytes, without UTF-8 validation. With owned they are views of h, which
// the command then keeps; otherwise of a copy.
func decodeBinaryHeader(h []byte, c *Command, lim HeaderLimits, pairs []ExtField, owned bool) ([]ExtField, error) {
	if len(h) < binaryFixedLength {
		return nil, fmt.Errorf("%w: binary header of %d bytes, need at least %d", ErrBadHeader, len(h), binaryFixedLength)
	}
	// A short, sign-extended, as Java reads it: a code above int16 never
	// arrives in a binary header (the sender kept only its low 16 bits).
	c.Code = int32(int16(binary.BigEndian.Uint16(h[0:])))
	c.Language = LanguageName(h[2])
	c.Version = int16(binary.BigEndian.Uint16(h[3:]))
	c.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	pos := 13
	// As RocketMQ's RocketMQSerializable reads it: a remark or ext length
	// of zero or less means none, and bytes after the ext are ignored; a
	// length past the header's end is an error.
	remarkLen := max(int32(binary.BigEndian.Uint32(h[pos:])), 0)
	pos += 4
	// The ext length field must still fit after the remark.
	if int64(remarkLen) > int64(len(h)-pos-4) {
		return nil, fmt.Errorf("%w: remark length %d with %d header bytes left", ErrBadHeader, remarkLen, len(h)-pos-4)
	}
	// Strings are cut from one copy of the header (one allocation of its
	// size, whatever the number of fields), or from h itself when it is
	// the command's (h holds at least the fixed part here).
	var hs string
	if owned {
		hs = unsafe.String(&h[0], len(h))
	} else {
		hs = string(h)
	}
	if remarkLen > 0 {
		c.Remark = hs[pos : pos+int(remarkLen)]
		pos += int(remarkLen)
	}
	extLen := max(int32(binary.BigEndian.Uint32(h[pos:])), 0)
	pos += 4
	if int64(extLen) > int64(len(h)-pos) {
		return nil, fmt.Errorf("%w: ext length %d with %d header bytes left", ErrBadHeader, extLen, len(h)-pos)
	}
	return decodeBinaryExt(hs[pos:pos+int(extLen)], lim.MaxExtFields, pairs)
}

// decodeBinaryExt parses the ext entries, appending them to pairs:
// repeated key length (int16), key, value length (int32), value. At most
// maxExt entries are read, duplicates included.
func decodeBinaryExt(b string, maxExt int, pairs []ExtField) ([]ExtField, error) {
	for pos, n := 0, 0; pos < len(b); n++ {
		if n == maxExt {
			return nil, fmt.Errorf("%w: more than %d ext fields", ErrBadHeader, maxExt)
		}
		if len(b)-pos < 2 {
			return nil, fmt.Errorf("%w: ext key length cut at byte %d", ErrBadHeader, pos)
		}
		kl := int16(uint16(b[pos])<<8 | uint16(b[pos+1]))
		pos += 2
		if kl < 0 || int(kl) > len(b)-pos {
			return nil, fmt.Errorf("%w: ext key length %d with %d bytes left", ErrBadHeader, kl, len(b)-pos)
		}
		k := b[pos : pos+int(kl)]
		pos += int(kl)
		if len(b)-pos < 4 {
			return nil, fmt.Errorf("%w: ext value length of %q cut", ErrBadHeader, k)
		}
		vl := int32(uint32(b[pos])<<24 | uint32(b[pos+1])<<16 | uint32(b[pos+2])<<8 | uint32(b[pos+3]))
		pos += 4
		if vl < 0 || int64(vl) > int64(len(b)-pos) {
			return nil, fmt.Errorf("%w: ext value length %d of %q with %d bytes left", ErrBadHeader, vl, k, len(b)-pos)
		}
		pairs = append(pairs, ExtField{k, b[pos : pos+int(vl)]})
		pos += int(vl)
	}
	return pairs, nil
}
