package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// capturedSend is the SEND_MESSAGE header the real Go client sent in the
// capture of its traffic, byte for byte.
const capturedSend = `{"code":10,"language":"GO","version":317,"opaque":6,"flag":0,"remark":"","extFields":{"producerGroup":"pg1","topic":"TestTopic","queueId":"1","sysFlag":"0","bornTimestamp":"1795975709351","flag":"0","reconsumeTimes":"0","unitMode":"false","maxReconsumeTimes":"0","defaultTopic":"TBW102","defaultTopicQueueNums":"4","batch":"false","properties":"TAGS\u0001TagA\u0002KEYS\u0001k1 k2\u0002UNIQ_KEY\u0001C00002024A2200000000941699480001\u0002","bname":"broker-a"}}`

// jsonFrame builds the bytes after the length prefix for a JSON header.
func jsonFrame(header string, body []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	f = append(f, header...)
	return append(f, body...)
}

func TestDecodeCapturedSendMessage(t *testing.T) {
	body := []byte("Hello RocketMQ")
	c, err := Decode(jsonFrame(capturedSend, body))
	if err != nil {
		t.Fatal(err)
	}
	if c.Code != SendMessage || c.Language != LanguageGo || c.Version != 317 || c.Opaque != 6 ||
		c.Flag != 0 || c.Remark != "" || c.SerializeType != SerializeJSON || !bytes.Equal(c.Body, body) {
		t.Fatalf("fixed fields: %+v", c)
	}
	want := map[string]string{
		"producerGroup":         "pg1",
		"topic":                 "TestTopic",
		"queueId":               "1",
		"sysFlag":               "0",
		"bornTimestamp":         "1795975709351",
		"flag":                  "0",
		"reconsumeTimes":        "0",
		"unitMode":              "false",
		"maxReconsumeTimes":     "0",
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"batch":                 "false",
		"properties":            "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C00002024A2200000000941699480001\x02",
		"bname":                 "broker-a",
	}
	if len(c.ExtFields) != len(want) {
		t.Fatalf("ext has %d fields, want %d: %v", len(c.ExtFields), len(want), c.ExtFields)
	}
	for k, v := range want {
		if c.ExtFields[k] != v {
			t.Errorf("ext %s = %q, want %q", k, c.ExtFields[k], v)
		}
	}
	if ts, err := ExtInt(c.ExtFields, "bornTimestamp"); err != nil || ts != 1795975709351 {
		t.Errorf("ExtInt bornTimestamp = %d, %v", ts, err)
	}
	if b, err := ExtBool(c.ExtFields, "batch"); err != nil || b {
		t.Errorf("ExtBool batch = %v, %v", b, err)
	}

	// Re-encoding keeps the properties separators as \u0001 / \u0002 and
	// decodes to the same command.
	frame, err := Encode(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(frame, []byte(`TAGS\u0001TagA\u0002`)) {
		t.Errorf("encoded header lost the escapes: %s", frame[8:])
	}
	again, err := Decode(frame[4:])
	if err != nil || !sameCommand(c, again) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, c, again)
	}
}

