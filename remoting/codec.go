package remoting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// DefaultMaxFrameSize is the largest frame, length prefix included, that a
// connection reads or writes unless configured otherwise: Java's
// com.rocketmq.remoting.frameMaxLength default.
const DefaultMaxFrameSize = 16 << 20

const (
	// maxHeaderLength is the largest header the 24-bit length can carry.
	maxHeaderLength = 1<<24 - 1
	// minFrameLength is the smallest legal value of the length prefix: the
	// header-length word alone.
	minFrameLength = 4
	// readChunk bounds the first allocation for a frame body: larger frames
	// grow their buffer as bytes actually arrive, so a peer that announces
	// a big frame and then stalls costs little memory.
	readChunk = 64 << 10
)

// Encode appends the complete frame of c (4-byte length prefix, header-type
// word, header, body) to dst and returns the extended slice. The header is
// encoded as c.SerializeType says; ext fields are written in ascending key
// order, so equal commands encode to equal bytes.
//
// It fails with ErrBadFrame for an unknown SerializeType, ErrBadHeader for
// a header that cannot be represented (longer than 16 MiB − 1, or a binary
// ext key longer than 32767 bytes) and ErrFrameTooLarge for a frame whose
// length does not fit the int32 prefix. On error dst is returned unchanged.
func Encode(dst []byte, c *Command) ([]byte, error) {
	return appendFrame(dst, c, c.SerializeType, c.Opaque, c.Flag)
}

// appendFrame is Encode with the header form, opaque and flag given
// separately, so that a call can stamp them without modifying the
// caller's Command.
func appendFrame(dst []byte, c *Command, typ byte, opaque, flag int32) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch typ {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c, opaque, flag)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeader(dst, c, opaque, flag)
	default:
		err = fmt.Errorf("%w: unknown serialize type %d", ErrBadFrame, typ)
	}
	if err != nil {
		return dst[:start], err
	}
	hlen := len(dst) - start - 8
	if hlen > maxHeaderLength {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds %d", ErrBadHeader, hlen, maxHeaderLength)
	}
	total := int64(4) + int64(hlen) + int64(len(c.Body))
	if total > math.MaxInt32-4 {
		return dst[:start], fmt.Errorf("%w: frame of %d bytes", ErrFrameTooLarge, total+4)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(typ)<<24|uint32(hlen))
	return append(dst, c.Body...), nil
}

// Decode parses one frame: the bytes that follow the 4-byte length prefix
// (header-type word, header, body). The returned Command's Body aliases
// frame (nil when the frame has no body); strings are copied.
//
// It fails with ErrBadFrame when frame is shorter than 4 bytes, the header
// length runs past its end or the type byte is neither SerializeJSON nor
// SerializeRocketMQ, and with ErrBadHeader when the header does not decode
// or exceeds DefaultHeaderLimits. No input makes it panic.
func Decode(frame []byte) (*Command, error) {
	return DecodeLimited(frame, DefaultHeaderLimits)
}

// DecodeLimited is Decode with the given header limits (zero fields take
// the defaults). Within them, decoding allocates at most about the
// header's size in strings plus a bounded map: a header longer than
// lim.MaxBytes is refused before it is parsed, and one with more than
// lim.MaxExtFields ext entries or nested deeper than lim.MaxDepth as soon
// as the parser gets there.
func DecodeLimited(frame []byte, lim HeaderLimits) (*Command, error) {
	return decodeFrame(frame, lim, false, nil)
}

// decodeFrame is DecodeLimited; with listResponses a response's ext fields
// are left in ExtList (a connection decodes responses so, and gives the
// map to the calls that want one), and so are those of a request whose
// code is in listCodes (ServerConfig.ListCodes).
func decodeFrame(frame []byte, lim HeaderLimits, listResponses bool, listCodes []int32) (*Command, error) {
	return decodeFrameMode(frame, lim, listResponses, listCodes, false)
}

