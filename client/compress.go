package client

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// compress returns body zlib-compressed at level, as RocketMQ clients
// compress bodies of compressThreshold bytes or more (sysFlag bit 0x1;
// compression type bits 0, which means zlib).
func compress(body []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body) / 2)
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// inflate undoes compress, refusing output larger than limit bytes: a
// consumer must not let a small body expand without bound.
func inflate(body []byte, limit int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: inflate: %w", err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("client: inflate: %w", err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("client: inflate: body expands past %d bytes", limit)
	}
	return out, nil
}