func TestBinaryHeaderByHand(t *testing.T) {
	var h []byte
	h = append(h, 0x00, 0x0A)             // code 10
	h = append(h, 9)                      // language GO
	h = append(h, 0x01, 0x3D)             // version 317
	h = append(h, 0x00, 0x00, 0x00, 0x06) // opaque 6
	h = append(h, 0x00, 0x00, 0x00, 0x03) // flag: response | one-way
	h = append(h, 0x00, 0x00, 0x00, 0x02) // remark length
	h = append(h, 'o', 'k')
	h = append(h, 0x00, 0x00, 0x00, 26) // ext length: 12 + 14
	h = append(h, 0x00, 0x05)
	h = append(h, "topic"...)
	h = append(h, 0x00, 0x00, 0x00, 0x01)
	h = append(h, 'T')
	h = append(h, 0x00, 0x07)
	h = append(h, "queueId"...)
	h = append(h, 0x00, 0x00, 0x00, 0x01)
	h = append(h, '1')
	if len(h) != 49 {
		t.Fatalf("hand-built header is %d bytes", len(h))
	}
	frame := []byte{0x01, 0x00, 0x00, 49}
	frame = append(frame, h...)
	frame = append(frame, "hello"...)

	c, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 10, Language: LanguageGo, Version: 317, Opaque: 6, Flag: 3, Remark: "ok",
		ExtFields: map[string]string{"topic": "T", "queueId": "1"}, Body: []byte("hello"),
		SerializeType: SerializeRocketMQ}
	if !sameCommand(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if !c.IsResponse() || !c.IsOneway() {
		t.Error("flag bits")
	}
	// Encoding writes the keys in sorted order: queueId before topic.
	enc, err := Encode(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if int(binary.BigEndian.Uint32(enc)) != len(frame) {
		t.Fatalf("length prefix %d, want %d", binary.BigEndian.Uint32(enc), len(frame))
	}
	again, err := Decode(enc[4:])
	if err != nil || !sameCommand(again, want) {
		t.Fatalf("re-decode: %v %+v", err, again)
	}
}

func roundTripCases() []*Command {
	return []*Command{
		{},
		{Code: SendMessage, Language: LanguageGo, Version: 317, Opaque: 1, Body: []byte{0, 1, 2}},
		{Code: -1, Language: LanguageJava, Version: Version, Opaque: -7, Flag: FlagResponse | FlagOneway,
			Remark: "bad \"quote\" \\ back\nslash\ttab \x00nul \x1f é ü 漢字 🙂"},
		{Code: 32767, Version: -32768, Opaque: 2147483647, Flag: -2147483648,
			ExtFields: map[string]string{
				"properties": "TAGS\x01TagA\x02KEYS\x01k1 k2\x02",
				"":           "empty key",
				"emptyValue": "",
				"unicode ☃":  "\u2028\u2029</script>&",
			}},
		{Code: PullMessage, Language: LanguageNodeJS, ExtFields: map[string]string{"a": "1"},
			Body: bytes.Repeat([]byte{0xDA, 0xA3, 0x20, 0xA7}, 300)},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		for i, c := range roundTripCases() {
			c.SerializeType = st
			frame, err := Encode([]byte("prefix"), c)
			if err != nil {
				t.Fatalf("type %d case %d: %v", st, i, err)
			}
			if string(frame[:6]) != "prefix" {
				t.Fatal("Encode did not append to dst")
			}
			frame = frame[6:]
			if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
				t.Fatalf("type %d case %d: length prefix %d for %d bytes", st, i, n, len(frame)-4)
			}
			if frame[4] != st {
				t.Fatalf("type byte %d", frame[4])
			}
			got, err := Decode(frame[4:])
			if err != nil {
				t.Fatalf("type %d case %d: %v", st, i, err)
			}
			if _, known := LanguageCode(c.Language); st == SerializeRocketMQ && !known {
				c.Language = LanguageOther // the binary header has no code for it
			}
			if !sameCommand(c, got) {
				t.Fatalf("type %d case %d:\n got %+v\nwant %+v", st, i, got, c)
			}
		}
	}
}

// The JSON we write must be what a standard JSON decoder (like the Go
// client's) reads, ext values as strings.
func TestEncodedJSONIsStandard(t *testing.T) {
	type goClientCommand struct {
		Code      int32             `json:"code"`
		Language  string            `json:"language"`
		Version   int16             `json:"version"`
		Opaque    int32             `json:"opaque"`
		Flag      int32             `json:"flag"`
		Remark    string            `json:"remark"`
		ExtFields map[string]string `json:"extFields"`
	}
	for i, c := range roundTripCases() {
		frame, err := Encode(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		hlen := binary.BigEndian.Uint32(frame[4:]) & 0xFFFFFF
		var g goClientCommand
		if err := json.Unmarshal(frame[8:8+hlen], &g); err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, frame[8:8+hlen])
		}
		if g.Code != c.Code || g.Language != c.Language || g.Version != c.Version || g.Opaque != c.Opaque ||
			g.Flag != c.Flag || g.Remark != c.Remark || len(g.ExtFields) != len(c.ExtFields) {
			t.Fatalf("case %d: %+v vs %+v", i, g, c)
		}
		for k, v := range c.ExtFields {
			if g.ExtFields[k] != v {
				t.Fatalf("case %d: ext %q = %q, want %q", i, k, g.ExtFields[k], v)
			}
		}
	}
}

