package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func FuzzDecodeHeader(f *testing.F) {
	valid := make([]byte, HeaderSize)
	EncodeHeader(valid, Header{BeginTimestamp: 1, EndTimestamp: 2, BeginPhyOffset: 3, EndPhyOffset: 4, HashSlotCount: 1, IndexCount: 2})
	f.Add(valid, uint16(8), uint16(16))
	f.Add(make([]byte, HeaderSize), uint16(1), uint16(2))
	f.Add(bytes.Repeat([]byte{0xff}, HeaderSize), uint16(100), uint16(100))
	f.Add(valid[:10], uint16(8), uint16(16))
	f.Fuzz(func(t *testing.T, b []byte, slotNum, maxEntries uint16) {
		h, err := DecodeHeader(b, int(slotNum), int(maxEntries))
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error %v does not wrap ErrBadHeader", err)
			}
			return
		}
		out := make([]byte, HeaderSize)
		EncodeHeader(out, h)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("round trip: % x != % x", out, b[:HeaderSize])
		}
		if h2, err := DecodeHeader(out, int(slotNum), int(maxEntries)); err != nil || h2 != h {
			t.Fatalf("re-decode: %+v %v", h2, err)
		}
	})
}

// FuzzIndexFile overwrites part of a small, valid index file with fuzz bytes
// and checks that Open, Query and Put neither panic nor loop.
func FuzzIndexFile(f *testing.F) {
	cfg := Config{Dir: f.TempDir(), SlotNum: 8, MaxEntries: 16, Logger: hclog.NewNullLogger()}
	g := cfg.geometry()
	keys := []string{"T#k0", "T#k1", "T#k2", "T#k3", "polygenelubricants"}
	s, err := Open(cfg)
	if err != nil {
		f.Fatal(err)
	}
	for i := int64(0); i < 12; i++ {
		if err := s.Put(keys[i%int64(len(keys))], i*100, base+i*1500); err != nil {
			f.Fatal(err)
		}
	}
	name := filepath.Base(s.Files()[0].Path)
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	image, err := os.ReadFile(filepath.Join(cfg.Dir, name))
	if err != nil {
		f.Fatal(err)
	}

	f.Add(uint16(36), be32(6))                                    // indexCount below the entries present
	f.Add(uint16(36), be32(16))                                   // full
	f.Add(uint16(32), be32(-1))                                   // bad slot count
	f.Add(uint16(0), make([]byte, HeaderSize))                    // header lost
	f.Add(uint16(0), bytes.Repeat([]byte{0xff}, HeaderSize))      // garbage header
	f.Add(uint16(g.slotOff(0)), bytes.Repeat([]byte{0x7f}, 32))   // every slot far out
	f.Add(uint16(g.slotOff(2)), be32(11))                         // slot at the last entry
	f.Add(uint16(g.entryOff(5)+16), be32(5))                      // self link
	f.Add(uint16(g.entryOff(9)+16), be32(12))                     // forward link
	f.Add(uint16(g.entryOff(3)+12), be32(-7))                     // negative time diff
	f.Add(uint16(g.entryOff(1)), bytes.Repeat([]byte{0x80}, 300)) // trash across entries
	f.Fuzz(func(t *testing.T, off uint16, patch []byte) {
		img := bytes.Clone(image)
		copy(img[int(off)%len(img):], patch)
		cfg := cfg
		cfg.Dir = t.TempDir()
		if err := os.WriteFile(filepath.Join(cfg.Dir, name), img, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(cfg)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		for _, k := range keys {
			got, err := s.Query(k, math.MinInt64, math.MaxInt64, 100)
			if err != nil || len(got) > 16 {
				t.Fatalf("Query(%s) = %v, %v", k, got, err)
			}
			if _, err := s.Query(k, base+3000, base+6000, 2); err != nil {
				t.Fatal(err)
			}
		}
		for i, k := range keys {
			off := int64(10_000 + i)
			if err := s.Put(k, off, base+int64(i)*700); err != nil {
				t.Fatalf("Put: %v", err)
			}
			got, err := s.Query(k, math.MinInt64, math.MaxInt64, 100)
			if err != nil || len(got) == 0 || got[0] != off {
				t.Fatalf("Query(%s) after Put = %v, %v", k, got, err)
			}
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		_ = fmt.Sprint(s.Files(), s.Corrupt(), s.MaxPhyOffset())
	})
}
