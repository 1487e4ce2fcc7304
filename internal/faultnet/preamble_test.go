package faultnet

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestPreambleRoundTrip(t *testing.T) {
	for _, id := range []string{"a", "node-1", "ノード", strings.Repeat("x", MaxIDLen)} {
		b, err := appendPreamble([]byte("prefix"), id)
		if err != nil {
			t.Fatalf("appendPreamble(%q): %v", id, err)
		}
		r := bytes.NewReader(append(b[len("prefix"):], "payload"...))
		got, err := readPreamble(r)
		if err != nil || got != id {
			t.Fatalf("readPreamble = %q, %v; want %q", got, err, id)
		}
		rest, _ := io.ReadAll(r)
		if string(rest) != "payload" {
			t.Fatalf("readPreamble consumed past the preamble: rest %q", rest)
		}
	}
}

func TestPreambleInvalidID(t *testing.T) {
	for _, id := range []string{"", strings.Repeat("x", MaxIDLen+1), "\xc3"} {
		if _, err := appendPreamble(nil, id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("appendPreamble(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

func TestReadPreambleErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short header", []byte{preambleMagic0, preambleMagic1, preambleVersion}},
		{"bad magic", []byte{0xFA, 0x18, preambleVersion, 1, 'a'}},
		{"bad version", []byte{preambleMagic0, preambleMagic1, 2, 1, 'a'}},
		{"zero length", []byte{preambleMagic0, preambleMagic1, preambleVersion, 0}},
		{"short id", []byte{preambleMagic0, preambleMagic1, preambleVersion, 3, 'a', 'b'}},
		{"bad utf8", []byte{preambleMagic0, preambleMagic1, preambleVersion, 2, 0xc3, 0x28}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, err := readPreamble(bytes.NewReader(tt.in)); !errors.Is(err, ErrBadPreamble) {
				t.Fatalf("readPreamble = %q, %v; want ErrBadPreamble", id, err)
			}
		})
	}
}

// FuzzReadPreamble feeds arbitrary bytes to the preamble decoder: it must
// not panic, must never read past the preamble it accepts, and an accepted
// id must re-encode to exactly the bytes consumed.
func FuzzReadPreamble(f *testing.F) {
	for _, id := range []string{"a", "node-1", "ノード", strings.Repeat("z", MaxIDLen)} {
		b, err := appendPreamble(nil, id)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, "trailing"...))
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{preambleMagic0, preambleMagic1, preambleVersion, 0})
	f.Add([]byte{preambleMagic0, preambleMagic1, 7, 1, 'a'})
	f.Add([]byte{preambleMagic0, preambleMagic1, preambleVersion, 1, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		id, err := readPreamble(r)
		if err != nil {
			if !errors.Is(err, ErrBadPreamble) {
				t.Fatalf("error %v does not wrap ErrBadPreamble", err)
			}
			return
		}
		consumed := len(data) - r.Len()
		enc, err := appendPreamble(nil, id)
		if err != nil {
			t.Fatalf("decoded id %q does not re-encode: %v", id, err)
		}
		if !bytes.Equal(enc, data[:consumed]) {
			t.Fatalf("re-encoded %x, consumed %x", enc, data[:consumed])
		}
	})
}

// FuzzPreambleRoundTrip encodes arbitrary ids: valid ones must decode to
// themselves, invalid ones must be refused by the encoder.
func FuzzPreambleRoundTrip(f *testing.F) {
	for _, id := range []string{"a", "", "ノード", "\xff", strings.Repeat("q", 300)} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		enc, err := appendPreamble(nil, id)
		if !validID(id) {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("appendPreamble(%q) = %v, want ErrInvalidID", id, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := readPreamble(bytes.NewReader(enc))
		if err != nil || got != id {
			t.Fatalf("round trip of %q = %q, %v", id, got, err)
		}
	})
}
