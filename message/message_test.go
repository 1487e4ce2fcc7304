package message

import (
	"net/netip"
	"slices"
	"testing"
)

func TestMessageAccessors(t *testing.T) {
	var m Message
	if m.Property("X") != "" || m.Tags() != "" || m.Keys() != nil || m.UniqKey() != "" || m.DelayLevel() != 0 {
		t.Fatal("zero Message should have no properties")
	}
	m.ClearProperty("X") // no-op on a nil map
	m.SetProperty(PropertyTags, "TagA")
	m.SetProperty(PropertyKeys, "  k1 k2   k3 ")
	m.SetProperty(PropertyUniqKey, "ID")
	if m.Tags() != "TagA" || m.UniqKey() != "ID" || m.Property(PropertyTags) != "TagA" {
		t.Fatalf("accessors: %v", m.Properties)
	}
	if got := m.Keys(); !slices.Equal(got, []string{"k1", "k2", "k3"}) {
		t.Fatalf("Keys = %q", got)
	}
	m.ClearProperty(PropertyTags)
	if m.Tags() != "" {
		t.Fatal("ClearProperty did not remove TAGS")
	}
}

func TestSplitKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"a", []string{"a"}},
		{"a b", []string{"a", "b"}},
		{" a  b ", []string{"a", "b"}},
		{"a\tb", []string{"a\tb"}}, // only spaces separate keys
	}
	for _, tc := range tests {
		if got := SplitKeys(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitKeys(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDelayLevel(t *testing.T) {
	tests := []struct {
		val  string
		set  bool
		want int
	}{
		{"", false, 0},
		{"3", true, 3},
		{"18", true, 18},
		{"40", true, 40},
		{"0", true, 0},
		{"-1", true, 0},
		{"x", true, 0},
		{"", true, 0},
		{" 3", true, 0},
		{"99999999999999999999", true, 0},
	}
	for _, tc := range tests {
		var m Message
		if tc.set {
			m.SetProperty(PropertyDelayLevel, tc.val)
		}
		if got := m.DelayLevel(); got != tc.want {
			t.Errorf("DelayLevel(%q) = %d, want %d", tc.val, got, tc.want)
		}
	}
}

func TestExtMsgID(t *testing.T) {
	e := &Ext{StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), PhysicalOffset: 0x206}
	if got := e.MsgID(); got != "7F00000100002A9F0000000000000206" {
		t.Fatalf("MsgID without UNIQ_KEY = %s", got)
	}
	e.SetProperty(PropertyUniqKey, "ABC")
	if got := e.MsgID(); got != "ABC" {
		t.Fatalf("MsgID = %s", got)
	}
	if got := e.OffsetMsgID(); got != "7F00000100002A9F0000000000000206" {
		t.Fatalf("OffsetMsgID = %s", got)
	}
}

func TestTransactionType(t *testing.T) {
	tests := []struct{ flag, want int32 }{
		{0, 0},
		{SysFlagCompressed | SysFlagBornHostV6, 0},
		{SysFlagTransactionPrepared | SysFlagCompressed, SysFlagTransactionPrepared},
		{SysFlagTransactionCommit, SysFlagTransactionCommit},
		{SysFlagTransactionRollback | SysFlagStoreHostV6, SysFlagTransactionRollback},
	}
	for _, tc := range tests {
		if got := TransactionType(tc.flag); got != tc.want {
			t.Errorf("TransactionType(%#x) = %#x, want %#x", tc.flag, got, tc.want)
		}
	}
}