func TestJSONDecodeLeniency(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   Command
	}{
		{"upper-case keys", `{"CODE":5,"Language":"JAVA","VERSION":1,"Opaque":2,"FLAG":1,"REMARK":"r","EXTFIELDS":{"k":"v"}}`,
			Command{Code: 5, Language: "JAVA", Version: 1, Opaque: 2, Flag: 1, Remark: "r", ExtFields: map[string]string{"k": "v"}}},
		{"unicode fold of s and k", "{\"ver\u017fion\":3,\"remar\u212a\":\"x\"}", Command{Version: 3, Remark: "x"}},
		{"escaped key", `{"\u0063ode":7}`, Command{Code: 7}},
		{"null remark and ext", `{"code":1,"remark":null,"extFields":null}`, Command{Code: 1}},
		{"absent everything", `{}`, Command{}},
		{"null ext value", `{"extFields":{"a":null}}`, Command{ExtFields: map[string]string{"a": ""}}},
		{"unknown keys skipped", `{"serializeTypeCurrentRPC":"JSON","x":[1,{"y":[true,false,null]},"s"],"code":9,"z":-1.5e+3}`,
			Command{Code: 9}},
		{"whitespace", " \t\r\n{ \"code\" : 4 , \"extFields\" : { \"a\" : \"b\" } } \n", Command{Code: 4, ExtFields: map[string]string{"a": "b"}}},
		{"int edges", `{"code":-32768,"version":32767,"opaque":-2147483648,"flag":2147483647}`,
			Command{Code: -32768, Version: 32767, Opaque: -2147483648, Flag: 2147483647}},
		{"minus zero", `{"code":-0}`, Command{}},
		{"later key wins", `{"code":1,"code":2}`, Command{Code: 2}},
		{"null keeps earlier", `{"code":1,"code":null}`, Command{Code: 1}},
		{"ext objects merge", `{"extFields":{"a":"1"},"extFields":{"b":"2"}}`, Command{ExtFields: map[string]string{"a": "1", "b": "2"}}},
		{"surrogate pair and lone surrogate", `{"remark":"\ud83d\ude00 \ud800x"}`, Command{Remark: "😀 \ufffdx"}},
		{"invalid utf-8 replaced", "{\"remark\":\"a\xffb\"}", Command{Remark: "a\ufffdb"}},
		{"unknown language kept", `{"language":"COBOL"}`, Command{Language: "COBOL"}},
		// fastjson, RocketMQ's reader, takes these; so do we.
		{"ext values of other types as their text", `{"extFields":{"queueId":3,"batch":true,"unit":false,"off":-12,"f":1.5e3,"o":{"b":"c"},"a":["b",1]}}`,
			Command{ExtFields: map[string]string{"queueId": "3", "batch": "true", "unit": "false", "off": "-12", "f": "1.5e3", "o": `{"b":"c"}`, "a": `["b",1]`}}},
		{"int fields as strings", `{"code":"10","version":" 7 ","opaque":"-3","flag":"1"}`, Command{Code: 10, Version: 7, Opaque: -3, Flag: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(jsonFrame(tt.header, nil))
			if err != nil {
				t.Fatal(err)
			}
			if !sameCommand(got, &tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, &tt.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	binHeader := func(remarkLen, extLen int32, rest ...byte) []byte {
		h := make([]byte, 13)
		h = binary.BigEndian.AppendUint32(h, uint32(remarkLen))
		if remarkLen > 0 {
			h = append(h, bytes.Repeat([]byte{'r'}, int(remarkLen))...)
		}
		h = binary.BigEndian.AppendUint32(h, uint32(extLen))
		return append(h, rest...)
	}
	binFrame := func(h []byte) []byte {
		f := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(h)))
		return append(f, h...)
	}
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty frame", nil, ErrBadFrame},
		{"truncated word", []byte{0, 0, 0}, ErrBadFrame},
		{"header length past frame", []byte{0, 0, 0, 10, '{', '}'}, ErrBadFrame},
		{"bad type byte", append([]byte{2, 0, 0, 2}, "{}"...), ErrBadFrame},
		{"type byte 0xff", append([]byte{0xff, 0, 0, 2}, "{}"...), ErrBadFrame},
		{"empty JSON header", jsonFrame("", nil), ErrBadHeader},
		{"truncated JSON", jsonFrame(`{"code":1`, nil), ErrBadHeader},
		{"JSON not an object", jsonFrame(`[1]`, nil), ErrBadHeader},
		{"JSON null", jsonFrame(`null`, nil), ErrBadHeader},
		{"trailing JSON", jsonFrame(`{}{}`, nil), ErrBadHeader},
		{"trailing comma", jsonFrame(`{"code":1,}`, nil), ErrBadHeader},
		{"single quotes", jsonFrame(`{'code':1}`, nil), ErrBadHeader},
		{"ext not an object", jsonFrame(`{"extFields":"a=b"}`, nil), ErrBadHeader},
		{"code above int32", jsonFrame(`{"code":2147483648}`, nil), ErrBadHeader},
		{"code below int32", jsonFrame(`{"code":-2147483649}`, nil), ErrBadHeader},
		{"version above int16", jsonFrame(`{"version":70000}`, nil), ErrBadHeader},
		{"opaque above int32", jsonFrame(`{"opaque":2147483648}`, nil), ErrBadHeader},
		{"code fraction", jsonFrame(`{"code":1.5}`, nil), ErrBadHeader},
		{"code exponent", jsonFrame(`{"code":1e2}`, nil), ErrBadHeader},
		{"code leading zero", jsonFrame(`{"code":01}`, nil), ErrBadHeader},
		{"code as a string that is no integer", jsonFrame(`{"code":"ten"}`, nil), ErrBadHeader},
		{"code as a string above int32", jsonFrame(`{"code":"2147483648"}`, nil), ErrBadHeader},
		{"ext value a bad literal", jsonFrame(`{"extFields":{"a":tru}}`, nil), ErrBadHeader},
		{"remark as number", jsonFrame(`{"remark":5}`, nil), ErrBadHeader},
		{"language as number", jsonFrame(`{"language":9}`, nil), ErrBadHeader},
		{"control char in string", jsonFrame("{\"remark\":\"a\x01b\"}", nil), ErrBadHeader},
		{"bad escape", jsonFrame(`{"remark":"\x41"}`, nil), ErrBadHeader},
		{"short unicode escape", jsonFrame(`{"remark":"\u12"}`, nil), ErrBadHeader},
		{"unterminated string", jsonFrame(`{"remark":"abc`, nil), ErrBadHeader},
		{"bad literal", jsonFrame(`{"x":nul}`, nil), ErrBadHeader},
		{"too deep", jsonFrame(`{"x":`+strings.Repeat("[", maxJSONDepth)+strings.Repeat("]", maxJSONDepth)+`}`, nil), ErrBadHeader},
		{"binary header too short", binFrame(make([]byte, 20)), ErrBadHeader},
		{"binary remark past header", binFrame(binHeader(0, 0)[:13]), ErrBadHeader},
		{"binary remark length too big", binFrame(append(binHeader(0, 0)[:13], 0, 0, 0, 9, 0, 0, 0, 0)), ErrBadHeader},
		{"binary ext length past header", binFrame(binHeader(0, 8, 0, 1, 'k')), ErrBadHeader},
		{"binary negative key length", binFrame(binHeader(0, 2, 0xff, 0xff)), ErrBadHeader},
		{"binary key past ext", binFrame(binHeader(0, 3, 0, 5, 'k')), ErrBadHeader},
		{"binary value length cut", binFrame(binHeader(0, 5, 0, 1, 'k', 0, 0)), ErrBadHeader},
		{"binary negative value length", binFrame(binHeader(0, 7, 0, 1, 'k', 0xff, 0xff, 0xff, 0xfe)), ErrBadHeader},
		{"binary value past ext", binFrame(binHeader(0, 8, 0, 1, 'k', 0, 0, 0, 9, 'v')), ErrBadHeader},
		{"binary key length cut", binFrame(binHeader(0, 1, 0)), ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %+v, %v; want %v", c, err, tt.want)
			}
		})
	}
}

