package commitlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
)

// fuzzSegSize is the smallest legal segment, to keep the fuzz targets fast.
var fuzzSegSize = max(MinSegmentSize, int64(os.Getpagesize()))

// FuzzRecoverSegment builds a log from fuzz-chosen entries, overwrites
// fuzz-chosen bytes of its segment files between Close and Open, and checks
// Recover: no panic or error, every visited entry is byte-identical to what
// was written at that offset, and every entry whose bytes were not changed is
// visited.
func FuzzRecoverSegment(f *testing.F) {
	f.Add([]byte{10, 0, 200, 1, 30, 0, 44, 2}, []byte{})
	f.Add([]byte{100, 3, 100, 3, 100, 3, 100, 3, 100, 3, 100, 3, 100, 3, 100, 3}, []byte{5, 0, 0, 3, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3, 0, 4, 0}, []byte{16, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0xf0, 1}, 30), []byte{0xfc, 0x0f, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 9})
	f.Fuzz(func(t *testing.T, spec, patches []byte) {
		cfg := DefaultConfig(t.TempDir())
		cfg.SegmentSize = fuzzSegSize
		l, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Recover(0, nil, nil); err != nil {
			t.Fatal(err)
		}
		// Entries: two spec bytes each give a size; the payload bytes are
		// derived from the entry's index so that equal sizes differ.
		byOff := map[int64][]byte{}
		var order []int64
		for i := 0; i+1 < len(spec) && len(order) < 40; i += 2 {
			size := MinEntrySize + int(binary.LittleEndian.Uint16(spec[i:]))%900
			p := make([]byte, size)
			binary.BigEndian.PutUint32(p, uint32(size))
			binary.BigEndian.PutUint32(p[4:], testMagic)
			for j := 8; j < size; j++ {
				p[j] = byte(j*7 + i*13 + int(spec[i+1]))
			}
			off, err := l.Append(p)
			if err != nil {
				t.Fatal(err)
			}
			byOff[off] = p
			order = append(order, off)
		}
		end := l.MaxOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if end == 0 {
			return
		}
		// Patches: 3 bytes of offset, 1 of length, then the new bytes.
		files := end/cfg.SegmentSize + 1
		changed := map[int64]bool{}
		for i := 0; i+4 <= len(patches); {
			off := int64(patches[i]) | int64(patches[i+1])<<8 | int64(patches[i+2])<<16
			off %= files * cfg.SegmentSize
			n := int(patches[i+3])%16 + 1
			i += 4
			data := patches[i:min(i+n, len(patches))]
			i += len(data)
			if off+int64(len(data)) > (off/cfg.SegmentSize+1)*cfg.SegmentSize {
				data = data[:(off/cfg.SegmentSize+1)*cfg.SegmentSize-off]
			}
			if _, err := os.Stat(segPath(cfg, off)); err != nil {
				continue
			}
			old := readFileAt(t, cfg, off, len(data))
			for j := range data {
				if old[j] != data[j] {
					changed[off+int64(j)] = true
				}
			}
			patchFile(t, cfg, off, data)
		}

		l, err = Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		visited := map[int64]bool{}
		last := int64(-1)
		_, err = l.Recover(0, func(off int64, p []byte) error {
			want, ok := byOff[off]
			if !ok || !bytes.Equal(p, want) {
				t.Fatalf("visited an entry at %d that was not written there", off)
			}
			if off <= last {
				t.Fatalf("visited %d after %d", off, last)
			}
			last = off
			visited[off] = true
			return nil
		}, func(c CorruptRange) {
			if c.Length <= 0 || c.Offset < 0 {
				t.Fatalf("bad corrupt range %+v", c)
			}
		})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		for _, off := range order {
			untouched := true
			for b := off; b < off+int64(len(byOff[off]))+TrailerSize; b++ {
				if changed[b] {
					untouched = false
					break
				}
			}
			if untouched && !visited[off] {
				t.Fatalf("untouched entry at %d was not visited", off)
			}
		}
	})
}

// FuzzScanSegment walks arbitrary bytes as a segment in both modes: no
// panic, every visited entry verifies, and visits and reported ranges come in
// order without overlapping.
func FuzzScanSegment(f *testing.F) {
	e := entryBytes(append([]byte{0, 0, 0, 12, 0xda, 0xa3, 0x20, 0xa7}, 1, 2, 3, 4))
	f.Add(e)
	f.Add(append(append([]byte{}, e...), e...))
	f.Add(append(append([]byte{}, e...), 0, 0, 0, 40, 0xcb, 0xd4, 0x31, 0x94))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		segLen := max(len(data), 64)
		b := make([]byte, segLen)
		copy(b, data)
		for _, mode := range []struct{ more, tail bool }{{false, false}, {true, false}, {false, true}} {
			next := 0
			w := walker{
				visit: func(off int64, p []byte) error {
					if int(off) < next {
						t.Fatalf("visit at %d overlaps %d", off, next)
					}
					if k, n, _ := inspect(b, segLen, int(off)); k != kindEntry || n != len(p) {
						t.Fatalf("visited an entry at %d that does not verify", off)
					}
					next = int(off) + len(p) + TrailerSize
					return nil
				},
				corrupt: func(c CorruptRange) {
					if int(c.Offset) < next || c.Length <= 0 || int(c.Offset+c.Length) > segLen {
						t.Fatalf("bad range %+v after %d", c, next)
					}
					next = int(c.Offset + c.Length)
				},
			}
			end, _, err := w.segment(b, nil, segLen, 0, 0, mode.more, mode.tail)
			if err != nil || end < 0 || end > segLen {
				t.Fatalf("segment = %d, %v", end, err)
			}
		}
	})
}

