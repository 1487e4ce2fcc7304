package dedup

import "encoding/binary"

// An id is the table key of a (topic, key) pair, made without ambiguity:
//
//	byte 0     len(topic) (1..127), bit 7 set when the key is packed
//	topic      len(topic) bytes
//	key        the key's bytes, or 16 bytes when packed
//
// A key of exactly 32 upper-case hex characters (what RocketMQ clients
// send: UtilAll's upper-case encoding of 16 bytes) is packed into the 16
// bytes it encodes, which keeps a typical id within 32 bytes of arena.
// Any other key is kept as it is. The length prefix and the flag make the
// encoding injective: equal ids mean equal pairs, so a lookup never
// matches another message.
const (
	maxIDLen   = 1 + MaxTopicLen + MaxKeyLen
	packedFlag = 0x80
	packedLen  = 16
	hexDigits  = "0123456789ABCDEF"
)

// idBuf holds an id on the caller's stack: making one and looking it up
// allocate nothing.
type idBuf [maxIDLen]byte

// recordable reports whether (topic, key) is within the recorded bounds:
// both non-empty, topic at most MaxTopicLen bytes, key at most MaxKeyLen.
func recordable(topic, key string) bool {
	return topic != "" && key != "" && len(topic) <= MaxTopicLen && len(key) <= MaxKeyLen
}

// makeID writes the id of (topic, key) into b and returns it; the pair
// must be within the recorded bounds.
func makeID[S string | []byte](b *idBuf, topic, key S) []byte {
	n := 1 + copy(b[1:], topic)
	b[0] = byte(len(topic))
	if packHex(b[n:n+packedLen], key) {
		b[0] |= packedFlag
		return b[:n+packedLen]
	}
	return b[:n+copy(b[n:], key)]
}

// packHex decodes key into dst (16 bytes) if it is 32 upper-case hex
// characters, and reports whether it was; dst is written either way.
func packHex[S string | []byte](dst []byte, key S) bool {
	if len(key) != 2*packedLen {
		return false
	}
	dst = dst[:packedLen]
	ok := uint64(hexHigh)
	for i := range packedLen / 8 {
		lo, okLo := hex8(le64(key, 16*i))
		hi, okHi := hex8(le64(key, 16*i+8))
		ok &= okLo & okHi
		binary.LittleEndian.PutUint64(dst[8*i:], uint64(lo)|uint64(hi)<<32)
	}
	return ok == hexHigh
}

// Byte lanes of a uint64: a byte in each, and the high bit of each.
const (
	hexLanes = 0x0101010101010101
	hexHigh  = 0x80 * hexLanes
)

// hex8 decodes 8 characters, one per byte lane of x (the first in the low
// byte), into the 4 bytes they encode (the first in the low byte), and
// returns with them ok, whose lane has its high bit set where the
// character is an upper-case hex digit. One lane never carries into the
// next: every lane is below 0x80 before anything is added to it.
func hex8(x uint64) (v uint32, ok uint64) {
	ok = ^x & hexHigh // a lane ≥ 0x80 is no digit
	x &^= hexHigh     // and counts no further
	// (x + (0x80 − c)) has the high bit of the lanes ≥ c.
	digit := (x + (0x80-'0')*hexLanes) &^ (x + (0x80-'9'-1)*hexLanes)
	letter := (x + (0x80-'A')*hexLanes) &^ (x + (0x80-'F'-1)*hexLanes)
	ok &= digit | letter
	// A digit's value is its low nibble; a letter's, its low nibble plus
	// 9 ('A' is 0x41).
	n := x&(0x0F*hexLanes) + (letter&hexHigh)>>7*9
	// Lane 2j takes character 2j's value high and 2j+1's low; then the
	// even lanes are gathered.
	n = (n<<4 | n>>8) & 0x00FF00FF00FF00FF
	n = (n | n>>8) & 0x0000FFFF0000FFFF
	return uint32(n | n>>16), ok
}

// le64 returns the 8 bytes of s from i on, little-endian.
func le64[S string | []byte](s S, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// idTopic returns the topic of an id.
func idTopic[S string | []byte](id S) S {
	return id[1 : 1+int(id[0]&^packedFlag)]
}

// idKeyLen returns the length of an id's key as the client sent it.
func idKeyLen[S string | []byte](id S) int {
	if id[0]&packedFlag != 0 {
		return 2 * packedLen
	}
	return len(id) - 1 - int(id[0])
}

// appendIDKey appends an id's key, as the client sent it, to dst.
func appendIDKey[S string | []byte](dst []byte, id S) []byte {
	k := id[1+int(id[0]&^packedFlag):]
	if id[0]&packedFlag == 0 {
		return append(dst, k...)
	}
	for i := range packedLen {
		dst = append(dst, hexDigits[k[i]>>4], hexDigits[k[i]&0x0F])
	}
	return dst
}
