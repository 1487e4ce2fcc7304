package remoting

import (
	"maps"
	"slices"
	"testing"
)

// TestExtListEncodesAsMap checks that a command built with ExtList encodes
// to a frame that decodes to the same command as one built with the map of
// the same fields, in both header types, and that Ext and ExtMap read the
// list.
func TestExtListEncodesAsMap(t *testing.T) {
	list := []ExtField{{"topic", "T"}, {"queueId", "3"}, {"properties", "UNIQ_KEY\x01A\x02"}, {"a\"b", "ü\\"}, {"empty", ""}}
	m := map[string]string{}
	for _, f := range list {
		m[f.Key] = f.Value
	}
	for _, typ := range []byte{SerializeJSON, SerializeRocketMQ} {
		byList := &Command{Code: SendMessage, Language: LanguageGo, Version: Version, Opaque: 9, ExtList: list, Body: []byte("b"), SerializeType: typ}
		byMap := *byList
		byMap.ExtList, byMap.ExtFields = nil, m
		fl, err := Encode(nil, byList)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := Encode(nil, &byMap)
		if err != nil {
			t.Fatal(err)
		}
		if len(fl) != len(fm) {
			t.Fatalf("type %d: %d-byte frame from the list, %d from the map", typ, len(fl), len(fm))
		}
		dl, err := Decode(fl[4:])
		if err != nil {
			t.Fatal(err)
		}
		dm, err := Decode(fm[4:])
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(dl.ExtFields, dm.ExtFields) || !maps.Equal(dl.ExtFields, m) || dl.String() != dm.String() {
			t.Fatalf("type %d: list decodes to %v, map to %v", typ, dl, dm)
		}
	}
	c := &Command{ExtList: list}
	if v, ok := c.Ext("queueId"); !ok || v != "3" {
		t.Fatalf("Ext(queueId) = %q, %v", v, ok)
	}
	if _, ok := c.Ext("missing"); ok {
		t.Fatal("Ext found a missing key")
	}
	if !maps.Equal(c.ExtMap(), m) {
		t.Fatalf("ExtMap %v, want %v", c.ExtMap(), m)
	}
	if (&Command{}).ExtMap() != nil {
		t.Fatal("ExtMap of no fields is not nil")
	}
}

// FuzzDecodeListResponse: a connection decodes a response's fields into a
// list; for any frame that list holds what Decode's map holds (the last
// value of a repeated key), both decoders fail alike, and everything else
// is the same.
func FuzzDecodeListResponse(f *testing.F) {
	for _, c := range []*Command{
		{Code: Success, Flag: FlagResponse, ExtFields: map[string]string{"msgId": "A", "queueId": "1", "queueOffset": "7"}},
		{Code: Success, Flag: FlagResponse, ExtFields: map[string]string{"k": "v"}, SerializeType: SerializeRocketMQ, Body: []byte("b")},
		{Code: SystemError, Flag: FlagResponse, Remark: "r"},
		{Code: SendMessage, ExtFields: map[string]string{"a": "1"}},
	} {
		frame, err := Encode(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[4:])
	}
	f.Add([]byte("\x00\x00\x00\x3c{\"flag\":1,\"extFields\":{\"a\":\"1\",\"a\":\"2\"},\"extFields\":{\"b\":3}}"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		byMap, errMap := Decode(frame)
		byList, errList := decodeFrame(frame, DefaultHeaderLimits, true, nil)
		checkListed(t, byMap, errMap, byList, errList, (*Command).IsResponse)
	})
}

// FuzzDecodeListRequest: a server's connection decodes the fields of a
// request of ServerConfig.ListCodes into a list (the sends); for any frame
// that list holds what Decode's map holds, both decoders fail alike, and
// everything else is the same. Other requests keep their map.
func FuzzDecodeListRequest(f *testing.F) {
	for _, c := range []*Command{
		{Code: SendMessageV2, ExtFields: map[string]string{"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0",
			"g": "1700000000000", "h": "0", "i": "UNIQ_KEY\u0001AC11\u0002", "j": "0", "k": "false", "l": "0", "m": "false", "n": "broker-a"}},
		{Code: SendMessage, ExtFields: map[string]string{"topic": "T", "queueId": "2"}, SerializeType: SerializeRocketMQ, Body: []byte("b")},
		{Code: SendBatchMessage, ExtFields: map[string]string{"k01": "1", "k02": "2", "k03": "3", "k04": "4", "k05": "5", "k06": "6",
			"k07": "7", "k08": "8", "k09": "9", "k10": "10", "k11": "11", "k12": "12", "k13": "13", "k14": "14", "k15": "15", "k16": "16", "k17": "17"}},
		{Code: PullMessage, ExtFields: map[string]string{"a": "1"}},
		{Code: Success, Flag: FlagResponse, ExtFields: map[string]string{"msgId": "A"}},
	} {
		frame, err := Encode(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[4:])
	}
	f.Add([]byte("\x00\x00\x00\x3e{\"code\":310,\"extFields\":{\"a\":\"1\",\"a\":\"2\"},\"extFields\":{\"b\":3}}"))
	codes := []int32{SendMessage, SendMessageV2, SendBatchMessage}
	f.Fuzz(func(t *testing.T, frame []byte) {
		byMap, errMap := Decode(frame)
		byList, errList := decodeFrame(frame, DefaultHeaderLimits, false, codes)
		checkListed(t, byMap, errMap, byList, errList, func(c *Command) bool {
			return !c.IsResponse() && slices.Contains(codes, c.Code)
		})
	})
}

// checkListed compares a frame's Decode (byMap, errMap) with its decode
// into lists where listed says so (byList, errList).
func checkListed(t *testing.T, byMap *Command, errMap error, byList *Command, errList error, listed func(*Command) bool) {
	t.Helper()
	if (errMap == nil) != (errList == nil) {
		t.Fatalf("errors differ: map %v, list %v", errMap, errList)
	}
	if errMap != nil {
		if errMap.Error() != errList.Error() {
			t.Fatalf("errors differ: map %v, list %v", errMap, errList)
		}
		return
	}
	if !listed(byList) {
		if byList.ExtList != nil || !sameCommand(byMap, byList) {
			t.Fatalf("decoded differently: %v, %v", byMap, byList)
		}
		return
	}
	if byList.ExtFields != nil {
		t.Fatalf("listed fields in a map: %v", byList.ExtFields)
	}
	asMap := *byList
	asMap.ExtFields, asMap.ExtList = byList.ExtMap(), nil
	if !sameCommand(byMap, &asMap) {
		t.Fatalf("map decode %v, list decode %v", byMap, byList)
	}
	for k, v := range byMap.ExtFields {
		if got, ok := byList.Ext(k); !ok || got != v {
			t.Fatalf("Ext(%q) = %q, %v; map %q", k, got, ok, v)
		}
	}
}
