package filter

import (
	"math"
	"testing"
	"unicode"
)

func TestJavaParseInt(t *testing.T) {
	tests := []struct {
		in   string
		bits uint
		want int64
		ok   bool
	}{
		{"0", 32, 0, true},
		{"-0", 32, 0, true},
		{"+7", 32, 7, true},
		{"007", 32, 7, true},
		{"2147483647", 32, math.MaxInt32, true},
		{"-2147483648", 32, math.MinInt32, true},
		{"2147483648", 32, 0, false},
		{"-2147483649", 32, 0, false},
		{"9223372036854775807", 64, math.MaxInt64, true},
		{"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false},
		{"-9223372036854775809", 64, 0, false},
		{"99999999999999999999999", 64, 0, false},
		{"", 32, 0, false},
		{"+", 32, 0, false},
		{"-", 32, 0, false},
		{"+-1", 32, 0, false},
		{" 1", 32, 0, false},
		{"1 ", 32, 0, false},
		{"1.0", 32, 0, false},
		{"1e3", 32, 0, false},
		{"1L", 64, 0, false},
		{"0x10", 32, 0, false},
		{"1_000", 32, 0, false},
		{"\u0661\u0662", 32, 12, true},        // Arabic-Indic
		{"-\uff19", 32, -9, true},             // fullwidth
		{"\u0967\u0966\u0966", 32, 100, true}, // Devanagari
		{"\U0001D7CF", 32, 0, false},          // outside the BMP
		{"\xff", 32, 0, false},                // invalid UTF-8
		{"\u00b2", 32, 0, false},              // superscript two is No, not Nd
		{"\u2167", 32, 0, false},              // roman numeral eight is Nl
	}
	for _, tt := range tests {
		got, ok := javaParseInt(tt.in, tt.bits)
		if ok != tt.ok || got != tt.want {
			t.Errorf("javaParseInt(%q, %d) = %d, %v; want %d, %v", tt.in, tt.bits, got, ok, tt.want, tt.ok)
		}
	}
}

func TestJavaParseDouble(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{"-1.5", -1.5, true},
		{"+.5", 0.5, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"1E+3", 1000, true},
		{"1e-3", 0.001, true},
		{" \t1\n\r", 1, true},
		{"\x001\x1f", 1, true},
		{"1f", 1, true},
		{"1F", 1, true},
		{"1d", 1, true},
		{"1.5D", 1.5, true},
		{"1e5f", 1e5, true},
		{"NaN", math.NaN(), true},
		{"-NaN", math.NaN(), true},
		{"Infinity", math.Inf(1), true},
		{"+Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"1e400", math.Inf(1), true},
		{"-1e400", math.Inf(-1), true},
		{"1e-400", 0, true},
		{"0x1p3", 8, true},
		{"0X1.8P1", 3, true},
		{"-0x.8p1", -1, true},
		{"0x1.p1", 2, true},
		{"0x1p-1d", 0.5, true},
		{"0x1p99999999999", math.Inf(1), true},
		{"", 0, false},
		{"   ", 0, false},
		{"+", 0, false},
		{".", 0, false},
		{"e5", 0, false},
		{".e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1.2.3", 0, false},
		{"1ff", 0, false},
		{"1f ", 1, true}, // trimmed first
		{"1 f", 0, false},
		{"1L", 0, false},
		{"1,5", 0, false},
		{"1_0", 0, false},
		{"nan", 0, false},
		{"NaNf", 0, false},
		{"infinity", 0, false},
		{"Inf", 0, false},
		{"0x10", 0, false},
		{"0x", 0, false},
		{"0xp1", 0, false},
		{"0x.p1", 0, false},
		{"0x1p", 0, false},
		{"0xg1p1", 0, false},
		{"0x_1p1", 0, false},
		{"\u0661", 0, false},
		{"1\u00a0", 0, false}, // NBSP is above U+0020: not trimmed
	}
	for _, tt := range tests {
		got, ok := javaParseDouble(tt.in)
		if ok != tt.ok || (ok && javaCompareDouble(got, tt.want) != 0) {
			t.Errorf("javaParseDouble(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestJavaParseBool(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, "TRUE": true, "True": true, "tRUE": true,
		"": false, "false": false, "yes": false, "1": false, " true": false, "truee": false,
		"tru\u0435": false, // Cyrillic e
	} {
		if got := javaParseBool(in); got != want {
			t.Errorf("javaParseBool(%q) = %v", in, got)
		}
	}
}

func TestJavaCompareDouble(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	ordered := []float64{math.Inf(-1), -1, negZero, 0, 1, inf, nan}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := javaCompareDouble(a, b); got != want {
				t.Errorf("javaCompareDouble(%v, %v) = %d, want %d", a, b, got, want)
			}
		}
	}
	if javaCompareDouble(nan, math.Float64frombits(0x7ff0000000000001)) != 0 {
		t.Error("NaNs of different payloads are not equal")
	}
}

// TestUnicodeDigitRuns checks the assumption unicodeDigit rests on: the
// BMP decimal digits come in runs of ten with stride one.
func TestUnicodeDigitRuns(t *testing.T) {
	for _, rg := range unicode.Nd.R16 {
		n := int(rg.Hi-rg.Lo)/int(rg.Stride) + 1
		if rg.Stride != 1 || n%10 != 0 {
			t.Errorf("Nd range %#x-%#x stride %d is not runs of ten", rg.Lo, rg.Hi, rg.Stride)
		}
	}
	for r := rune('0'); r <= '9'; r++ {
		if got := unicodeDigit(r); got != int(r-'0') {
			t.Errorf("unicodeDigit(%q) = %d", r, got)
		}
	}
}

// TestJavaCompare covers the conversion matrix of __compare.
func TestJavaCompare(t *testing.T) {
	b := boolValue
	i := func(n int32) value { return intValue(n) }
	l := longValue
	d := doubleValue
	s := stringValue
	tests := []struct {
		l, r value
		want int
		err  bool
	}{
		{b(true), b(true), 0, false},
		{b(false), b(true), -1, false},
		{b(true), b(false), 1, false},
		{b(true), i(1), -1, false},
		{b(true), l(1), -1, false},
		{b(true), d(1), -1, false},
		{b(true), s("true"), 0, true},
		{i(1), b(true), -1, false},
		{i(1), i(2), -1, false},
		{i(3), l(3), 0, false},
		{i(3), d(2.5), 1, false},
		{i(3), s("3"), 0, false},
		{i(3), s("x"), 0, true},
		{i(3), s("3000000000"), 0, true},
		{l(3), i(4), -1, false},
		{l(3), d(3), 0, false},
		{l(3000000000), s("3000000000"), 0, false},
		{l(3), s("3.0"), 0, true},
		{l(3), b(false), -1, false},
		{d(2.5), i(2), 1, false},
		{d(2.5), l(3), -1, false},
		{d(2.5), s(" 2.5 "), 0, false},
		{d(2.5), s("x"), 0, true},
		{d(2.5), b(true), -1, false},
		{s("TRUE"), b(true), 0, false},
		{s("no"), b(true), -1, false},
		{s("4"), i(3), 1, false},
		{s("4.0"), i(3), 0, true},
		{s("4"), l(3), 1, false},
		{s("4"), d(4.5), -1, false},
		{s("NaN"), d(4.5), 1, false},
		{s("a"), s("a"), 0, false},
	}
	for _, tt := range tests {
		c, e := javaCompare(tt.l, tt.r)
		if (e.k == kErr) != tt.err || (!tt.err && c != tt.want) {
			t.Errorf("javaCompare(%+v, %+v) = %d, %+v; want %d, err %v", tt.l, tt.r, c, e, tt.want, tt.err)
		}
	}
}
