package remoting

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestSpecialBytes: the eight-byte test agrees with jsonPlain for every byte
// at every position, beside plain bytes and beside other bytes.
func TestSpecialBytes(t *testing.T) {
	word := func(b []byte) uint64 {
		var v uint64
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	ref := func(b []byte) bool {
		for _, c := range b {
			if !jsonPlain[c] {
				return false
			}
		}
		return true
	}
	for c := range 256 {
		for pos := range 8 {
			for _, fill := range []byte{'a', ' ', '~', '#', ']'} {
				b := bytes.Repeat([]byte{fill}, 8)
				b[pos] = byte(c)
				if got := specialBytes(word(b)) == 0; got != ref(b) {
					t.Fatalf("specialBytes(%q) == 0: %v", b, got)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 8)
	for range 200_000 {
		for i := range b {
			// Mostly bytes near the edges of the classes.
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(256))
			case 1:
				b[i] = byte(0x1c + rng.IntN(8))
			case 2:
				b[i] = []byte{'"', '\\', 0x7f, 0x80, 0x21, 0x23, 0x5b, 0x5d}[rng.IntN(8)]
			default:
				b[i] = byte(0x20 + rng.IntN(0x60))
			}
		}
		if got := specialBytes(word(b)) == 0; got != ref(b) {
			t.Fatalf("specialBytes(%q) == 0: %v", b, got)
		}
		s := string(b) + string(b[:rng.IntN(8)])
		s = s[rng.IntN(3):]
		s += s[:rng.IntN(len(s)+1)]
		want := 0
		for want < len(s) && jsonPlain[s[want]] {
			want++
		}
		if got := plainPrefix(s); got != want {
			t.Fatalf("plainPrefix(%q) = %d, want %d", s, got, want)
		}
		if got := plainEnd([]byte(s), 0); got != want {
			t.Fatalf("plainEnd(%q) = %d, want %d", s, got, want)
		}
	}
}

// inPlaceSeeds are frames whose strings unescape in place: escapes next
// to invalid UTF-8 (which grows when replaced), surrogates, long runs.
func inPlaceSeeds() [][]byte {
	seeds := fuzzSeeds()
	for _, h := range []string{
		capturedSendV2,
		"{\"extFields\":{\"k\\u0031\":\"\xff\xfe\\n\xff\",\"k1\":\"\\u00e9\xc3\",\"a\":\"x\\\"y\"}}",
		"{\"remark\":\"\\u0041\xff\xff\xff\xff\xffabc\",\"extFields\":{\"p\":\"\\n\\n\\n\xff\xff\xff\xff\xff\xff\xff\\u0001z\"}}",
		`{"extFields":{"a":"1","a":"2"},"EXTFIELDS":{"b":"\ud83d\ude00\ud800x\ud800\u0041"}}`,
		`{"code":"310","flag":0,"extFields":{"a":"` + string(bytes.Repeat([]byte(`0123456789\t`), 20)) + `"}}`,
	} {
		seeds = append(seeds, jsonFrame(h, []byte("body")))
	}
	return seeds
}

// FuzzDecodeInPlace: a frame decoded in place (a connection's own buffer)
// decodes exactly as Decode decodes a frame it copies from, or fails
// alike, listed fields included.
func FuzzDecodeInPlace(f *testing.F) {
	for _, s := range inPlaceSeeds() {
		f.Add(s)
	}
	codes := []int32{SendMessage, SendMessageV2, SendBatchMessage}
	f.Fuzz(func(t *testing.T, frame []byte) {
		want, wantErr := decodeFrame(frame, DefaultHeaderLimits, true, codes)
		own := bytes.Clone(frame)
		got, err := decodeFrameMode(own, DefaultHeaderLimits, true, codes, true)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("errors differ: in place %v, copied %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if !sameCommand(got, want) || !slices.Equal(got.ExtList, want.ExtList) {
			t.Fatalf("in place %v %q, copied %v %q", got, got.ExtList, want, want.ExtList)
		}
	})
}

// FuzzJSONHeaderInPlace: the JSON header parser gives the same fields and
// the same errors whether it unescapes into a copy or into the header.
func FuzzJSONHeaderInPlace(f *testing.F) {
	for _, s := range inPlaceSeeds() {
		if len(s) >= 4 && s[0] == SerializeJSON {
			if hlen := int(s[1])<<16 | int(s[2])<<8 | int(s[3]); hlen <= len(s)-4 {
				f.Add(s[4 : 4+hlen])
			}
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		var want, got Command
		wantPairs, wantErr := decodeJSONHeader(header, &want, unlimitedHeader, nil)
		h := bytes.Clone(header)
		pairs, err := decodeJSONHeaderIn(h, h, &got, unlimitedHeader, nil)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("errors differ on %q: in place %v, copied %v", header, err, wantErr)
		}
		if err != nil {
			return
		}
		if !sameCommand(&got, &want) || !slices.Equal(pairs, wantPairs) {
			t.Fatalf("in place %+v %q, copied %+v %q", got, pairs, want, wantPairs)
		}
	})
}

// chunkConn is a peer that sends stream once, at most chunk bytes per
// read, then ends.
type chunkConn struct {
	streamConn
	chunk int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if c.at == len(c.stream) {
		return 0, errors.New("end of stream")
	}
	n := copy(p[:min(len(p), c.chunk)], c.stream[c.at:])
	c.at += n
	return n, nil
}

// TestServerReadInPlace: a server connection, which decodes small frames
// in place, reads every frame as Decode does, whether the frame is
// buffered whole or arrives in pieces, and its commands do not change
// when later frames are read.
func TestServerReadInPlace(t *testing.T) {
	var frames [][]byte
	for _, s := range inPlaceSeeds() {
		if _, err := Decode(s); err == nil {
			frames = append(frames, s)
		}
	}
	large := jsonFrame(capturedSend, bytes.Repeat([]byte("L"), SmallFrameSize+10))
	frames = append(frames, large, jsonFrame(capturedSendV2, bytes.Repeat([]byte("m"), inPlaceFrameSize)))
	var stream []byte
	for _, f := range frames {
		stream = append(stream, prefixed(f)...)
	}
	for _, chunk := range []int{1 << 20, 4096, 777, 13} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			c := newConn(&chunkConn{streamConn: streamConn{stream: stream}, chunk: chunk}, connConfig{
				maxFrame:    DefaultMaxFrameSize,
				idleTimeout: time.Minute,
				logger:      hclog.NewNullLogger(),
				listCodes:   []int32{SendMessage, SendMessageV2},
				budget:      newBudget(256<<20, 32<<20, 64<<20),
			})
			br := bufio.NewReaderSize(c.nc, 32<<10)
			var got []*Command
			for range frames {
				cmd, held, err := c.readCommand(br)
				if err != nil {
					t.Fatal(err)
				}
				c.release(held)
				got = append(got, cmd)
			}
			for i, f := range frames {
				want, err := decodeFrame(f, DefaultHeaderLimits, true, c.cfg.listCodes)
				if err != nil {
					t.Fatal(err)
				}
				if !sameCommand(got[i], want) || !slices.Equal(got[i].ExtList, want.ExtList) {
					t.Fatalf("frame %d: read %v %q, decoded %v %q", i, got[i], got[i].ExtList, want, want.ExtList)
				}
			}
		})
	}
}
