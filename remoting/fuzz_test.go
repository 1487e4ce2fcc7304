package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds are frames (without the length prefix) of every shape.
func fuzzSeeds() [][]byte {
	seeds := [][]byte{
		jsonFrame(capturedSend, []byte("body")),
		jsonFrame(`{"CODE":5,"extFields":{"a":null},"x":[{"y":1e5}]}`, nil),
		jsonFrame(`{"remark":"\ud83d\ude00\u0001"}`, []byte{1}),
		jsonFrame(`{"code":32768}`, nil),
		{0, 0, 0, 9, '{', '"', 'a', '"', ':', '[', '[', ']', ']'},
		{1, 0, 0, 21, 0, 10, 9, 1, 61, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
		{2, 0, 0, 0},
		{},
	}
	for _, c := range roundTripCases() {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			c.SerializeType = st
			if f, err := Encode(nil, c); err == nil {
				seeds = append(seeds, f[4:])
			}
		}
	}
	return seeds
}

// FuzzDecode: no input panics Decode; whatever decodes re-encodes (in the
// same header type) to a frame that decodes to the same command, and that
// frame is a fixed point of encode∘decode.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := Decode(frame)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrBadHeader) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		enc, err := Encode(nil, c)
		if err != nil {
			t.Fatalf("decoded command does not encode: %v (%+v)", err, c)
		}
		if int(binary.BigEndian.Uint32(enc)) != len(enc)-4 {
			t.Fatal("bad length prefix")
		}
		again, err := Decode(enc[4:])
		if err != nil {
			t.Fatalf("re-decode: %v\n%q", err, enc)
		}
		if !sameCommand(c, again) {
			t.Fatalf("unstable:\n%+v\n%+v", c, again)
		}
		enc2, err := Encode(nil, again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not a fixed point: %v\n%q\n%q", err, enc, enc2)
		}
	})
}

