package message

import "testing"

func TestJavaStringHash(t *testing.T) {
	// Values from Java's String.hashCode().
	tests := []struct {
		in   string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"TagA", 2598919},
		{"TagC", 2598921},
		{"hello", 99162322},
		{"é", 233},     // U+00E9, one UTF-16 unit
		{"😀", 1772899}, // U+1F600 = surrogates 0xD83D 0xDE00
		{"中文", 646394}, // 0x4E2D*31 + 0x6587
		{"Aa", 2112},   // the classic collision with "BB"
		{"BB", 2112},
		{"hello world", 1794106052},
		{"polygenelubricants", -2147483648}, // wraps to Integer.MIN_VALUE
		{"\xff", 0xFFFD},                    // an invalid byte counts as U+FFFD
	}
	for _, tc := range tests {
		if got := JavaStringHash(tc.in); got != tc.want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.in, got, tc.want)
		}
		if got := javaHashBytes([]byte(tc.in)); got != tc.want {
			t.Errorf("javaHashBytes(%q) = %d, want %d", tc.in, got, tc.want)
		}
		if got := TagsHashCode(tc.in); got != int64(tc.want) {
			t.Errorf("TagsHashCode(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestTagsHashCodeSignExtends(t *testing.T) {
	// A long string whose int32 hash is negative must stay negative as int64.
	s := "polygenelubricants"
	h := JavaStringHash(s)
	if h >= 0 {
		t.Fatalf("test string should hash negative, got %d", h)
	}
	if got := TagsHashCode(s); got != int64(h) || got >= 0 {
		t.Fatalf("TagsHashCode = %d, want %d", got, h)
	}
}

// javaHashReference is the textbook definition over UTF-16 units, to check
// the fast path against.
func javaHashReference(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xFFFF {
			r -= 0x10000
			h = 31*h + (0xD800 + (r >> 10))
			h = 31*h + (0xDC00 + (r & 0x3FF))
			continue
		}
		h = 31*h + r
	}
	return h
}

func FuzzJavaStringHash(f *testing.F) {
	for _, s := range []string{"", "TagA", "é😀中", "\xff\xfe", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := javaHashReference(s)
		if got := JavaStringHash(s); got != want {
			t.Fatalf("JavaStringHash(%q) = %d, want %d", s, got, want)
		}
		if got := javaHashBytes([]byte(s)); got != want {
			t.Fatalf("javaHashBytes(%q) = %d, want %d", s, got, want)
		}
	})
}
