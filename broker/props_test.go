package broker

import (
	"maps"
	"net/netip"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// decodeProperties agrees with message.DecodeProperties on every input:
// the same map, or an error where it has one (the same error).
func FuzzDecodeProperties(f *testing.F) {
	for _, s := range []string{
		"",
		"TAGS\x01a\x02",
		"UNIQ_KEY\x01AC11\x02KEYS\x01k1 k2\x02WAIT\x01true\x02",
		"A\x01\x02A\x012\x02", // a repeated name keeps its last value
		"A\x011",              // not terminated
		"\x01v\x02",           // empty name
		"A\x02",               // no \x01
		"A\x01b\x01c\x02",     // a second \x01
		"\x02",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodeProperties(s)
		want, werr := message.DecodeProperties([]byte(s))
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, DecodeProperties' %v", s, err, werr)
		}
		if err != nil {
			if err.Error() != werr.Error() {
				t.Fatalf("%q: error %v, DecodeProperties' %v", s, err, werr)
			}
			return
		}
		if !maps.Equal(got, want) || got == nil {
			t.Fatalf("%q: %v, DecodeProperties' %v", s, got, want)
		}
	})
}

// Properties that need no rewrite reach the proposal as the producer sent
// them, and the broker adds only the cluster's name.
func TestSendPropertiesKept(t *testing.T) {
	b := &Broker{cfg: Config{ClusterName: "C1"}}
	sent := message.EncodeProperties(map[string]string{"TAGS": "t", "UNIQ_KEY": "AC11", "KEYS": "a b", "x": ""})
	props, err := decodeProperties(string(sent))
	if err != nil {
		t.Fatal(err)
	}
	m := b.newExt(&sendHeader{}, "T", 0, netip.AddrPort{}, 0, nil, props)
	want := map[string]string{"TAGS": "t", "UNIQ_KEY": "AC11", "KEYS": "a b", "x": "", message.PropertyCluster: "C1"}
	if !maps.Equal(m.Properties, want) {
		t.Fatalf("properties %v, want %v", m.Properties, want)
	}
}

// withProperty, when it answers, gives exactly what encoding the decoded
// map with the property set gives; and it answers for every map encoding
// that lacks the name.
func FuzzWithProperty(f *testing.F) {
	for _, c := range [][3]string{
		{"", message.PropertyCluster, "C1"},
		{"KEYS\x01a b\x02TAGS\x01t\x02UNIQ_KEY\x01AC11\x02", message.PropertyCluster, "C1"},
		{"A\x011\x02", message.PropertyCluster, "C1"},
		{"Z\x011\x02", message.PropertyCluster, ""},
		{"CLUSTER\x01x\x02", message.PropertyCluster, "C1"},
		{"B\x011\x02A\x012\x02", message.PropertyCluster, "C1"}, // not ascending
		{"A\x011\x02A\x012\x02", "B", "C1"},                     // a repeated name
		{"A\x011\x02", "B", "x\x02"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, s, name, value string) {
		props, err := decodeProperties(s)
		if err != nil {
			return
		}
		enc, ok := withProperty(s, name, value)
		want := maps.Clone(props)
		want[name] = value
		if ok {
			if got := string(enc); got != string(message.EncodeProperties(want)) {
				t.Fatalf("withProperty(%q, %q, %q) = %q, encoding the map gives %q", s, name, value, got, message.EncodeProperties(want))
			}
			return
		}
		_, had := props[name]
		if !had && message.ValidateProperties(want) == nil && s == string(message.EncodeProperties(props)) {
			t.Fatalf("withProperty(%q, %q, %q) refused a map's own encoding", s, name, value)
		}
	})
}
