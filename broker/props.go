package broker

import (
	"strings"

	"github.com/ledgermq/ledgermq/message"
)

// propsSeen marks which of the properties the send path acts on a send's
// properties hold, so that a send without them skips their checks
// (timerDue, delayLevelOf, noteRequest) rather than looks each up.
type propsSeen uint8

const (
	// seenTimer: TIMER_DELIVER_MS, TIMER_DELAY_SEC or TIMER_DELAY_MS.
	seenTimer propsSeen = 1 << iota
	// seenDelay: DELAY.
	seenDelay
	// seenReplyTo: REPLY_TO_CLIENT.
	seenReplyTo
)

// seenOf is what name marks.
func seenOf(name string) propsSeen {
	switch name {
	case message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS:
		return seenTimer
	case message.PropertyDelayLevel:
		return seenDelay
	case message.PropertyReplyToClient:
		return seenReplyTo
	}
	return 0
}

// sendProps are a send header's properties string read in one pass: the
// map decodeProperties gives, the properties seen, and what splicing one
// more property (named splice) into the string needs to know.
type sendProps struct {
	m    map[string]string
	seen propsSeen
	// unsorted: the names are not strictly ascending. hasSplice: the
	// name to splice is among them. at: the offset of the first name
	// above it, len of the string when none is.
	unsorted, hasSplice bool
	at                  int
}

// readProperties is decodeProperties of s that also notes what sendProps
// holds, for the property named splice.
func readProperties(s, splice string) (sendProps, error) {
	p := sendProps{m: make(map[string]string, strings.Count(s, string(rune(message.PropertySeparator)))), at: -1}
	prev := ""
	for off := 0; off < len(s); {
		rel := strings.IndexByte(s[off:], message.PropertySeparator)
		if rel < 0 {
			return decodedProperties(s)
		}
		item := s[off : off+rel]
		i := strings.IndexByte(item, message.NameValueSeparator)
		if i <= 0 || strings.IndexByte(item[i+1:], message.NameValueSeparator) >= 0 {
			return decodedProperties(s)
		}
		key := item[:i]
		p.m[key] = item[i+1:]
		p.seen |= seenOf(key)
		if off > 0 && key <= prev {
			p.unsorted = true
		}
		if key == splice {
			p.hasSplice = true
		} else if p.at < 0 && key > splice {
			p.at = off
		}
		prev, off = key, off+rel+1
	}
	if p.at < 0 {
		p.at = len(s)
	}
	return p, nil
}

// decodedProperties is what DecodeProperties makes of properties
// readProperties refuses, so the two cannot disagree on what is wrong: its
// error, or (were it to accept them) its map, every property seen and no
// splicing.
func decodedProperties(s string) (sendProps, error) {
	m, err := message.DecodeProperties([]byte(s))
	if err != nil {
		return sendProps{}, err
	}
	return sendProps{m: m, seen: seenTimer | seenDelay | seenReplyTo, unsorted: true}, nil
}

// decodeProperties is message.DecodeProperties of a send header's
// properties string, with the same rules and result: the names and values
// slice s itself, where DecodeProperties would have it copied twice (to
// the bytes it takes, and back into the string its map slices). Input it
// refuses gets DecodeProperties' error.
func decodeProperties(s string) (map[string]string, error) {
	p, err := readProperties(s, "")
	return p.m, err
}

// appendWith appends to dst the encoding of s's properties (p, read by
// readProperties(s, name)) with name=value added, when that can be had
// by splicing the item into s: s's names are strictly ascending (so s is
// message.EncodeProperties of its own decoding, as our client and the
// message package encode), name is not among them and neither name nor
// value holds a separator byte. The result is then byte for byte
// message.EncodeProperties of s's decoding with name set; otherwise ok is
// false and the caller encodes the map.
func (p *sendProps) appendWith(dst []byte, s, name, value string) (enc []byte, ok bool) {
	if p.unsorted || p.hasSplice || name == "" || strings.ContainsAny(name, "\x01\x02") || strings.ContainsAny(value, "\x01\x02") {
		return nil, false
	}
	n := len(s) + len(name) + len(value) + 2
	if cap(dst)-len(dst) < n {
		dst = make([]byte, 0, len(dst)+n)
	}
	dst = append(dst, s[:p.at]...)
	dst = append(dst, name...)
	dst = append(dst, message.NameValueSeparator)
	dst = append(dst, value...)
	dst = append(dst, message.PropertySeparator)
	return append(dst, s[p.at:]...), true
}

// withProperty is appendWith of s's properties to a new slice; s must be
// properties decodeProperties accepted.
func withProperty(s, name, value string) (enc []byte, ok bool) {
	p, err := readProperties(s, name)
	if err != nil {
		return nil, false
	}
	return p.appendWith(nil, s, name, value)
}
