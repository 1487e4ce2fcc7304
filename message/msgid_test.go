package message

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOffsetMsgID(t *testing.T) {
	tests := []struct {
		host   string
		offset int64
		id     string
	}{
		{"127.0.0.1:10911", 0x206, "7F00000100002A9F0000000000000206"},
		{"127.0.0.1:10911", 0, "7F00000100002A9F0000000000000000"},
		{"10.1.2.3:65535", 1<<62 + 5, "0A0102030000FFFF4000000000000005"},
		{"0.0.0.0:0", 0x7FFFFFFFFFFFFFFF, "00000000000000007FFFFFFFFFFFFFFF"},
		{"[2001:db8::2]:10911", 0x206, "20010DB800000000000000000000000200002A9F0000000000000206"},
		{"[::ffff:127.0.0.1]:1", 1, "00000000000000000000FFFF7F000001000000010000000000000001"},
	}
	for _, tc := range tests {
		host := netip.MustParseAddrPort(tc.host)
		if got := OffsetMsgID(host, tc.offset); got != tc.id {
			t.Errorf("OffsetMsgID(%s, %#x) = %s, want %s", tc.host, tc.offset, got, tc.id)
		}
		for _, id := range []string{tc.id, strings.ToLower(tc.id)} {
			gotHost, gotOff, err := ParseOffsetMsgID(id)
			if err != nil {
				t.Errorf("ParseOffsetMsgID(%s): %v", id, err)
				continue
			}
			if gotHost != host || gotOff != tc.offset {
				t.Errorf("ParseOffsetMsgID(%s) = %v, %#x; want %v, %#x", id, gotHost, gotOff, host, tc.offset)
			}
		}
	}
	if got := OffsetMsgID(netip.AddrPort{}, 1); got != "00000000000000000000000000000001" {
		t.Errorf("zero host: %s", got)
	}
}

func TestParseOffsetMsgIDBad(t *testing.T) {
	tests := []string{
		"",
		"7F00000100002A9F000000000000020",   // 31 chars
		"7F00000100002A9F00000000000002060", // 33 chars
		"7F00000100002A9F00000000000002G6",  // non-hex
		"7F00000100002A9F000000000000020 ",  // space
		"7F00000100012A9F0000000000000206",  // port 0x12A9F
		"7F00000100002A9F8000000000000206",  // negative offset
		"C00002024A220000000094169948000",   // a UNIQ_KEY minus one char
		strings.Repeat("0", 55),
		strings.Repeat("0", 57),
		"20010DB800000000000000000000000200002A9F00000000000002zz",
	}
	for _, id := range tests {
		if _, _, err := ParseOffsetMsgID(id); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("ParseOffsetMsgID(%q) err = %v, want ErrBadMsgID", id, err)
		}
	}
}

// fakeClock is a settable clock for UniqIDGenerator tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func isUpperHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func TestUniqIDLayout(t *testing.T) {
	clock := &fakeClock{t: time.Date(2024, 5, 1, 0, 0, 1, 500e6, time.UTC)}
	g := newUniqIDGenerator(netip.MustParseAddr("192.168.1.2"), 0x1234ABCD, clock.now, 0x10000000)
	months := uint32(2024*12 + 4)
	hash := hex8(0x10000000 + months)
	want := "C0A80102" + "ABCD" + hash + "000005DC" + "0000"
	if got := g.Next(); got != want {
		t.Fatalf("Next = %s, want %s", got, want)
	}
	if got := g.Next(); got != "C0A80102ABCD"+hash+"000005DC0001" {
		t.Fatalf("second Next = %s", got)
	}
	clock.set(clock.t.Add(time.Millisecond))
	if got := g.Next(); got != "C0A80102ABCD"+hash+"000005DD0000" {
		t.Fatalf("next ms = %s", got)
	}

	g6 := newUniqIDGenerator(netip.MustParseAddr("2001:db8::1"), 7, clock.now, 0)
	id := g6.Next()
	if len(id) != 56 || !isUpperHex(id) || !strings.HasPrefix(id, "20010DB8000000000000000000000001"+"0007") {
		t.Fatalf("IPv6 id %s", id)
	}
	gz := NewUniqIDGenerator(netip.Addr{}, 1, nil)
	if id := gz.Next(); len(id) != 32 || !strings.HasPrefix(id, "000000000001") {
		t.Fatalf("invalid ip id %s", id)
	}
}

func hex8(v uint32) string {
	var b [4]byte
	be.PutUint32(b[:], v)
	var out [8]byte
	putUpperHex(out[:], b[:])
	return string(out[:])
}

func TestUniqIDUnique(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 4242, nil)
	seen := make(map[string]struct{}, 100_000)
	for range 100_000 {
		id := g.Next()
		if len(id) != 32 || !isUpperHex(id) {
			t.Fatalf("bad id %q", id)
		}
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = struct{}{}
	}
}

func TestUniqIDFrozenAndBackwardClock(t *testing.T) {
	// A clock that never moves: more than 65 536 ids must borrow the next
	// milliseconds. Then the clock jumps back an hour: still no duplicates.
	clock := &fakeClock{t: time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)}
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, clock.now)
	seen := make(map[string]struct{})
	gen := func(n int) {
		for range n {
			id := g.Next()
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate id %s after %d ids", id, len(seen))
			}
			seen[id] = struct{}{}
		}
	}
	gen(200_000)
	clock.set(clock.t.Add(-time.Hour))
	gen(10_000)
}

func TestUniqIDMonthBoundary(t *testing.T) {
	// The last millisecond of January, frozen: the borrowed milliseconds run
	// into February, whose ids restart the in-month counter at 0 but carry a
	// different hash. Then real February time arrives at the same
	// ms-in-month values as January's ids.
	end := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: end.Add(-time.Millisecond)}
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, clock.now)
	seen := make(map[string]struct{})
	var janHash, febHash string
	for i := range 3 * 65_536 {
		id := g.Next()
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate %s at %d", id, i)
		}
		seen[id] = struct{}{}
		if i == 0 {
			janHash = id[12:20]
		}
		if i == 65_536 {
			febHash = id[12:20]
			if id[20:] != "000000000000" {
				t.Fatalf("first borrowed February id %s should be at ms 0, counter 0", id)
			}
		}
	}
	if janHash == febHash {
		t.Fatalf("hash did not change across the month: %s", janHash)
	}
	// A month later the wall clock reaches the start of March; January's ms
	// offsets repeat, the hash does not.
	clock.set(time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC))
	for range 1000 {
		id := g.Next()
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate %s in March", id)
		}
		seen[id] = struct{}{}
	}
}

func TestUniqIDConcurrent(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, nil)
	const workers, per = 8, 5_000
	results := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, per)
			for i := range ids {
				ids[i] = g.Next()
			}
			results[w] = ids
		}()
	}
	wg.Wait()
	seen := make(map[string]struct{}, workers*per)
	for _, ids := range results {
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = struct{}{}
		}
	}
}
