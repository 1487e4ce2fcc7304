package broker

import (
	"strings"

	"github.com/ledgermq/ledgermq/message"
)

// decodeProperties is message.DecodeProperties of a send header's
// properties string, with the same rules and result: the names and values
// slice s itself, where DecodeProperties would have it copied twice (to
// the bytes it takes, and back into the string its map slices). Input it
// refuses goes to DecodeProperties for its error, so the two cannot
// disagree on what is wrong.
func decodeProperties(s string) (map[string]string, error) {
	m := make(map[string]string, strings.Count(s, string(rune(message.PropertySeparator))))
	for off := 0; off < len(s); {
		rel := strings.IndexByte(s[off:], message.PropertySeparator)
		if rel < 0 {
			return message.DecodeProperties([]byte(s))
		}
		item := s[off : off+rel]
		i := strings.IndexByte(item, message.NameValueSeparator)
		if i <= 0 || strings.IndexByte(item[i+1:], message.NameValueSeparator) >= 0 {
			return message.DecodeProperties([]byte(s))
		}
		m[item[:i]] = item[i+1:]
		off += rel + 1
	}
	return m, nil
}

// withProperty returns the encoding of s's properties with name=value
// added when that can be had by splicing the item into s: s's names are
// strictly ascending (so s is message.EncodeProperties of its own
// decoding, as our client and the message package encode), name is not
// among them and neither name nor value holds a separator byte. The
// result is then byte for byte message.EncodeProperties of s's decoding
// with name set; otherwise ok is false and the caller encodes the map.
// s must be properties decodeProperties accepted.
func withProperty(s, name, value string) (enc []byte, ok bool) {
	if name == "" || strings.ContainsAny(name, "\x01\x02") || strings.ContainsAny(value, "\x01\x02") {
		return nil, false
	}
	at, prev := -1, ""
	for off := 0; off < len(s); {
		end := off + strings.IndexByte(s[off:], message.PropertySeparator)
		if end < off {
			return nil, false
		}
		key := s[off : off+strings.IndexByte(s[off:end], message.NameValueSeparator)]
		if (off > 0 && key <= prev) || key == name {
			return nil, false
		}
		if at < 0 && key > name {
			at = off
		}
		prev, off = key, end+1
	}
	if at < 0 {
		at = len(s)
	}
	enc = make([]byte, 0, len(s)+len(name)+len(value)+2)
	enc = append(enc, s[:at]...)
	enc = append(enc, name...)
	enc = append(enc, message.NameValueSeparator)
	enc = append(enc, value...)
	enc = append(enc, message.PropertySeparator)
	return append(enc, s[at:]...), true
}
