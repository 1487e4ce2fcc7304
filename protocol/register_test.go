package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// javaBody is a REGISTER_BROKER body as a Java 5 broker writes it
// (fastjson, with fields the name server does not read).
const javaBody = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":7,"timestamp":1700000000000},` +
	`"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicQueueMappingInfoMap":{},` +
	`"topicConfigTable":{"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},` +
	`"T":{"order":true,"perm":6,"readQueueNums":4,"topicFilterType":"MULTI_TAG","topicName":"T","topicSysFlag":1,"writeQueueNums":2}}}}`

func TestDecodeRegisterBodyJava(t *testing.T) {
	b, err := DecodeRegisterBody([]byte(javaBody), false)
	if err != nil {
		t.Fatal(err)
	}
	w := b.TopicConfigSerializeWrapper
	if w.DataVersion != (DataVersion{StateVersion: 7, Timestamp: 1700000000000, Counter: 3}) {
		t.Fatalf("dataVersion %+v", w.DataVersion)
	}
	want := map[string]TopicConfig{
		"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: FilterSingleTag, Attributes: map[string]string{}},
		"T":      {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, TopicFilterType: FilterMultiTag, TopicSysFlag: 1, Order: true},
	}
	if !reflect.DeepEqual(w.TopicConfigTable, want) {
		t.Fatalf("topics\n got %+v\nwant %+v", w.TopicConfigTable, want)
	}
}

func TestRegisterBodyRoundTrip(t *testing.T) {
	in := &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigWrapper{
			DataVersion: DataVersion{StateVersion: 3, Timestamp: 99, Counter: 4},
			TopicConfigTable: topicMap(
				topic("A", 4),
				TopicConfig{TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: FilterSingleTag,
					Attributes: map[string]string{"+message.type": "NORMAL"}},
			),
		},
		FilterServerList: []string{},
	}
	for _, compressed := range []bool{false, true} {
		raw, err := in.Encode(compressed)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeRegisterBody(raw, compressed)
		if err != nil {
			t.Fatalf("compressed=%v: %v", compressed, err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("compressed=%v:\n got %+v\nwant %+v", compressed, out, in)
		}
	}
}

// javaCompressed builds a compressed body the way Java's
// RegisterBrokerBody.encode(true) does, from raw topic texts.
func javaCompressed(t testing.TB, dv string, topics []string, filters string, mappings []string, trailer []byte) []byte {
	t.Helper()
	var raw bytes.Buffer
	chunk := func(s string) {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	chunk(dv)
	_ = binary.Write(&raw, binary.BigEndian, int32(len(topics)))
	for _, tp := range topics {
		chunk(tp)
	}
	chunk(filters)
	if mappings != nil {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(mappings)))
		for _, m := range mappings {
			chunk(m)
		}
	}
	raw.Write(trailer)
	return deflate(t, raw.Bytes())
}

