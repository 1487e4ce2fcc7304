package protocol

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestParseAttributes(t *testing.T) {
	set, rm, err := ParseAttributes(" +dedup.window=30s, -message.type ,+queue.type=BatchCQ")
	if err != nil || !maps.Equal(set, map[string]string{"dedup.window": "30s", "queue.type": "BatchCQ"}) || !slices.Equal(rm, []string{"message.type"}) {
		t.Fatalf("%v %v %v", set, rm, err)
	}
	if set, rm, err := ParseAttributes(""); set != nil || rm != nil || err != nil {
		t.Fatal("empty changes something")
	}
	for _, bad := range []string{"dedup.window=1", "+k", "-k=v", "+=v", "+k=1,+k=2", ",", "+k=1,,"} {
		if _, _, err := ParseAttributes(bad); !errors.Is(err, ErrBadAttributes) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func FuzzParseAttributes(f *testing.F) {
	f.Add("+a=b,-c")
	f.Add("+dedup.window=0")
	f.Fuzz(func(t *testing.T, s string) {
		set, rm, err := ParseAttributes(s)
		if err != nil {
			return
		}
		if len(set)+len(rm) > MaxAttributes {
			t.Fatalf("%d changes", len(set)+len(rm))
		}
		for _, k := range rm {
			if _, ok := set[k]; ok || k == "" {
				t.Fatalf("key %q both set and removed, or empty", k)
			}
		}
	})
}
