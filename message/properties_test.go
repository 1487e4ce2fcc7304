package message

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestEncodePropertiesDeterministic(t *testing.T) {
	p := map[string]string{
		"UNIQ_KEY": "ID",
		"TAGS":     "TagA",
		"KEYS":     "k1 k2",
		"a":        "",
		"DELAY":    "3",
	}
	want := "DELAY\x013\x02KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01ID\x02a\x01\x02"
	for range 50 { // map iteration order varies; the output must not
		if got := string(EncodeProperties(p)); got != want {
			t.Fatalf("EncodeProperties = %q, want %q", got, want)
		}
	}
	if PropertiesLen(p) != len(want) {
		t.Fatalf("PropertiesLen = %d, want %d", PropertiesLen(p), len(want))
	}
	if got := string(AppendProperties([]byte("x"), p)); got != "x"+want {
		t.Fatalf("AppendProperties = %q", got)
	}
	if got := EncodeProperties(nil); len(got) != 0 {
		t.Fatalf("nil map encodes to %q", got)
	}

	// More than 16 keys takes the heap path for sorting; still sorted.
	big := map[string]string{}
	for i := range 40 {
		big[string(rune('A'+i))] = "v"
	}
	enc := string(EncodeProperties(big))
	items := strings.Split(strings.TrimSuffix(enc, "\x02"), "\x02")
	for i := 1; i < len(items); i++ {
		if items[i-1] >= items[i] {
			t.Fatalf("not sorted at %d: %q >= %q", i, items[i-1], items[i])
		}
	}
}

func TestPropertiesRoundTrip(t *testing.T) {
	tests := []map[string]string{
		{},
		{"TAGS": "TagA"},
		{"KEYS": "k1 k2", "UNIQ_KEY": "C0A8", "中文": "值", "empty": ""},
		{"JSON": `{"a":[1,2]}`, "sp ace": " v ", "=": "=="},
	}
	for _, p := range tests {
		enc := EncodeProperties(p)
		if err := CheckEncodedProperties(enc); err != nil {
			t.Fatalf("CheckEncodedProperties(%q): %v", enc, err)
		}
		got, err := DecodeProperties(enc)
		if err != nil {
			t.Fatalf("DecodeProperties(%q): %v", enc, err)
		}
		if !maps.Equal(got, p) {
			t.Fatalf("round trip %v -> %q -> %v", p, enc, got)
		}
		for k, v := range p {
			fv, ok := FindProperty(enc, k)
			if !ok || string(fv) != v {
				t.Fatalf("FindProperty(%q) = %q, %v", k, fv, ok)
			}
		}
		if _, ok := FindProperty(enc, "absent"); ok {
			t.Fatalf("found an absent property")
		}
	}
}

func TestDecodePropertiesSeparators(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty input", "", map[string]string{}},
		{"one item", "A\x011\x02", map[string]string{"A": "1"}},
		{"empty value", "A\x01\x02", map[string]string{"A": ""}},
		{"two items", "A\x011\x02B\x012\x02", map[string]string{"A": "1", "B": "2"}},
		{"unsorted input", "B\x012\x02A\x011\x02", map[string]string{"A": "1", "B": "2"}},
		{"duplicate keeps last", "A\x011\x02A\x012\x02", map[string]string{"A": "2"}},
		{"JSON header text", "TAGS\x01TagA\x02KEYS\x01k1 k2\x02", map[string]string{"TAGS": "TagA", "KEYS": "k1 k2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeProperties([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if v, ok := FindProperty([]byte("A\x011\x02A\x012\x02"), "A"); !ok || string(v) != "2" {
		t.Fatalf("FindProperty duplicate = %q", v)
	}
}

func TestDecodePropertiesBad(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		detail string
	}{
		{"no separators", "abc", "byte 0 is not terminated"},
		{"missing terminator", "A\x011", "byte 0 is not terminated"},
		{"trailing bytes", "A\x011\x02B\x012", "byte 4 is not terminated"},
		{"missing name/value separator", "A1\x02", "byte 0 has no \\x01"},
		{"empty item", "\x02", "byte 0 has no \\x01"},
		{"empty item in the middle", "A\x011\x02\x02", "byte 4 has no \\x01"},
		{"empty name", "\x011\x02", "byte 0 has an empty name"},
		{"two name/value separators", "A\x011\x012\x02", "second \\x01 at byte 3"},
		{"only a name/value separator", "\x01", "not terminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeProperties([]byte(tc.in))
			if !errors.Is(err, ErrBadProperties) {
				t.Fatalf("err = %v, want ErrBadProperties", err)
			}
			if m != nil {
				t.Fatalf("got a map with the error: %v", m)
			}
			if !strings.Contains(err.Error(), tc.detail) || !strings.HasPrefix(err.Error(), "message: ") {
				t.Fatalf("error %q should start with the package prefix and mention %q", err, tc.detail)
			}
			if err := CheckEncodedProperties([]byte(tc.in)); !errors.Is(err, ErrBadProperties) {
				t.Fatalf("CheckEncodedProperties err = %v", err)
			}
		})
	}
}

func TestValidateProperties(t *testing.T) {
	ok := []map[string]string{nil, {}, {"A": ""}, {"A": "b c"}}
	for _, p := range ok {
		if err := ValidateProperties(p); err != nil {
			t.Fatalf("ValidateProperties(%v) = %v", p, err)
		}
	}
	bad := []map[string]string{{"": "x"}, {"A\x02": "x"}, {"A": "\x01"}, {"B": "ok", "A": "x\x02"}}
	for _, p := range bad {
		if err := ValidateProperties(p); !errors.Is(err, ErrBadProperties) {
			t.Fatalf("ValidateProperties(%q) = %v", p, err)
		}
	}
	// The smallest bad name is reported, whatever the map order.
	p := map[string]string{"Z": "\x01", "B": "\x02", "M": "\x01"}
	for range 20 {
		if err := ValidateProperties(p); !strings.Contains(err.Error(), `"B"`) {
			t.Fatalf("error %q should name B", err)
		}
	}
}

// EncodedProperties returns a recorded encoding only while the map it
// was recorded for is unchanged by the setters or in size.
func TestEncodedProperties(t *testing.T) {
	m := Message{Properties: map[string]string{"A": "1"}}
	m.SetEncodedProperties([]byte("recorded"))
	if got, err := m.EncodedProperties(); err != nil || string(got) != "recorded" {
		t.Fatalf("recorded: %q, %v", got, err)
	}
	for name, change := range map[string]func(*Message){
		"SetProperty":   func(m *Message) { m.SetProperty("B", "2") },
		"ClearProperty": func(m *Message) { m.ClearProperty("A") },
		"map size":      func(m *Message) { m.Properties["C"] = "3" },
	} {
		c := Message{Properties: map[string]string{"A": "1"}}
		c.SetEncodedProperties([]byte("recorded"))
		change(&c)
		got, err := c.EncodedProperties()
		if err != nil || string(got) != string(EncodeProperties(c.Properties)) {
			t.Errorf("after %s: %q, %v; want the map's encoding", name, got, err)
		}
	}
	bad := Message{Properties: map[string]string{"A\x01": "1"}}
	if _, err := bad.EncodedProperties(); !errors.Is(err, ErrBadProperties) {
		t.Fatalf("invalid map: %v, want ErrBadProperties", err)
	}
}
