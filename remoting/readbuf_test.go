package remoting

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// chunkReader hands out its bytes in reads bounded by chunks: the
// stream is cut into pieces of the sizes in chunks (in turn, repeated),
// and a read returns at most the rest of the current piece and never more
// than asked; then io.EOF.
type chunkReader struct {
	data   []byte
	chunks []int
	i      int
	rest   int // of the current piece
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.rest == 0 {
		r.rest = max(1, r.chunks[r.i%len(r.chunks)])
		r.i++
	}
	n := copy(p, r.data[:min(len(r.data), r.rest)])
	r.data = r.data[n:]
	r.rest -= n
	return n, nil
}

// frameStream returns count length-prefixed frames of varied sizes (some
// above SmallReadBuffer), each filled with its index, and the frames.
func frameStream(count int) ([]byte, [][]byte) {
	var stream []byte
	var frames [][]byte
	for i := range count {
		size := 8 + (i*7919)%2000
		if i%17 == 5 {
			size = SmallReadBuffer + i*13 // a frame larger than the small buffer
		}
		f := bytes.Repeat([]byte{byte(i)}, size)
		stream = binary.BigEndian.AppendUint32(stream, uint32(size))
		stream = append(stream, f...)
		frames = append(frames, f)
	}
	return stream, frames
}

// readFrames reads frames through r as the read loop does (adapt before
// each) and checks them against want; it counts the switches between the
// small and large buffers.
func readFrames(t *testing.T, r *connReader, want [][]byte) (grew, shrank int) {
	t.Helper()
	for i, w := range want {
		prev := r.cur
		br := r.adapt()
		switch {
		case prev == r.small && br != r.small:
			grew++
		case prev != r.small && br == r.small:
			shrank++
		}
		f, err := readFrameBuffered(br, 1<<20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(f, w) {
			t.Fatalf("frame %d: %d bytes, want %d (first %v)", i, len(f), len(w), f[:min(4, len(f))])
		}
	}
	return grew, shrank
}

// TestConnReaderSwitchesBuffers: reads that fill the small buffer switch
// the connection to a large one, carrying over what the small one held
// unread (frames cut anywhere); light reads (a frame each, as a peer that
// sends one request at a time is read) switch it back once the buffer is
// empty; every frame arrives whole and in order.
func TestConnReaderSwitchesBuffers(t *testing.T) {
	stream, frames := frameStream(400)
	// Bursts of full reads cut anywhere, then reads of one frame each,
	// then bursts again, in turn.
	var chunks []int
	for i := 0; i < len(frames); {
		burst := 0
		for end := i + 40; i < end && i < len(frames); i++ {
			burst += 4 + len(frames[i])
		}
		for ; burst > SmallReadBuffer; burst -= SmallReadBuffer {
			chunks = append(chunks, SmallReadBuffer)
		}
		chunks = append(chunks, burst)
		for end := i + 40; i < end && i < len(frames); i++ {
			chunks = append(chunks, 4+len(frames[i]))
		}
	}
	bufs := newReadBuffers(1)
	r := newConnReader(&chunkReader{data: stream, chunks: chunks}, bufs)
	grew, shrank := readFrames(t, r, frames)
	if grew < 2 || shrank < 2 {
		t.Fatalf("grew %d times, shrank %d: want both, repeatedly", grew, shrank)
	}
	if got := bufs.grown.Load(); got != int64(grew) {
		t.Fatalf("%d loans for %d switches", got, grew)
	}
	r.release()
	if n := bufs.lent.Load(); n != 0 {
		t.Fatalf("%d buffers lent after release", n)
	}
}

// TestConnReaderLimits: without a set of large buffers, or with every one
// lent, a connection keeps reading through its small buffer.
func TestConnReaderLimits(t *testing.T) {
	stream, frames := frameStream(100)
	for _, bufs := range []*readBuffers{nil, newReadBuffers(0)} {
		r := newConnReader(&chunkReader{data: stream, chunks: []int{SmallReadBuffer}}, bufs)
		if grew, _ := readFrames(t, r, frames); grew != 0 {
			t.Fatalf("grew %d times without a buffer to borrow", grew)
		}
	}
	bufs := newReadBuffers(1)
	held := bufs.take(nil)
	if held == nil || bufs.take(nil) != nil {
		t.Fatal("a set of one lent two buffers")
	}
	r := newConnReader(&chunkReader{data: stream, chunks: []int{SmallReadBuffer}}, bufs)
	if grew, _ := readFrames(t, r, frames); grew != 0 {
		t.Fatalf("grew %d times with the only buffer lent", grew)
	}
	bufs.give(held)
	if n := bufs.lent.Load(); n != 0 {
		t.Fatalf("%d lent", n)
	}
}

// FuzzConnReader: whatever sizes the reads come in, the frames arrive
// whole and in order, and a released reader holds no loan.
func FuzzConnReader(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0x10, 0x01, 0x80})
	f.Add([]byte{0x80, 0x00, 0x01})
	stream, frames := frameStream(60)
	f.Fuzz(func(t *testing.T, sizes []byte) {
		if len(sizes) == 0 {
			return
		}
		chunks := make([]int, len(sizes))
		for i, s := range sizes {
			chunks[i] = int(s) * 512 // 0 … 130 560 bytes
		}
		bufs := newReadBuffers(1)
		r := newConnReader(&chunkReader{data: stream, chunks: chunks}, bufs)
		readFrames(t, r, frames)
		r.release()
		if n := bufs.lent.Load(); n != 0 {
			t.Fatalf("%d lent after release", n)
		}
	})
}

// TestServerLendsReadBuffer: over real TCP, a client that pipelines
// bursts of requests gets a large read buffer; once it sends one request
// at a time the buffer goes back; every answer is the right one
// throughout; a closed connection returns what it borrowed.
func TestServerLendsReadBuffer(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	nc := dialRaw(t, s)
	opaque := int32(0)
	burst := func(n int) {
		var frames []byte
		first := opaque
		for range n {
			opaque++
			req := NewRequest(SendMessage, nil, []byte(fmt.Sprintf("%0900d", opaque)))
			req.Opaque = opaque
			var err error
			if frames, err = Encode(frames, req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		// Workers answer in any order: each answer must be its request's.
		seen := make(map[int32]bool, n)
		for range n {
			resp := readCmd(t, nc)
			if resp.Opaque <= first || resp.Opaque > first+int32(n) || seen[resp.Opaque] ||
				string(resp.Body) != fmt.Sprintf("%0900d", resp.Opaque) {
				t.Fatalf("answer with opaque %d (burst %d…%d), body %.20q…", resp.Opaque, first+1, first+int32(n), resp.Body)
			}
			seen[resp.Opaque] = true
		}
	}
	testwait.For(t, guard, "a large read buffer lent after bursts of 300 requests", func() bool {
		burst(300)
		return s.readBufs.grown.Load() > 0
	})
	testwait.For(t, guard, "the large read buffer returned once requests come one at a time", func() bool {
		burst(1)
		return s.readBufs.lent.Load() == 0
	})
	burst(300)
	_ = nc.Close()
	testwait.For(t, guard, "a closed connection's read buffer returned", func() bool {
		return s.readBufs.lent.Load() == 0
	})
}
