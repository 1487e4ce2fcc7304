package store

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	c := Checkpoint{
		Clean:           true,
		CommitLogOffset: 123456,
		Seq:             42,
		IndexPhyOffset:  -1,
		Queues: []QueueState{
			{Topic: "b", QueueID: 1, Min: 0, Max: 9},
			{Topic: "a", QueueID: 3, Min: 5, Max: 7},
		},
	}
	b, err := EncodeCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	// Fixed header by hand: magic, version 1, flags 1, offset, seq, index -1, 2 queues.
	want := []byte{0x4C, 0x4D, 0x51, 0x43, 0, 1, 0, 1,
		0, 0, 0, 0, 0, 1, 0xE2, 0x40,
		0, 0, 0, 0, 0, 0, 0, 42,
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		0, 0, 0, 2,
		1, 'a', 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7}
	if !bytes.Equal(b[:len(want)], want) {
		t.Fatalf("encoded\n%x\nwant prefix\n%x", b[:len(want)], want)
	}
	got, err := DecodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	c.Queues[0], c.Queues[1] = c.Queues[1], c.Queues[0] // written sorted
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v, want %+v", got, c)
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x01
		if _, err := DecodeCheckpoint(bad); !errors.Is(err, ErrBadCheckpoint) {
			t.Fatalf("flipped byte %d: got %v, want ErrBadCheckpoint", i, err)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeCheckpoint(b[:n]); !errors.Is(err, ErrBadCheckpoint) {
			t.Fatalf("cut at %d: got %v, want ErrBadCheckpoint", n, err)
		}
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	b := make([]byte, markerSize)
	encodeMarker(b, marker{count: 3, seq: 7, first: 4096})
	want := []byte{0, 0, 0, 32, 0x4C, 0x4D, 0x51, 0x42, 0, 1, 0, 0, 0, 0, 0, 3,
		0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0x10, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("marker %x, want %x", b, want)
	}
	m, err := decodeMarker(b)
	if err != nil || !reflect.DeepEqual(m, marker{count: 3, seq: 7, first: 4096}) {
		t.Fatalf("decode: %+v %v", m, err)
	}
	for _, bad := range [][]byte{b[:31], append([]byte{0, 0, 0, 33}, b[4:]...), append(append([]byte(nil), b[:8]...), append([]byte{0, 2}, b[10:]...)...)} {
		if _, err := decodeMarker(bad); !errors.Is(err, ErrBadMarker) {
			t.Fatalf("bad marker %x: got %v", bad, err)
		}
	}
}

func TestMarkerV2RoundTrip(t *testing.T) {
	in := marker{v2: true, count: 2, seq: 9, first: 100, term: 4, logType: 2, header: []byte("hdr")}
	b := make([]byte, in.size())
	encodeMarker(b, in)
	if len(b) != markerV2Fixed+3 || b[3] != byte(len(b)) || b[9] != 2 {
		t.Fatalf("marker %x", b)
	}
	m, err := decodeMarker(b)
	if err != nil || !reflect.DeepEqual(m, in) {
		t.Fatalf("decode: %+v %v", m, err)
	}
	// A header length that disagrees with the size, a size that disagrees
	// with the bytes, and a truncated marker are refused.
	bad1 := append([]byte(nil), b...)
	bad1[47]++
	bad2 := append([]byte(nil), b...)
	bad2[3]++
	for _, bad := range [][]byte{bad1, bad2, b[:len(b)-1], b[:markerV2Fixed-1]} {
		if _, err := decodeMarker(bad); !errors.Is(err, ErrBadMarker) {
			t.Fatalf("bad marker %x: got %v", bad, err)
		}
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	good, _ := EncodeCheckpoint(Checkpoint{CommitLogOffset: 10, Seq: 2, Queues: []QueueState{{Topic: "t", Max: 3}}})
	f.Add(good)
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b)
		if err != nil {
			return
		}
		again, err := EncodeCheckpoint(c)
		if err != nil {
			t.Fatalf("decoded checkpoint does not encode: %v", err)
		}
		c2, err := DecodeCheckpoint(again)
		if err != nil || !reflect.DeepEqual(normalize(c), normalize(c2)) {
			t.Fatalf("re-encode changed the checkpoint: %v", err)
		}
	})
}

func normalize(c Checkpoint) Checkpoint {
	b, _ := EncodeCheckpoint(c)
	c2, _ := DecodeCheckpoint(b)
	if c2.Queues == nil {
		c2.Queues = []QueueState{}
	}
	return c2
}

func FuzzDecodeMarker(f *testing.F) {
	b := make([]byte, markerSize)
	encodeMarker(b, marker{count: 1, seq: 1})
	f.Add(b)
	v2 := marker{v2: true, count: 1, seq: 2, term: 3, logType: 1, header: []byte{1, 1, 0, 0, 0, 1}}
	b2 := make([]byte, v2.size())
	encodeMarker(b2, v2)
	f.Add(b2)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMarker(b)
		if err != nil {
			return
		}
		out := make([]byte, m.size())
		encodeMarker(out, m)
		// Flags and reserved bytes are not kept, so compare only markers
		// without them.
		kept := b[10] == 0 && b[11] == 0 && (!m.v2 || b[41] == 0 && b[42] == 0 && b[43] == 0)
		if kept && !bytes.Equal(out, b[:m.size()]) {
			t.Fatalf("re-encode differs: %x vs %x", out, b[:m.size()])
		}
	})
}