func deflate(t testing.TB, p []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	if _, err := zw.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestDecodeCompressedJava(t *testing.T) {
	body := javaCompressed(t, `{"counter":2,"stateVersion":5,"timestamp":7}`,
		[]string{"A 4 4 6 SINGLE_TAG {}", "B 2 1 6 MULTI_TAG ", "C 1 1 2 SINGLE_TAG {not json", "D 8 8 6 SINGLE_TAG"},
		`[]`, []string{`{"topic":"A"}`}, nil)
	b, err := DecodeRegisterBody(body, true)
	if err != nil {
		t.Fatal(err)
	}
	w := b.TopicConfigSerializeWrapper
	if w.DataVersion != (DataVersion{StateVersion: 5, Timestamp: 7, Counter: 2}) {
		t.Fatalf("dataVersion %+v", w.DataVersion)
	}
	want := map[string]TopicConfig{
		"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag, Attributes: map[string]string{}},
		"B": {TopicName: "B", ReadQueueNums: 2, WriteQueueNums: 1, Perm: 6, TopicFilterType: FilterMultiTag},
		"C": {TopicName: "C", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 2, TopicFilterType: FilterSingleTag},
		"D": {TopicName: "D", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: FilterSingleTag},
	}
	if !maps.EqualFunc(w.TopicConfigTable, want, func(a, b TopicConfig) bool { return reflect.DeepEqual(a, b) }) {
		t.Fatalf("topics\n got %+v\nwant %+v", w.TopicConfigTable, want)
	}
	// Without the mapping section (older brokers) the body is complete too.
	if _, err := DecodeRegisterBody(javaCompressed(t, `{}`, nil, `[]`, nil, nil), true); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRegisterBodyRejects(t *testing.T) {
	const limit = 1 << 20
	big := make([]byte, limit+1)
	tests := []struct {
		name       string
		body       []byte
		compressed bool
	}{
		{"json null", []byte("null"), false},
		{"json array", []byte("[]"), false},
		{"json garbage", []byte("{\"topicConfigSerializeWrapper\":"), false},
		{"json trailing data", []byte("{} {}"), false},
		{"json queue count as string", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":"4"}}}}`), false},
		{"json queue count overflow", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4294967296}}}}`), false},
		{"json negative queues", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","writeQueueNums":-1}}}}`), false},
		{"json key mismatch", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"U"}}}}`), false},
		{"json empty topic name", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"":{}}}}`), false},
		{"not zlib", []byte("plain text"), true},
		{"truncated stream", deflate(t, []byte{0, 0})[:5], true},
		{"empty stream", deflate(t, nil), true},
		{"short data version length", deflate(t, []byte{0, 0}), true},
		{"chunk past end", deflate(t, []byte{0, 0, 0, 9, '{', '}'}), true},
		{"negative chunk", deflate(t, []byte{0xff, 0xff, 0xff, 0xff}), true},
		{"negative topic count", deflate(t, []byte{0, 0, 0, 2, '{', '}', 0xff, 0xff, 0xff, 0xff}), true},
		{"topic count past data", deflate(t, []byte{0, 0, 0, 2, '{', '}', 0x7f, 0xff, 0xff, 0xff}), true},
		{"bad data version", javaCompressed(t, `nope`, nil, `[]`, nil, nil), true},
		{"topic with 4 fields", javaCompressed(t, `{}`, []string{"A 1 1 6"}, `[]`, nil, nil), true},
		{"topic bad number", javaCompressed(t, `{}`, []string{"A x 1 6 SINGLE_TAG"}, `[]`, nil, nil), true},
		{"topic bad filter", javaCompressed(t, `{}`, []string{"A 1 1 6 NO_TAG"}, `[]`, nil, nil), true},
		{"topic queue overflow", javaCompressed(t, `{}`, []string{"A 99999999999 1 6 SINGLE_TAG"}, `[]`, nil, nil), true},
		{"topic too many queues", javaCompressed(t, `{}`, []string{"A 70000 1 6 SINGLE_TAG"}, `[]`, nil, nil), true},
		{"missing filter list", deflate(t, []byte{0, 0, 0, 2, '{', '}', 0, 0, 0, 0}), true},
		{"partial mapping count", javaCompressed(t, `{}`, nil, `[]`, nil, []byte{0, 0}), true},
		{"negative mapping count", javaCompressed(t, `{}`, nil, `[]`, nil, []byte{0xff, 0, 0, 0}), true},
		{"mapping past end", javaCompressed(t, `{}`, nil, `[]`, nil, []byte{0, 0, 0, 1, 0, 0, 0, 5}), true},
		{"inflation bomb", deflate(t, big), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRegisterBody(tc.body, tc.compressed, limit)
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v, want ErrBadBody", err)
			}
		})
	}
}

func TestDecodeRegisterBodyEmpty(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		b, err := DecodeRegisterBody(nil, compressed)
		if err != nil {
			t.Fatal(err)
		}
		if b.TopicConfigSerializeWrapper.TopicConfigTable == nil || len(b.TopicConfigSerializeWrapper.TopicConfigTable) != 0 {
			t.Fatalf("empty body: %+v", b)
		}
	}
}

func TestEncodeCompressedRejectsSpaceInName(t *testing.T) {
	b := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigWrapper{TopicConfigTable: topicMap(topic("a b", 1))}}
	if _, err := b.Encode(true); !errors.Is(err, ErrBadBody) {
		t.Fatalf("error %v", err)
	}
	if raw, err := b.Encode(false); err != nil || !strings.Contains(string(raw), `"a b"`) {
		t.Fatalf("json: %s %v", raw, err)
	}
}

func TestDecodeCompressedAtLimit(t *testing.T) {
	// A body that inflates to exactly the limit is read in full.
	body := javaCompressed(t, `{}`, nil, `[]`, nil, nil)
	raw := 4 + 2 + 4 + 4 + 2 // dataVersion chunk, topic count, filter chunk
	if _, err := decodeRegisterBody(body, true, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeRegisterBody(body, true, raw-1); !errors.Is(err, ErrBadBody) {
		t.Fatalf("one byte over the limit: %v", err)
	}
}

func topic(name string, queues int32) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: FilterSingleTag}
}

// topicMap keys topics by name.
func topicMap(tcs ...TopicConfig) map[string]TopicConfig {
	m := make(map[string]TopicConfig, len(tcs))
	for _, tc := range tcs {
		m[tc.TopicName] = tc
	}
	return m
}
