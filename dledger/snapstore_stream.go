package dledger

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
)

// The snapshot stream: what Open's reader produces for InstallSnapshot and
// what a sink parses back. Big-endian; the layout is in doc.go.
const (
	streamMagic       uint32 = 0x4C4D5153 // "LMQS"
	streamVersion     uint16 = 1
	streamHeaderSize         = 24
	segmentFrameSize         = 17 // kind, start, length
	endFrameSize             = 5  // kind, CRC
	frameKindSegment  byte   = 'S'
	frameKindEnd      byte   = 'E'
	maxManifestSize          = 64 << 20
	minStreamSegSize         = 64 << 10
	maxStreamSegSize         = 1<<31 - 1
	maxStreamSegments        = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// streamSize is the exact length of a stream with a manifest of m bytes
// and segments carrying the given byte counts.
func streamSize(m int, counts []int64) int64 {
	n := int64(streamHeaderSize+m) + endFrameSize
	for _, c := range counts {
		n += segmentFrameSize + c
	}
	return n
}

func appendStreamHeader(b []byte, segSize int64, manifestLen, segments int) []byte {
	b = binary.BigEndian.AppendUint32(b, streamMagic)
	b = binary.BigEndian.AppendUint16(b, streamVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(segSize))
	b = binary.BigEndian.AppendUint32(b, uint32(manifestLen))
	return binary.BigEndian.AppendUint32(b, uint32(segments))
}

func appendSegmentFrame(b []byte, start, n int64) []byte {
	b = append(b, frameKindSegment)
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// streamTarget receives what a streamParser decodes, in stream order. Any
// error it returns stops the parse.
type streamTarget interface {
	// header: the sender's segment size and the number of segment frames.
	header(segSize int64, segments int) error
	// manifest: the manifest bytes (the parser keeps no reference).
	manifest(b []byte) error
	// beginSegment, segmentData…, endSegment: one segment frame; n bytes
	// of the segment starting at offset start, in pieces.
	beginSegment(start, n int64) error
	segmentData(p []byte) error
	endSegment() error
}

type parseState int

const (
	psHeader parseState = iota
	psManifest
	psFrame
	psData
	psDone
)

// streamParser decodes a snapshot stream pushed to it in pieces of any
// size (Write), checking every bound before it trusts a length, and hands
// the parts to a target. Errors are sticky and wrap ErrBadSnapshot unless
// the target returned them. It never panics on any input.
type streamParser struct {
	t       streamTarget
	state   parseState
	buf     []byte // the header, manifest or frame being assembled
	need    int    // bytes buf must reach
	crc     hash.Hash32
	segSize int64
	segs    int   // segment frames announced
	seen    int   // segment frames begun
	next    int64 // start the next segment frame must have
	left    int64 // bytes of the current segment still to come
	last    int64 // byte count of the current or last segment
	end     int64 // offset just past the last segment's bytes
	err     error
}

func newStreamParser(t streamTarget) *streamParser {
	return &streamParser{t: t, need: streamHeaderSize, crc: crc32.New(castagnoli), next: -1}
}

func (p *streamParser) fail(format string, a ...any) error {
	p.err = fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, a...)...)
	return p.err
}

// fill moves bytes from b into buf until it holds need bytes; it returns
// the bytes used and whether buf is complete.
func (p *streamParser) fill(b []byte) (int, bool) {
	k := min(p.need-len(p.buf), len(b))
	p.buf = append(p.buf, b[:k]...)
	return k, len(p.buf) == p.need
}

