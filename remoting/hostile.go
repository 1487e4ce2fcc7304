package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
)

// StallFrame opens a connection to addr and starts a request frame that it
// never finishes: the length prefix of a frame of announced bytes (length
// prefix included), a valid JSON header of the given code, then sent bytes
// of the frame in all, after which it writes nothing more. It is the attack
// the read budget's reserve, its stall watcher and the frame deadline are
// for; tests and the chaos harness use it. The caller closes the returned
// connection. The write is bounded by ctx (a server that applies
// back-pressure may not read the bytes).
func StallFrame(ctx context.Context, addr string, code int32, announced, sent int) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting: stall frame: %w", err)
	}
	frame, err := StallFramePrefix(code, announced, sent)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetWriteDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	_, err = nc.Write(frame)
	if !stop() || err != nil {
		_ = nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("remoting: stall frame: %w", err)
	}
	return nc, nil
}

// StallFramePrefix is what StallFrame writes: the first sent bytes of a
// frame of announced bytes (length prefix included) with a JSON header of
// code and a zero body.
func StallFramePrefix(code int32, announced, sent int) ([]byte, error) {
	head, err := Encode(nil, &Command{Code: code, Opaque: 1, ExtFields: map[string]string{"stalled": "true"}})
	if err != nil {
		return nil, err
	}
	if announced < len(head) || sent > announced || sent < 4 {
		return nil, fmt.Errorf("remoting: stall frame: %d bytes announced, %d sent, header %d", announced, sent, len(head))
	}
	binary.BigEndian.PutUint32(head, uint32(announced-4))
	out := make([]byte, max(sent, len(head)))
	copy(out, head)
	return out[:sent], nil
}
