package consumequeue

import (
	"bytes"
	"errors"
	"testing"
)

func TestUnitEncodeDecode(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
		unit  Unit
		err   error
	}{
		{
			name: "typical",
			bytes: []byte{
				0, 0, 0, 0, 0, 0, 0x12, 0x34, // offset 0x1234
				0, 0, 0x01, 0x00, // size 256
				0, 0, 0, 0, 0, 0, 0, 0x2a, // tags 42
			},
			unit: Unit{Offset: 0x1234, Size: 256, TagsCode: 42},
		},
		{
			name: "offset zero, negative tags code",
			bytes: []byte{
				0, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 1,
				0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
			},
			unit: Unit{Offset: 0, Size: 1, TagsCode: -2},
		},
		{
			name: "largest values",
			bytes: []byte{
				0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				0x7f, 0xff, 0xff, 0xff,
				0x80, 0, 0, 0, 0, 0, 0, 0,
			},
			unit: Unit{Offset: 1<<63 - 1, Size: 1<<31 - 1, TagsCode: -1 << 63},
		},
		{
			name:  "never written",
			bytes: make([]byte, 20),
			unit:  Unit{},
			err:   ErrBadUnit,
		},
		{
			name: "size zero",
			bytes: []byte{
				0, 0, 0, 0, 0, 0, 0, 9,
				0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 0,
			},
			unit: Unit{Offset: 9},
			err:  ErrBadUnit,
		},
		{
			name: "negative size",
			bytes: []byte{
				0, 0, 0, 0, 0, 0, 0, 9,
				0xff, 0xff, 0xff, 0xff,
				0, 0, 0, 0, 0, 0, 0, 0,
			},
			unit: Unit{Offset: 9, Size: -1},
			err:  ErrBadUnit,
		},
		{
			name: "negative offset",
			bytes: []byte{
				0x80, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 10,
				0, 0, 0, 0, 0, 0, 0, 0,
			},
			unit: Unit{Offset: -1 << 63, Size: 10},
			err:  ErrBadUnit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeUnit(tt.bytes)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("DecodeUnit err = %v, want %v", err, tt.err)
			}
			if got != tt.unit {
				t.Fatalf("DecodeUnit = %+v, want %+v", got, tt.unit)
			}
			if got.Valid() != (tt.err == nil) {
				t.Fatalf("Valid() = %v", got.Valid())
			}
			buf := bytes.Repeat([]byte{0xee}, UnitSize+2)
			EncodeUnit(buf, tt.unit)
			if !bytes.Equal(buf[:UnitSize], tt.bytes) {
				t.Fatalf("EncodeUnit = %x, want %x", buf[:UnitSize], tt.bytes)
			}
			if buf[UnitSize] != 0xee || buf[UnitSize+1] != 0xee {
				t.Fatal("EncodeUnit wrote past UnitSize")
			}
		})
	}
}

func TestDecodeUnitShort(t *testing.T) {
	for n := 0; n < UnitSize; n++ {
		if _, err := DecodeUnit(make([]byte, n)); !errors.Is(err, ErrShortUnit) {
			t.Fatalf("DecodeUnit(%d bytes) err = %v, want ErrShortUnit", n, err)
		}
	}
	// Extra bytes are ignored.
	b := make([]byte, UnitSize+5)
	EncodeUnit(b, Unit{Offset: 1, Size: 2, TagsCode: 3})
	if u, err := DecodeUnit(b); err != nil || u != (Unit{1, 2, 3}) {
		t.Fatalf("DecodeUnit = %+v, %v", u, err)
	}
}
