package store

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// twinStores are two stores fed the same batches, one through Put and one
// through PutEncoded, whose CommitLogs must stay byte-identical.
type twinStores struct {
	put, enc *Store
}

func newTwins(t testing.TB) *twinStores {
	t.Helper()
	tw := &twinStores{put: mustOpen(t, testConfig(t.TempDir())), enc: mustOpen(t, testConfig(t.TempDir()))}
	t.Cleanup(func() {
		_ = tw.put.Close()
		_ = tw.enc.Close()
	})
	return tw
}

// encode returns the records of msgs as a proposer encodes them.
func encodeAll(t testing.TB, msgs []*message.Ext) [][]byte {
	t.Helper()
	recs := make([][]byte, len(msgs))
	for i, m := range msgs {
		r, err := message.AppendRecord(nil, m)
		if err != nil {
			t.Fatalf("encode message %d: %v", i, err)
		}
		recs[i] = r
	}
	return recs
}

// apply writes recs as one batch to both stores (Put gets the decoded
// messages) and checks that results, errors and the new CommitLog bytes
// are the same.
func (tw *twinStores) apply(t testing.TB, recs [][]byte) error {
	t.Helper()
	var msgs []*message.Ext
	for _, r := range recs {
		m, _, err := message.DecodeRecord(r)
		if err != nil {
			m = nil
		}
		msgs = append(msgs, m)
	}
	seq := tw.put.LastSeq() + 1
	from := tw.put.MaxPhysicalOffset()
	encRes, encErr := tw.enc.PutEncoded(seq, recs)
	var putRes []PutResult
	var putErr error
	if encErr == nil {
		// Only batches PutEncoded accepts must be accepted by Put; Put
		// validates its own input (a nil message) differently.
		putRes, putErr = tw.put.Put(seq, msgs)
		if putErr != nil {
			t.Fatalf("PutEncoded accepted a batch Put refuses: %v", putErr)
		}
		if !reflect.DeepEqual(encRes, putRes) {
			t.Fatalf("results differ:\nPutEncoded %+v\nPut        %+v", encRes, putRes)
		}
	}
	a, b := logBytesFrom(t, tw.put, from), logBytesFrom(t, tw.enc, from)
	if !bytes.Equal(a, b) {
		t.Fatalf("commitlogs differ after seq %d:\nPut        %x\nPutEncoded %x", seq, a, b)
	}
	return encErr
}

func logBytesFrom(t testing.TB, s *Store, from int64) []byte {
	t.Helper()
	var out []byte
	err := s.ScanCommitLog(from, func(off int64, p []byte) error {
		out = fmt.Appendf(out, "%d:", off)
		out = append(out, p...)
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

func TestPutEncodedMatchesPut(t *testing.T) {
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(netip.MustParseAddr("127.0.0.1").As16()), 9876)
	cases := []struct {
		name string
		msgs func() []*message.Ext
	}{
		{"plain", func() []*message.Ext { return []*message.Ext{testMsg("T", 0, 1, 100), testMsg("T", 1, 2, 0)} }},
		{"same queue twice", func() []*message.Ext { return []*message.Ext{testMsg("T", 0, 3, 10), testMsg("T", 0, 4, 10)} }},
		{"ipv6 hosts", func() []*message.Ext {
			m := testMsg("T6", 2, 5, 64)
			m.BornHost, m.StoreHost = v6, mapped
			return []*message.Ext{m}
		}},
		{"no properties", func() []*message.Ext {
			m := testMsg("T", 3, 6, 5)
			m.Properties = nil
			return []*message.Ext{m}
		}},
		{"prepared transaction", func() []*message.Ext {
			m := testMsg("T", 0, 7, 5)
			m.SysFlag = message.SysFlagTransactionPrepared
			return []*message.Ext{m, testMsg("T", 0, 8, 5)}
		}},
		{"many queues", func() []*message.Ext {
			var out []*message.Ext
			for i := 0; i < 40; i++ {
				out = append(out, testMsg(fmt.Sprintf("Topic%d", i%3), int32(i%5), 100+i, 300))
			}
			return out
		}},
		{"empty batch", func() []*message.Ext { return nil }},
	}
	tw := newTwins(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tw.apply(t, encodeAll(t, tc.msgs())); err != nil {
				t.Fatalf("PutEncoded: %v", err)
			}
		})
	}
}

// TestPutEncodedNonCanonical feeds records whose properties are not in the
// encoder's order: PutEncoded re-encodes them, as Put would.
func TestPutEncodedNonCanonical(t *testing.T) {
	rec := func(props string) []byte {
		m := testMsg("T", 0, 1, 16)
		m.Properties = nil
		r, err := message.AppendRecord(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		// Replace the (empty) properties: TOTALSIZE and the length field
		// grow by len(props).
		r = append(r[:len(r)-2], byte(len(props)>>8), byte(len(props)))
		r = append(r, props...)
		r[0], r[1], r[2], r[3] = byte(len(r)>>24), byte(len(r)>>16), byte(len(r)>>8), byte(len(r))
		return r
	}
	cases := []struct {
		name  string
		props string
	}{
		{"descending", "TAGS\x01a\x02KEYS\x01k1 k2\x02"},
		{"duplicate", "KEYS\x01a\x02KEYS\x01b\x02"},
		{"ascending", "A\x01\x02B\x01x\x02"},
	}
	tw := newTwins(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rec(tc.props)
			if _, _, err := message.DecodeRecord(r); err != nil {
				t.Fatalf("test record does not decode: %v", err)
			}
			if err := tw.apply(t, [][]byte{r}); err != nil {
				t.Fatalf("PutEncoded: %v", err)
			}
		})
	}
}

func TestPutEncodedRejects(t *testing.T) {
	good := encodeAll(t, []*message.Ext{testMsg("T", 0, 1, 32)})[0]
	big := testMsg("T", 0, 2, 17<<10)
	bigRec := encodeAll(t, []*message.Ext{big})[0]
	negQueue := testMsg("T", 0, 3, 8)
	negQueue.QueueID = -1
	longKey := testMsg("T", 0, 4, 8)
	longKey.SetProperty(message.PropertyKeys, string(bytes.Repeat([]byte("k"), 1100)))
	cases := []struct {
		name string
		rec  []byte
	}{
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"body crc", func() []byte {
			r := append([]byte(nil), good...)
			r[len(r)-len(good)/2] ^= 0xFF // a body byte
			return r
		}()},
		{"body too large", bigRec},
		{"negative queue", encodeAll(t, []*message.Ext{negQueue})[0]},
		{"key too long", encodeAll(t, []*message.Ext{longKey})[0]},
	}
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.MaxPhysicalOffset()
			_, err := s.PutEncoded(s.LastSeq()+1, [][]byte{good, tc.rec})
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("err = %v, want ErrBadMessage", err)
			}
			if s.MaxPhysicalOffset() != before {
				t.Fatal("a refused batch wrote to the CommitLog")
			}
		})
	}
}

// FuzzPutEncoded checks that whatever record PutEncoded accepts, it stores
// exactly the bytes Put stores for the decoded message, and that it never
// panics.
func FuzzPutEncoded(f *testing.F) {
	for _, m := range []*message.Ext{testMsg("T", 0, 1, 20), testMsg("Topic", 3, 2, 0)} {
		r, err := message.AppendRecord(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(r)
	}
	f.Add([]byte{0, 0, 0, 8, 0xDA, 0xA3, 0x20, 0xA7})
	tw := newTwins(f)
	f.Fuzz(func(t *testing.T, rec []byte) {
		_ = tw.apply(t, [][]byte{rec})
	})
}