func TestBinaryEdgeCases(t *testing.T) {
	// An unknown language byte decodes as OTHER; duplicate keys keep the
	// last value; empty ext is nil.
	h := make([]byte, 2)
	h = append(h, 200, 0, 0)
	h = append(h, make([]byte, 8)...)
	h = binary.BigEndian.AppendUint32(h, 0)
	ext := []byte{0, 1, 'k', 0, 0, 0, 1, 'a', 0, 1, 'k', 0, 0, 0, 1, 'b'}
	h = binary.BigEndian.AppendUint32(h, uint32(len(ext)))
	h = append(h, ext...)
	f := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(h)))
	c, err := Decode(append(f, h...))
	if err != nil {
		t.Fatal(err)
	}
	if c.Language != LanguageOther || c.ExtFields["k"] != "b" || len(c.ExtFields) != 1 {
		t.Fatalf("%+v", c)
	}

	// Read as RocketMQ's RocketMQSerializable reads them: a remark or ext
	// length of zero or less is none, and bytes after the ext are ignored.
	lenient := func(remarkLen, extLen int32, ext []byte, trailing ...byte) *Command {
		t.Helper()
		h := make([]byte, 13)
		h = binary.BigEndian.AppendUint32(h, uint32(remarkLen))
		h = binary.BigEndian.AppendUint32(h, uint32(extLen))
		h = append(append(h, ext...), trailing...)
		c, err := Decode(append(binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(h))), h...))
		if err != nil {
			t.Fatalf("remark length %d, ext length %d, %d trailing bytes: %v", remarkLen, extLen, len(trailing), err)
		}
		return c
	}
	if c := lenient(-1, 0, nil); c.Remark != "" || c.ExtFields != nil {
		t.Fatalf("negative remark length: %+v", c)
	}
	if c := lenient(0, -5, nil); c.ExtFields != nil {
		t.Fatalf("negative ext length: %+v", c)
	}
	if c := lenient(0, 7, []byte{0, 1, 'k', 0, 0, 0, 0}, 'x', 'y'); c.ExtFields["k"] != "" || len(c.ExtFields) != 1 {
		t.Fatalf("bytes after the ext: %+v", c)
	}
	if c := lenient(0, 0, nil, 0, 1, 'k'); c.ExtFields != nil {
		t.Fatalf("bytes after an empty ext: %+v", c)
	}

	for name, want := range map[string]byte{"JAVA": 0, "GO": 9, "NODE_JS": 13, "RUST": 12, "": 7, "COBOL": 7} {
		if got, _ := LanguageCode(name); got != want {
			t.Errorf("LanguageCode(%q) = %d, want %d", name, got, want)
		}
	}
	for code := range 256 {
		name := LanguageName(byte(code))
		if back, ok := LanguageCode(name); !ok || (code < 14 && int(back) != code) {
			t.Errorf("language %d → %q → %d", code, name, back)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	dst := []byte("keep")
	out, err := Encode(dst, &Command{SerializeType: 7})
	if !errors.Is(err, ErrBadFrame) || string(out) != "keep" {
		t.Fatalf("unknown type: %q, %v", out, err)
	}
	long := strings.Repeat("k", 1<<15)
	_, err = Encode(nil, &Command{SerializeType: SerializeRocketMQ, ExtFields: map[string]string{long: ""}})
	if !errors.Is(err, ErrBadHeader) {
		t.Fatalf("long binary key: %v", err)
	}
	_, err = Encode(nil, &Command{Remark: strings.Repeat("r", 1<<24)})
	if !errors.Is(err, ErrBadHeader) {
		t.Fatalf("16 MiB header: %v", err)
	}
	// Invalid UTF-8 cannot travel in JSON; it is replaced, not an error.
	frame, err := Encode(nil, &Command{Remark: "a\xffb"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(frame[4:])
	if err != nil || c.Remark != "a\ufffdb" {
		t.Fatalf("%v %q", err, c.Remark)
	}
}

// oneShotReader serves data and fails the test if it is read past it, so
// ReadFrame's "check the length before reading or allocating" is visible.
type oneShotReader struct {
	t    *testing.T
	data []byte
}

func (r *oneShotReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		r.t.Fatal("read past the length prefix")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadFrame(t *testing.T) {
	frame, err := Encode(nil, &Command{Code: 1, Body: []byte("body")})
	if err != nil {
		t.Fatal(err)
	}
	two := append(append([]byte{}, frame...), frame...)
	r := bytes.NewReader(two)
	buf := make([]byte, 0, 1024)
	for i := range 2 {
		got, err := ReadFrame(r, buf, 0)
		if err != nil || !bytes.Equal(got, frame[4:]) {
			t.Fatalf("frame %d: %v %q", i, err, got)
		}
		if &got[0] != &buf[:1][0] {
			t.Fatal("ReadFrame did not reuse a large enough buffer")
		}
	}
	if _, err := ReadFrame(r, nil, 0); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame[:2]), nil, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut prefix: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame[:len(frame)-1]), nil, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut body: %v", err)
	}

	tests := []struct {
		name   string
		prefix uint32
		max    int
		want   error
	}{
		{"over default", DefaultMaxFrameSize - 3, 0, ErrFrameTooLarge},
		{"over custom", 97, 100, ErrFrameTooLarge},
		{"huge", 0x7fffffff, 0, ErrFrameTooLarge},
		{"negative", 0xffffffff, 0, ErrBadFrame},
		{"below word", 3, 0, ErrBadFrame},
		{"zero", 0, 0, ErrBadFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &oneShotReader{t: t, data: binary.BigEndian.AppendUint32(nil, tt.prefix)}
			if _, err := ReadFrame(r, nil, tt.max); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	// Exactly at the limit is fine.
	at := binary.BigEndian.AppendUint32(nil, 96)
	at = append(at, make([]byte, 96)...)
	if _, err := ReadFrame(bytes.NewReader(at), nil, 100); err != nil {
		t.Fatalf("frame at the limit: %v", err)
	}
}

func TestReadFrameLargeGrows(t *testing.T) {
	body := make([]byte, 5*readChunk+123)
	for i := range body {
		body[i] = byte(i * 7)
	}
	frame, err := Encode(nil, &Command{SerializeType: SerializeRocketMQ, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadFrame(iotestHalfReader{bytes.NewReader(frame)}, nil, 0)
	if err != nil || !bytes.Equal(got, frame[4:]) {
		t.Fatalf("%v, %d bytes", err, len(got))
	}
	// A stream that ends inside a large frame.
	if _, err := ReadFrame(bytes.NewReader(frame[:len(frame)-10]), nil, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut large frame: %v", err)
	}
}

// iotestHalfReader returns at most half of what is asked, to exercise
// partial reads.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(p []byte) (int, error) {
	return h.r.Read(p[:(len(p)+1)/2])
}

func TestExtHelpers(t *testing.T) {
	ext := map[string]string{"n": "-42", "p": "+7", "big": "9223372036854775807", "bad": "4x",
		"space": " 1", "t": "TRUE", "f": "false", "odd": "yes", "i32": "2147483648"}
	if v, err := ExtInt(ext, "n"); err != nil || v != -42 {
		t.Errorf("n: %d %v", v, err)
	}
	if v, err := ExtInt(ext, "p"); err != nil || v != 7 {
		t.Errorf("p: %d %v", v, err)
	}
	if v, err := ExtInt(ext, "big"); err != nil || v != 1<<63-1 {
		t.Errorf("big: %d %v", v, err)
	}
	for _, k := range []string{"bad", "space"} {
		if _, err := ExtInt(ext, k); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %v", k, err)
		}
	}
	if _, err := ExtInt(ext, "missing"); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ExtInt32(ext, "i32"); !errors.Is(err, ErrBadHeader) {
		t.Errorf("i32 range: %v", err)
	}
	if v, err := ExtInt32(ext, "n"); err != nil || v != -42 {
		t.Errorf("ExtInt32: %d %v", v, err)
	}
	for k, want := range map[string]bool{"t": true, "f": false, "odd": false} {
		if v, err := ExtBool(ext, k); err != nil || v != want {
			t.Errorf("ExtBool %s = %v %v", k, v, err)
		}
	}
	if _, err := ExtBool(nil, "x"); !errors.Is(err, ErrMissingField) {
		t.Errorf("ExtBool missing: %v", err)
	}
	if _, err := ExtString(ext, "x"); !errors.Is(err, ErrMissingField) {
		t.Errorf("ExtString missing: %v", err)
	}
}

func TestCodeTable(t *testing.T) {
	// Numbers from Java's RequestCode
	// and ResponseCode.
	requests := map[int32]int32{
		SendMessage: 10, PullMessage: 11, QueryMessage: 12, QueryConsumerOffset: 14, UpdateConsumerOffset: 15,
		UpdateAndCreateTopic: 17, GetAllTopicConfig: 21, GetBrokerRuntimeInfo: 28, SearchOffsetByTimestamp: 29,
		GetMaxOffset: 30, GetMinOffset: 31, GetEarliestMsgStoretime: 32, ViewMessageByID: 33, HeartBeat: 34,
		UnregisterClient: 35, ConsumerSendMsgBack: 36, EndTransaction: 37, GetConsumerListByGroup: 38,
		CheckTransactionState: 39, NotifyConsumerIdsChanged: 40, LockBatchMQ: 41, UnlockBatchMQ: 42,
		RegisterBroker: 103, UnregisterBroker: 104, GetRouteInfoByTopic: 105, GetBrokerClusterInfo: 106,
		GetAllSubscriptionGroupConfig: 201, GetAllTopicListFromNameServer: 206, DeleteTopicInBroker: 215,
		DeleteTopicInNamesrv: 216, ResetConsumerClientOffset: 220, GetConsumerStatusFromClient: 221,
		GetConsumerRunningInfo: 307, ConsumeMessageDirectly: 309, SendMessageV2: 310, SendBatchMessage: 320,
		SendReplyMessage: 324, PushReplyMessageToClient: 326,
		PopMessage: 200050, AckMessage: 200051, PeekMessage: 200052, ChangeMessageInvisibleTime: 200053,
		Notification: 200054, PollingInfo: 200055, BatchAckMessage: 200151,
	}
	for got, want := range requests {
		if got != want {
			t.Errorf("request %s = %d, want %d", RequestCodeName(got), got, want)
		}
	}
	responses := map[int32]int32{
		Success: 0, SystemError: 1, SystemBusy: 2, RequestCodeNotSupported: 3, TransactionFailed: 4,
		FlushDiskTimeout: 10, SlaveNotAvailable: 11, FlushSlaveTimeout: 12, MessageIllegal: 13,
		ServiceNotAvailable: 14, VersionNotSupported: 15, NoPermission: 16, TopicNotExist: 17,
		TopicExistAlready: 18, PullNotFound: 19, PullRetryImmediately: 20, PullOffsetMoved: 21,
		QueryNotFound: 22, SubscriptionParseFailed: 23, SubscriptionNotExist: 24, SubscriptionNotLatest: 25,
		SubscriptionGroupNotExist: 26, FilterDataNotExist: 27, FilterDataNotLatest: 28, InvalidParameter: 29,
		FlowControl: 215, NotLeaderForQueue: 501, GoAway: 1500,
	}
	for got, want := range responses {
		if got != want {
			t.Errorf("response %s = %d, want %d", ResponseCodeName(got), got, want)
		}
	}
	if len(requestCodeNames) < 60 || len(responseCodeNames) < 60 {
		t.Errorf("name tables: %d requests, %d responses", len(requestCodeNames), len(responseCodeNames))
	}
	if RequestCodeName(GetRouteInfoByTopic) != "GET_ROUTEINFO_BY_TOPIC" || RequestCodeName(9999) != "9999" ||
		ResponseCodeName(PullNotFound) != "PULL_NOT_FOUND" || ResponseCodeName(-5) != "-5" {
		t.Error("code names")
	}
}

func TestCheckResponse(t *testing.T) {
	ok := &Command{Code: Success}
	if err := CheckResponse(ok); err != nil {
		t.Fatal(err)
	}
	if err := CheckResponse(&Command{Code: PullNotFound}, Success, PullNotFound); err != nil {
		t.Fatal(err)
	}
	err := CheckResponse(&Command{Code: SystemBusy, Remark: "full"})
	var ce *CodeError
	if !errors.As(err, &ce) || ce.Code != SystemBusy || !errors.Is(err, ErrBusy) {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "CODE: 2") || !strings.Contains(err.Error(), "full") {
		t.Errorf("message %q", err)
	}
	if err := CheckResponse(&Command{Code: TopicNotExist}); errors.Is(err, ErrBusy) || err == nil {
		t.Fatalf("%v", err)
	}
	if err := CheckResponse(nil); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("%v", err)
	}
}

func TestNewRequestResponse(t *testing.T) {
	req := NewRequest(HeartBeat, map[string]string{"a": "b"}, []byte("{}"))
	if req.Code != HeartBeat || req.Language != LanguageGo || req.Version != Version || req.IsResponse() ||
		req.SerializeType != SerializeJSON || req.ExtFields["a"] != "b" || string(req.Body) != "{}" {
		t.Fatalf("%+v", req)
	}
	req.Opaque = 77
	req.Flag = FlagOneway
	req.SerializeType = SerializeRocketMQ
	resp := NewResponse(req, TopicNotExist, "no route")
	if resp.Code != TopicNotExist || resp.Opaque != 77 || resp.Flag != FlagResponse || !resp.IsResponse() ||
		resp.IsOneway() || resp.Language != LanguageJava || resp.Version != 479 || resp.Remark != "no route" ||
		resp.SerializeType != SerializeRocketMQ {
		t.Fatalf("%+v", resp)
	}
	resp.SetExt("k", "v")
	if resp.ExtFields["k"] != "v" {
		t.Fatal("SetExt")
	}
	if s := resp.String(); !strings.Contains(s, "TOPIC_NOT_EXIST") || !strings.Contains(s, "opaque=77") {
		t.Errorf("String() = %s", s)
	}
}

// The POP codes exceed int16: a JSON header carries them whole, a binary
// one cannot (Java keeps only the low 16 bits), so Encode refuses them
// there, and a binary header's code is read as Java reads it, a short.
func TestWideCodes(t *testing.T) {
	for _, code := range []int32{PopMessage, AckMessage, BatchAckMessage, math.MaxInt32, math.MinInt32} {
		c := &Command{Code: code, Language: LanguageJava, Version: Version, Opaque: 7, ExtFields: map[string]string{"topic": "t"}}
		frame, err := Encode(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(frame[4:])
		if err != nil || got.Code != code {
			t.Fatalf("JSON %d: %+v %v", code, got, err)
		}
		c.SerializeType = SerializeRocketMQ
		if out, err := Encode([]byte("x"), c); !errors.Is(err, ErrBadHeader) || string(out) != "x" {
			t.Fatalf("binary %d: %q %v, want ErrBadHeader and dst unchanged", code, out, err)
		}
	}
	for _, tc := range []struct {
		wire uint16
		want int32
	}{{0x0D72, 3442}, {0x7FFF, math.MaxInt16}, {0x8000, math.MinInt16}, {0xFFFF, -1}} {
		c := &Command{Code: 1, SerializeType: SerializeRocketMQ}
		frame, err := Encode(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint16(frame[8:], tc.wire)
		got, err := Decode(frame[4:])
		if err != nil || got.Code != tc.want {
			t.Fatalf("binary code %#04x: %+v %v, want %d", tc.wire, got, err, tc.want)
		}
		if again, err := Encode(nil, got); err != nil || !bytes.Equal(again, frame) {
			t.Fatalf("binary code %#04x re-encodes to %x %v, want %x", tc.wire, again, err, frame)
		}
	}
	if RequestCodeName(PopMessage) != "POP_MESSAGE" || RequestCodeName(3442) != "3442" {
		t.Error("POP code names")
	}
}