// Write consumes b; it fails on the first byte that cannot belong to a
// valid stream.
func (p *streamParser) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 && p.err == nil {
		switch p.state {
		case psHeader, psManifest:
			k, full := p.fill(b)
			p.crc.Write(b[:k])
			b = b[k:]
			if full {
				p.complete()
			}
		case psFrame:
			if len(p.buf) == 0 {
				switch b[0] {
				case frameKindSegment:
					p.need = segmentFrameSize
				case frameKindEnd:
					p.need = endFrameSize
				default:
					return total - len(b), p.fail("frame kind %#x", b[0])
				}
			}
			k, full := p.fill(b)
			// The CRC covers everything up to the end frame's CRC field.
			if p.buf[0] == frameKindEnd {
				covered := max(0, min(k, 1-(len(p.buf)-k)))
				p.crc.Write(b[:covered])
			} else {
				p.crc.Write(b[:k])
			}
			b = b[k:]
			if full {
				p.frame()
			}
		case psData:
			k := int(min(p.left, int64(len(b))))
			p.crc.Write(b[:k])
			if err := p.t.segmentData(b[:k]); err != nil {
				p.err = err
				break
			}
			b = b[k:]
			p.left -= int64(k)
			if p.left == 0 {
				if err := p.t.endSegment(); err != nil {
					p.err = err
					break
				}
				p.state = psFrame
			}
		case psDone:
			return total - len(b), p.fail("%d bytes after the end frame", len(b))
		}
	}
	if p.err != nil {
		return total - len(b), p.err
	}
	return total, nil
}

// complete handles a full header or manifest.
func (p *streamParser) complete() {
	switch p.state {
	case psHeader:
		h := p.buf
		if m := binary.BigEndian.Uint32(h[0:]); m != streamMagic {
			p.fail("magic %#x", m)
			return
		}
		if v := binary.BigEndian.Uint16(h[4:]); v != streamVersion {
			p.fail("version %d", v)
			return
		}
		if f := binary.BigEndian.Uint16(h[6:]); f != 0 {
			p.fail("flags %#x", f)
			return
		}
		segSize := int64(binary.BigEndian.Uint64(h[8:]))
		mlen := binary.BigEndian.Uint32(h[16:])
		segs := binary.BigEndian.Uint32(h[20:])
		switch {
		case segSize < minStreamSegSize || segSize > maxStreamSegSize:
			p.fail("segment size %d", segSize)
			return
		case mlen == 0 || mlen > maxManifestSize:
			p.fail("manifest length %d", mlen)
			return
		case segs > maxStreamSegments:
			p.fail("%d segments", segs)
			return
		}
		p.segSize, p.segs = segSize, int(segs)
		if err := p.t.header(segSize, p.segs); err != nil {
			p.err = err
			return
		}
		// The manifest grows as it arrives: a lying length costs nothing
		// until the bytes are really sent.
		p.buf, p.need, p.state = p.buf[:0], int(mlen), psManifest
	case psManifest:
		if err := p.t.manifest(p.buf); err != nil {
			p.err = err
			return
		}
		p.buf, p.need, p.state = nil, 1, psFrame
	}
}

// frame handles a full segment or end frame.
func (p *streamParser) frame() {
	f := p.buf
	p.buf = p.buf[:0]
	switch f[0] {
	case frameKindSegment:
		start := int64(binary.BigEndian.Uint64(f[1:]))
		n := int64(binary.BigEndian.Uint64(f[9:]))
		switch {
		case p.seen == p.segs:
			p.fail("segment frame %d of %d", p.seen+1, p.segs)
			return
		case p.seen > 0 && p.last != p.segSize:
			p.fail("segment at %d follows a partial segment", start)
			return
		case start < 0 || start%p.segSize != 0 || (p.next >= 0 && start != p.next):
			p.fail("segment start %d (want %d, segment size %d)", start, p.next, p.segSize)
			return
		case n <= 0 || n > p.segSize:
			p.fail("segment at %d carries %d bytes", start, n)
			return
		case start > 1<<62-p.segSize:
			p.fail("segment start %d", start)
			return
		}
		if err := p.t.beginSegment(start, n); err != nil {
			p.err = err
			return
		}
		p.seen++
		p.next, p.left, p.last, p.end = start+p.segSize, n, n, start+n
		p.state = psData
	case frameKindEnd:
		if p.seen != p.segs {
			p.fail("end frame after %d of %d segments", p.seen, p.segs)
			return
		}
		if got, want := binary.BigEndian.Uint32(f[1:]), p.crc.Sum32(); got != want {
			p.fail("stream checksum %#x, computed %#x", got, want)
			return
		}
		p.state = psDone
	}
	p.need = 1
}

// finish reports whether the whole stream, end frame included, was
// parsed. A stream cut short is ErrBadSnapshot.
func (p *streamParser) finish() error {
	if p.err != nil {
		return p.err
	}
	if p.state != psDone {
		return p.fail("stream ends early (%d of %d segments)", p.seen, p.segs)
	}
	return nil
}
