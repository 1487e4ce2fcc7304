package dedup

// An id is the map key of a (topic, key) pair, made without ambiguity:
//
//	byte 0     len(topic) (1..127), bit 7 set when the key is packed
//	topic      len(topic) bytes
//	key        the key's bytes, or 16 bytes when packed
//
// A key of exactly 32 upper-case hex characters (what RocketMQ clients
// send: UtilAll's upper-case encoding of 16 bytes) is packed into the 16
// bytes it encodes, which keeps a typical id within a 32-byte allocation.
// Any other key is kept as it is. The length prefix and the flag make the
// encoding injective: equal ids mean equal pairs, so a lookup never
// matches another message.
const (
	maxIDLen   = 1 + MaxTopicLen + MaxKeyLen
	packedFlag = 0x80
	packedLen  = 16
	hexDigits  = "0123456789ABCDEF"
)

// idBuf holds an id on the caller's stack, so that a lookup of the map by
// string(id) does not allocate.
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
	var bad byte // digits are at most 0x0F: a high bit marks a non-digit
	for i := range dst {
		hi, lo := hexValues[key[2*i]], hexValues[key[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo
	}
	return bad&0xF0 == 0
}

// hexValues maps an upper-case hex digit to its value, any other byte to
// 0xFF.
var hexValues = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xFF
	}
	for i := range len(hexDigits) {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()

// idTopic returns the topic of an id.
func idTopic(id string) string {
	return id[1 : 1+int(id[0]&^packedFlag)]
}

// idKeyLen returns the length of an id's key as the client sent it.
func idKeyLen(id string) int {
	if id[0]&packedFlag != 0 {
		return 2 * packedLen
	}
	return len(id) - 1 - int(id[0])
}

// appendIDKey appends an id's key, as the client sent it, to dst.
func appendIDKey(dst []byte, id string) []byte {
	k := id[1+int(id[0]&^packedFlag):]
	if id[0]&packedFlag == 0 {
		return append(dst, k...)
	}
	for i := range packedLen {
		dst = append(dst, hexDigits[k[i]>>4], hexDigits[k[i]&0x0F])
	}
	return dst
}