// FuzzReadFrame: no input panics ReadFrame; a frame it returns is exactly
// the announced bytes and within the limit; the error classes are the
// documented ones.
func FuzzReadFrame(f *testing.F) {
	frame, _ := Encode(nil, &Command{Code: 1, Body: []byte("x")})
	f.Add(frame, uint16(0))
	f.Add(frame, uint16(10))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3}, uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(0))
	f.Add([]byte{0, 0, 0, 8, 0, 0}, uint16(100))
	f.Add([]byte{0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		got, err := ReadFrame(bytes.NewReader(data), nil, int(max))
		limit := int(max)
		if limit == 0 {
			limit = DefaultMaxFrameSize
		}
		if err != nil {
			switch {
			case errors.Is(err, ErrBadFrame), errors.Is(err, ErrFrameTooLarge):
			case len(data) == 0 && err == io.EOF:
			case len(data) > 0 && err == io.ErrUnexpectedEOF:
			default:
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		n := int(binary.BigEndian.Uint32(data))
		if len(got) != n || len(got)+4 > limit || !bytes.Equal(got, data[4:4+n]) {
			t.Fatalf("frame of %d bytes for prefix %d, limit %d", len(got), n, limit)
		}
	})
}

// unlimitedHeader lets the JSON parser accept what encoding/json accepts.
var unlimitedHeader = HeaderLimits{MaxBytes: maxHeaderLength, MaxExtFields: math.MaxInt, MaxDepth: maxJSONDepth}

// refCommand is a JSON header as RocketMQ's fastjson reads it, built on
// encoding/json: int fields also from strings that hold integers, ext
// values of any JSON type as their text.
type refCommand struct {
	Code      refInt32                   `json:"code"`
	Language  string                     `json:"language"`
	Version   refInt16                   `json:"version"`
	Opaque    refInt32                   `json:"opaque"`
	Flag      refInt32                   `json:"flag"`
	Remark    string                     `json:"remark"`
	ExtFields map[string]json.RawMessage `json:"extFields"`
}

// refInt16 and refInt32 are int fields: a JSON integer, or a string
// holding one.
type (
	refInt16 struct{ v int16 }
	refInt32 struct{ v int32 }
)

func (n *refInt16) UnmarshalJSON(b []byte) error {
	v, err := parseRefInt(b, 16, int64(n.v))
	n.v = int16(v)
	return err
}

func (n *refInt32) UnmarshalJSON(b []byte) error {
	v, err := parseRefInt(b, 32, int64(n.v))
	n.v = int32(v)
	return err
}

// parseRefInt reads an int field's JSON; null keeps was.
func parseRefInt(b []byte, bits int, was int64) (int64, error) {
	text := string(b)
	switch {
	case text == "null":
		return was, nil
	case strings.HasPrefix(text, `"`):
		if err := json.Unmarshal(b, &text); err != nil {
			return was, err
		}
		text = strings.TrimSpace(text)
	}
	v, err := strconv.ParseInt(text, 10, bits)
	if err != nil {
		return was, err
	}
	return v, nil
}

// ext is the ext fields as strings: a string unquoted, null as "", any
// other value as its JSON text.
func (r *refCommand) ext() map[string]string {
	if r.ExtFields == nil {
		return nil
	}
	out := make(map[string]string, len(r.ExtFields))
	for k, raw := range r.ExtFields {
		switch {
		case string(raw) == "null":
			out[k] = ""
		case len(raw) > 0 && raw[0] == '"':
			var s string
			_ = json.Unmarshal(raw, &s)
			out[k] = s
		default:
			out[k] = string(raw)
		}
	}
	return out
}

// FuzzJSONHeader holds the JSON header parser to encoding/json: for every
// input that is a JSON object (or not JSON at all) both accept or both
// reject it, and accepted headers give the same fields.
func FuzzJSONHeader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		if len(s) >= 4 && s[0] == SerializeJSON {
			hlen := int(binary.BigEndian.Uint32(s) & maxHeaderLength)
			if hlen <= len(s)-4 {
				f.Add(s[4 : 4+hlen])
			}
		}
	}
	f.Add([]byte(`{"code":1,"code":null,"extFields":{"a":"1"},"extFields":null,"extFields":{"b":"2"}}`))
	f.Add([]byte("{\"ver\u017fion\":3,\"REMAR\u212a\":\"\\ud800\\udc00\\ud800\"}"))
	f.Add([]byte(`{"opaque":-0,"flag":2147483648}`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":true}]},"language":null}`))
	// What fastjson takes and encoding/json does not: ints as strings, ext
	// values of other types.
	f.Add([]byte(`{"code":"10","opaque":" -3 ","extFields":{"queueId":3,"batch":true,"o":{"b":[1,"c"]},"n":null}}`))
	// Strings unescaped in place: escapes next to invalid UTF-8 (which
	// grows when replaced), keys with escapes, repeated keys.
	f.Add([]byte(capturedSendV2))
	f.Add([]byte("{\"extFields\":{\"k\\u0031\":\"\xff\xfe\\n\xff\",\"k1\":\"\\u00e9\xc3\",\"a\":\"x\\\"y\"}}"))
	f.Add([]byte(`{"extFields":{"a":"1","a":"2"},"EXTFIELDS":{"b":"\ud83d\ude00\ud800x"}}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		var c Command
		pairs, err := decodeJSONHeader(header, &c, unlimitedHeader, nil)
		c.ExtList = pairs
		c.ExtFields = c.ExtMap()
		var ref refCommand
		refErr := json.Unmarshal(header, &ref)
		if bytes.Equal(bytes.TrimSpace(header), []byte("null")) {
			// encoding/json accepts a bare null; a header must be an object.
			if err == nil {
				t.Fatal("accepted a null header")
			}
			return
		}
		if (err == nil) != (refErr == nil) {
			t.Fatalf("disagree on %q: ours %v, encoding/json %v", header, err, refErr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error class: %v", err)
			}
			return
		}
		ext := ref.ext()
		if c.Code != ref.Code.v || c.Language != ref.Language || c.Version != ref.Version.v ||
			c.Opaque != ref.Opaque.v || c.Flag != ref.Flag.v || c.Remark != ref.Remark ||
			len(c.ExtFields) != len(ext) || !maps.Equal(c.ExtFields, ext) {
			t.Fatalf("disagree on %q:\n ours %+v\n  ref %+v", header, c, ref)
		}
	})
}

// FuzzDecodeLimited: limits only ever refuse. Under any limits no input
// panics; what decodes within them decodes the same without them, has at
// most MaxExtFields ext fields and a header of at most MaxBytes; what is
// refused for a limit is ErrBadHeader.
func FuzzDecodeLimited(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint16(64), uint8(4), uint8(3))
	}
	f.Add(jsonFrame(string(hugeExtHeader(20)), nil)[4:], uint16(4096), uint8(8), uint8(4))
	f.Add(binaryExtHeader(20), uint16(4096), uint8(8), uint8(4))
	f.Add([]byte("\x00\x00\x00\x0f{\"a\":[[[[]]]]}"), uint16(100), uint8(8), uint8(3))
	f.Fuzz(func(t *testing.T, frame []byte, maxBytes uint16, maxExt, maxDepth uint8) {
		lim := HeaderLimits{MaxBytes: int(maxBytes), MaxExtFields: int(maxExt), MaxDepth: int(maxDepth)}
		c, err := DecodeLimited(frame, lim)
		ref, refErr := DecodeLimited(frame, unlimitedHeader)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrBadHeader) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if refErr != nil && errors.Is(err, ErrBadFrame) != errors.Is(refErr, ErrBadFrame) {
				t.Fatalf("limited %v, unlimited %v", err, refErr)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("accepted within limits, refused without: %v", refErr)
		}
		if !sameCommand(c, ref) {
			t.Fatalf("limits changed the result:\n%+v\n%+v", c, ref)
		}
		lim = lim.withDefaults()
		hlen := int(binary.BigEndian.Uint32(frame) & maxHeaderLength)
		if hlen > lim.MaxBytes || len(c.ExtFields) > lim.MaxExtFields {
			t.Fatalf("header of %d bytes with %d ext fields passed %+v", hlen, len(c.ExtFields), lim)
		}
	})
}
