package routing

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// FuzzDecodeRegisterBody feeds arbitrary REGISTER_BROKER bodies to the
// decoder: it must never panic, and what it accepts must survive a round
// trip through Encode in the same form.
func FuzzDecodeRegisterBody(f *testing.F) {
	f.Add([]byte(javaBody), false)
	f.Add([]byte(`{}`), false)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":1}}}}`), false)
	f.Add([]byte(`null`), false)
	f.Add([]byte{}, false)
	f.Add(javaCompressed(f, `{"counter":2,"stateVersion":5,"timestamp":7}`,
		[]string{"A 4 4 6 SINGLE_TAG {}", "B 2 1 6 MULTI_TAG "}, `[]`, []string{`{}`}, nil), true)
	f.Add(javaCompressed(f, `{}`, nil, `[]`, nil, nil), true)
	f.Add(deflate(f, []byte{0, 0, 0, 2, '{', '}', 0x7f, 0xff, 0xff, 0xff}), true)
	f.Add([]byte("x\x9c\x03\x00\x00\x00\x00\x01"), true)
	for _, compressed := range []bool{false, true} {
		b := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigWrapper{
			DataVersion:      DataVersion{StateVersion: 1, Timestamp: 2, Counter: 3},
			TopicConfigTable: topicMap(topic("A", 4), topic("TBW102", 8)),
		}}
		raw, err := b.Encode(compressed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, compressed)
	}

	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		b, err := decodeRegisterBody(data, compressed, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
			if name == "" || tc.TopicName != name || checkTopic(tc) != nil {
				t.Fatalf("decoder accepted topic %q: %+v", name, tc)
			}
		}
		enc, err := b.Encode(compressed)
		if err != nil {
			// Only the compressed form has names it cannot carry.
			if compressed && errors.Is(err, ErrBadBody) {
				return
			}
			t.Fatalf("encode what was decoded: %v", err)
		}
		b2, err := DecodeRegisterBody(enc, compressed)
		if err != nil {
			t.Fatalf("decode what was encoded: %v\n%q", err, enc)
		}
		enc2, err := b2.Encode(compressed)
		if err != nil {
			t.Fatal(err)
		}
		if !compressed && !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the body:\n%s\n%s", enc, enc2)
		}
		if compressed && !reflect.DeepEqual(normalized(b), normalized(b2)) {
			t.Fatalf("round trip changed the body:\n%+v\n%+v", b, b2)
		}
	})
}

// normalized keeps what the compressed form carries.
func normalized(b *RegisterBrokerBody) map[string]TopicConfig {
	out := make(map[string]TopicConfig)
	for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		out[name] = TopicConfig{TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicFilterType: tc.TopicFilterType}
	}
	return out
}

// FuzzParseTopicText fuzzes the compressed form's topic text, and checks
// that what it parses formats back to an equal topic.
func FuzzParseTopicText(f *testing.F) {
	for _, s := range []string{"A 4 4 6 SINGLE_TAG {}", "B 2 1 6 MULTI_TAG ", "C 1 1 2 SINGLE_TAG {not json",
		"D 8 8 6 SINGLE_TAG", "E -1 1 6 SINGLE_TAG", "F 1 1 6", "", "G  1 1 6 SINGLE_TAG", `H 1 1 6 SINGLE_TAG {"a":"b c"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tc, err := parseTopicText(s)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		text := fmt.Sprintf("%s %d %d %d %s ", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicFilterType)
		back, err := parseTopicText(text)
		if err != nil {
			t.Fatalf("reparse %q: %v", text, err)
		}
		tc.Attributes = nil
		if !reflect.DeepEqual(back, tc) {
			t.Fatalf("round trip %q: %+v != %+v", s, back, tc)
		}
	})
}

// FuzzRegister drives the whole REGISTER_BROKER path short of the network
// (ext fields, checksum, body, fencing) with hostile values: no panic, an
// error of this package or success, and a table whose routes stay
// consistent with its members.
func FuzzRegister(f *testing.F) {
	good, err := RegisterCommand(brokerReq(0, 0, 3, topic("T", 4)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("0", addr(0), "0", "", "false", good.Body)
	f.Add("1", addr(1), good.ExtFields["bodyCrc32"], "30000", "false", good.Body)
	f.Add("-1", "nowhere", "x", "-1", "true", []byte("{"))
	f.Add("9223372036854775807", "[::1]:1", "0", "86400001", "TRUE", javaCompressed(f, `{}`, []string{"A 1 1 6 SINGLE_TAG"}, `[]`, nil, nil))
	f.Fuzz(func(t *testing.T, brokerID, brokerAddr, crc, timeout, compressed string, body []byte) {
		s, err := NewServer(Config{Clock: NewManualClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{
			"clusterName": "c", "brokerName": "b", "haServerAddr": "",
			"brokerId": brokerID, "brokerAddr": brokerAddr, "bodyCrc32": crc,
			"compressed": compressed,
		}
		if timeout != "" {
			ext["heartbeatTimeoutMillis"] = timeout
		}
		// A leader at term 3 is there first, so fencing is exercised too.
		if _, err := s.table.Register(reg(0, 0, 3, topic("T", 4))); err != nil {
			t.Fatal(err)
		}
		_, err = s.register(ext, body, fakeConn(2))
		if err != nil && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrBadBody) &&
			!errors.Is(err, ErrBodyCRC) && !errors.Is(err, ErrStaleTerm) {
			t.Fatalf("unexpected error class: %v", err)
		}
		tb := s.Table()
		for _, name := range tb.Topics() {
			r, ok := tb.Route(name)
			if !ok || len(r.QueueDatas) != len(r.BrokerDatas) || len(r.BrokerDatas) == 0 {
				t.Fatalf("topic %q listed without a consistent route: %+v", name, r)
			}
			for _, bd := range r.BrokerDatas {
				if len(bd.BrokerAddrs) == 0 {
					t.Fatalf("topic %q routed to an empty group", name)
				}
			}
		}
		for _, m := range tb.Members() {
			if m.BrokerID < 0 || checkAddr(m.Addr) != nil {
				t.Fatalf("member registered with id %d at %q", m.BrokerID, m.Addr)
			}
		}
		ctx := ctxGuard(t)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
