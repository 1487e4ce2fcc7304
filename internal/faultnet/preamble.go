package faultnet

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// Preamble layout (written by the dialer right after the TCP connect, read by
// the accepting Layer before Accept returns the connection; see doc.go):
//
//	offset size  field
//	0      2     magic   0xFA 0x17
//	2      1     version 0x01
//	3      1     idLen   1..255
//	4      idLen id      node id of the dialer, UTF-8
const (
	preambleMagic0  = 0xFA
	preambleMagic1  = 0x17
	preambleVersion = 0x01
	preambleHeader  = 4

	// MaxIDLen is the longest node id in bytes (it must fit the preamble's
	// one-byte length).
	MaxIDLen = 255
)

// validID reports whether id can name a node: 1..MaxIDLen bytes of valid
// UTF-8.
func validID(id string) bool {
	return len(id) > 0 && len(id) <= MaxIDLen && utf8.ValidString(id)
}

// appendPreamble appends the preamble announcing id to dst.
func appendPreamble(dst []byte, id string) ([]byte, error) {
	if !validID(id) {
		return dst, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	dst = append(dst, preambleMagic0, preambleMagic1, preambleVersion, byte(len(id)))
	return append(dst, id...), nil
}

// readPreamble reads exactly one preamble from r and returns the announced
// node id. It never reads past the preamble, so the rest of the stream is
// left for the connection's user. Malformed input yields an error wrapping
// ErrBadPreamble; a short stream yields one that also wraps the read error.
func readPreamble(r io.Reader) (string, error) {
	var hdr [preambleHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", fmt.Errorf("%w: header: %w", ErrBadPreamble, err)
	}
	if hdr[0] != preambleMagic0 || hdr[1] != preambleMagic1 {
		return "", fmt.Errorf("%w: magic %#02x%02x", ErrBadPreamble, hdr[0], hdr[1])
	}
	if hdr[2] != preambleVersion {
		return "", fmt.Errorf("%w: version %d", ErrBadPreamble, hdr[2])
	}
	n := int(hdr[3])
	if n == 0 {
		return "", fmt.Errorf("%w: empty node id", ErrBadPreamble)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", fmt.Errorf("%w: node id: %w", ErrBadPreamble, err)
	}
	if !utf8.Valid(buf) {
		return "", fmt.Errorf("%w: node id is not UTF-8", ErrBadPreamble)
	}
	return string(buf), nil
}
