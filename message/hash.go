package message

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JavaStringHash returns Java's String.hashCode() of s, which the IndexFile
// uses for keys and the consume queue (through TagsHashCode) for tags:
// h = 31*h + c over the string's UTF-16 code units, in wrapping int32
// arithmetic. s is read as UTF-8; a rune above U+FFFF counts as its two
// surrogate code units, as in Java. An invalid byte counts as U+FFFD, which
// matches Java's decoder for stray bytes (Java may fold a truncated
// multi-byte sequence into one U+FFFD where this counts one per byte).
func JavaStringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		h = hashRune(h, r)
		i += n
	}
	return h
}

// javaHashBytes is JavaStringHash over bytes, without converting them to a
// string.
func javaHashBytes(b []byte) int32 {
	var h int32
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		h = hashRune(h, r)
		i += n
	}
	return h
}

func hashRune(h int32, r rune) int32 {
	if r > 0xFFFF {
		hi, lo := utf16.EncodeRune(r)
		return 31*(31*h+hi) + lo
	}
	return 31*h + r
}

// TagsHashCode returns the tag code stored in a consume-queue unit: Java's
// String.hashCode() of the tags, sign-extended to int64 as Java's
// `long tagsCode = tags.hashCode()` does. Empty tags hash to 0.
func TagsHashCode(tags string) int64 { return int64(JavaStringHash(tags)) }