// FuzzRangeCRC checks the CRC algebra used by resynchronisation against a
// plain CRC. The input is stretched to at least 8 KiB so that short inputs
// reach the long-range path.
func FuzzRangeCRC(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint16(5), uint16(2000), uint16(1))
	f.Add([]byte("hello"), uint16(0), uint16(5), uint16(0))
	f.Add([]byte{0}, uint16(4000), uint16(4000), uint16(513))
	f.Fuzz(func(t *testing.T, seed []byte, c, n, origin uint16) {
		if len(seed) == 0 || len(seed) > 1<<16 {
			return
		}
		data := make([]byte, max(len(seed), 8<<10))
		for i := range data {
			data[i] = seed[i%len(seed)] ^ byte(i*31) ^ byte(i>>8)
		}
		o := int(origin) % len(data)
		ci := o + int(c)%(len(data)-o)
		ni := int(n) % (len(data) - ci + 1)
		if got, want := newPrefixCRC(data, o).rangeCRC(ci, ni), EntryCRC(data[ci:ci+ni]); got != want {
			t.Fatalf("rangeCRC(%d, %d) from %d = %#x, want %#x", ci, ni, o, got, want)
		}
	})
}

// FuzzSparseWalk checks that walking a segment with a list of its data
// extents finds what walking every byte finds, as long as the bytes outside
// the extents are zero (holes): same visits, same ranges, same end, and the
// same last non-zero byte past any position.
func FuzzSparseWalk(f *testing.F) {
	e := entryBytes(append([]byte{0, 0, 0, 12, 0xda, 0xa3, 0x20, 0xa7}, 1, 2, 3, 4))
	f.Add(append(append([]byte{}, e...), e...), []byte{0, 20, 40, 90})
	f.Add(e, []byte{})
	f.Add(append(make([]byte, 300), e...), []byte{1, 2, 250, 255})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		if len(data) > 1<<14 || len(cuts) > 64 {
			return
		}
		segLen := max(len(data), 64)
		b := make([]byte, segLen)
		copy(b, data)
		// Extents at the (scaled, sorted, distinct) cut points; zero the rest.
		var pts []int
		for _, c := range cuts {
			p := int(c) * segLen / 256
			if len(pts) == 0 || p > pts[len(pts)-1] {
				pts = append(pts, p)
			}
		}
		ext := extents{}
		for i := 0; i+1 < len(pts); i += 2 {
			ext = append(ext, extent{pts[i], pts[i+1]})
		}
		lo := 0
		for _, x := range ext {
			clear(b[lo:x.lo])
			lo = x.hi
		}
		clear(b[lo:])

		type result struct {
			log  []string
			end  int
			next bool
		}
		walk := func(ext extents, more, tail bool) result {
			var r result
			w := walker{
				visit: func(off int64, p []byte) error {
					r.log = append(r.log, fmt.Sprintf("v%d+%d", off, len(p)))
					return nil
				},
				corrupt: func(c CorruptRange) { r.log = append(r.log, fmt.Sprintf("c%d+%d", c.Offset, c.Length)) },
			}
			var err error
			r.end, r.next, err = w.segment(b, ext, segLen, 0, 0, more, tail)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for _, mode := range []struct{ more, tail bool }{{false, false}, {true, false}, {false, true}} {
			dense, sparse := walk(nil, mode.more, mode.tail), walk(ext, mode.more, mode.tail)
			if fmt.Sprint(dense) != fmt.Sprint(sparse) {
				t.Fatalf("extents %v, mode %+v: dense walk %v, sparse walk %v", ext, mode, dense, sparse)
			}
		}
		for _, from := range pts {
			if d, s := extents(nil).lastNonZero(b, from), ext.lastNonZero(b, from); d != s {
				t.Fatalf("lastNonZero from %d: dense %d, sparse %d", from, d, s)
			}
		}
		ds, ss := searcher{b: b, segLen: segLen}, searcher{b: b, segLen: segLen, ext: ext}
		if d, s := ds.hasEntry(0), ss.hasEntry(0); d != s {
			t.Fatalf("hasEntry: dense %v, sparse %v", d, s)
		}
	})
}
