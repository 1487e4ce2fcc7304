package remoting

import (
	"maps"
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
