package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	g120 := strings.Repeat("g", MaxGroupLength)
	for _, tt := range []struct {
		name         string
		topic, group bool // valid as a topic, as a group
	}{
		{"T", true, true},
		{"a-b_c%d|e09", true, true},
		{g120, true, true},
		{g120 + "x", true, false}, // its %RETRY% topic would be 128 bytes
		{strings.Repeat("t", MaxTopicLength), true, false},
		{strings.Repeat("t", MaxTopicLength+1), false, false},
		{strings.Repeat("g", 255), false, false},
		{"", false, false},
		{"a b", false, false},
		{"../x", false, false},
		{"tópico", false, false},
		{"a\x00", false, false},
	} {
		if err := ValidateTopic(tt.name); (err == nil) != tt.topic || err != nil && !errors.Is(err, ErrBadName) {
			t.Errorf("ValidateTopic(%.20q…%d bytes) = %v", tt.name, len(tt.name), err)
		}
		if err := ValidateGroup(tt.name); (err == nil) != tt.group || err != nil && !errors.Is(err, ErrBadName) {
			t.Errorf("ValidateGroup(%.20q…%d bytes) = %v", tt.name, len(tt.name), err)
		}
		if ValidateGroup(tt.name) == nil {
			for _, derived := range []string{RetryTopic(tt.name), DLQTopic(tt.name)} {
				if err := ValidateTopic(derived); err != nil {
					t.Errorf("group %q is valid but its topic %q is not: %v", tt.name, derived, err)
				}
			}
		}
	}
}

func FuzzValidateGroup(f *testing.F) {
	for _, s := range []string{"", "cg", strings.Repeat("g", 121), "%RETRY%x", "a\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateGroup(name) != nil {
			return
		}
		if err := ValidateTopic(RetryTopic(name)); err != nil {
			t.Fatalf("group %q accepted, retry topic refused: %v", name, err)
		}
		if err := ValidateTopic(DLQTopic(name)); err != nil {
			t.Fatalf("group %q accepted, DLQ topic refused: %v", name, err)
		}
	})
}