// decodeFrameMode is decodeFrame; with owned the command takes the
// frame's header bytes as well as its body: its strings are views of
// them (escaped ones unescaped in place) instead of a copy, which spares
// a connection that reads each frame into a buffer of its own an
// allocation and a copy per frame. Nothing may write to such a frame
// afterwards.
func decodeFrameMode(frame []byte, lim HeaderLimits, listResponses bool, listCodes []int32, owned bool) (*Command, error) {
	lim = lim.withDefaults()
	if len(frame) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, need at least the 4-byte header-length word", ErrBadFrame, len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	typ, hlen := byte(word>>24), int(word&maxHeaderLength)
	if hlen > len(frame)-4 {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d bytes after it", ErrBadFrame, hlen, len(frame)-4)
	}
	if typ != SerializeJSON && typ != SerializeRocketMQ {
		return nil, fmt.Errorf("%w: unknown serialize type %d", ErrBadFrame, typ)
	}
	if hlen > lim.MaxBytes {
		return nil, fmt.Errorf("%w: header of %d bytes exceeds the limit of %d", ErrBadHeader, hlen, lim.MaxBytes)
	}
	header, body := frame[4:4+hlen], frame[4+hlen:]
	// The header is decoded into a Command on the stack, which is then
	// copied into the allocation it needs: a listed response's holds its
	// fields too.
	dc := Command{SerializeType: typ}
	var small [24]ExtField
	var pairs []ExtField
	var err error
	switch {
	case typ == SerializeRocketMQ:
		pairs, err = decodeBinaryHeader(header, &dc, lim, small[:0], owned)
	case owned:
		pairs, err = decodeJSONHeaderIn(header, header, &dc, lim, small[:0])
	default:
		pairs, err = decodeJSONHeader(header, &dc, lim, small[:0])
	}
	if err != nil {
		return nil, err
	}
	var c *Command
	switch {
	case len(pairs) == 0:
		c = new(Command)
		*c = dc
	case listResponses && dc.IsResponse(), !dc.IsResponse() && slices.Contains(listCodes, dc.Code):
		c = listed(&dc, pairs)
	default:
		c = new(Command)
		*c = dc
		// A map of exactly the fields' number costs about half of one
		// grown entry by entry. A repeated key keeps its last value.
		c.ExtFields = make(map[string]string, len(pairs))
		for _, p := range pairs {
			c.ExtFields[p.Key] = p.Value
		}
	}
	if len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}

// listedCommand is a decoded command and the fields of its ExtList in one
// allocation: a send's response has six; listedLong is for up to sixteen
// (a send's request has fourteen).
type listedCommand struct {
	Command
	ext [8]ExtField
}

type listedLong struct {
	Command
	ext [16]ExtField
}

// listed is a decoded command with its ext fields in an ExtList of its
// own.
func listed(dc *Command, pairs []ExtField) *Command {
	n := len(pairs)
	switch {
	case n <= len(listedCommand{}.ext):
		lc := &listedCommand{Command: *dc}
		lc.ExtList = lc.ext[:copy(lc.ext[:], pairs):n]
		return &lc.Command
	case n <= len(listedLong{}.ext):
		ll := &listedLong{Command: *dc}
		ll.ExtList = ll.ext[:copy(ll.ext[:], pairs):n]
		return &ll.Command
	}
	c := new(Command)
	*c = *dc
	c.ExtList = slices.Clone(pairs)
	return c
}

// checkLength validates a frame's length prefix n against maxSize, which
// bounds the whole frame including the 4-byte prefix (as Java's
// frameMaxLength does).
func checkLength(n int32, maxSize int) error {
	if n < minFrameLength {
		return fmt.Errorf("%w: length prefix %d", ErrBadFrame, n)
	}
	if int64(n)+4 > int64(maxSize) {
		return fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, int64(n)+4, maxSize)
	}
	return nil
}

// ReadFrame reads one length-prefixed frame from r and returns the bytes
// after the prefix, ready for Decode. It reuses buf when its capacity is
// large enough and allocates otherwise; maxSize <= 0 means
// DefaultMaxFrameSize and bounds the frame including its prefix.
//
// The length is checked before anything is allocated: a prefix below 4 is
// ErrBadFrame, one above the limit ErrFrameTooLarge. A clean end of stream
// before the prefix is io.EOF; an end inside a frame is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, buf []byte, maxSize int) ([]byte, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(prefix[:]))
	if err := checkLength(n, maxSize); err != nil {
		return nil, err
	}
	return readFrameBody(r, buf, int(n))
}

// readFrameBuffered is ReadFrame for a connection's bufio.Reader: it peeks
// the prefix instead of copying it, and always returns a fresh buffer (the
// decoded Command's Body aliases it and outlives the next read).
func readFrameBuffered(br *bufio.Reader, maxSize int) ([]byte, error) {
	n, err := readLengthBuffered(br, maxSize)
	if err != nil {
		return nil, err
	}
	return readFrameBody(br, nil, n)
}

// readLengthBuffered reads and checks a frame's length prefix.
func readLengthBuffered(br *bufio.Reader, maxSize int) (int, error) {
	p, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) && len(p) > 0 {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(p))
	if err := checkLength(n, maxSize); err != nil {
		return 0, err
	}
	if _, err := br.Discard(4); err != nil {
		return 0, err
	}
	return int(n), nil
}

// readFrameBody reads exactly n bytes. Frames above readChunk are read into
// a buffer that doubles as data arrives rather than being allocated whole.
func readFrameBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	if cap(buf) >= n || n <= readChunk {
		if cap(buf) >= n {
			buf = buf[:n]
		} else {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpectedEOF(err)
		}
		return buf, nil
	}
	buf = make([]byte, 0, readChunk)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

// unexpectedEOF maps io.EOF inside a frame to io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
