package message

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

const upperHexDigits = "0123456789ABCDEF"

// putUpperHex writes the upper-case hex of src into dst (2*len(src) bytes).
func putUpperHex(dst, src []byte) {
	for i, c := range src {
		dst[2*i] = upperHexDigits[c>>4]
		dst[2*i+1] = upperHexDigits[c&0xF]
	}
}

// OffsetMsgID returns the offset message id of a record: the store host's
// address bytes, its port as an int32 and the physical (commitlog) offset as
// an int64, in upper-case hex. That is 32 characters for an IPv4 host and 56
// for an IPv6 one (an IPv4-mapped IPv6 address counts as IPv6, as in the
// record layout). The zero AddrPort is formatted as 0.0.0.0:0.
// physicalOffset should be non-negative: ParseOffsetMsgID rejects negative
// offsets.
func OffsetMsgID(storeHost netip.AddrPort, physicalOffset int64) string {
	if !storeHost.IsValid() {
		storeHost = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	var raw [ipv6HostLen + 8]byte
	n := putHost(raw[:], 0, storeHost)
	be.PutUint64(raw[n:], uint64(physicalOffset))
	n += 8
	var out [2 * len(raw)]byte
	putUpperHex(out[:], raw[:n])
	return string(out[:2*n])
}

// ParseOffsetMsgID parses an offset message id: exactly 32 hex characters
// (IPv4 store host) or 56 (IPv6), in either case. It returns ErrBadMsgID
// (wrapped) for any other length, a non-hex character, a port that does not
// fit in 16 bits or a negative offset. A 16-byte address comes back as
// netip.AddrFrom16 makes it (IPv4-mapped addresses stay mapped), so
// OffsetMsgID of the result gives back the id in upper case.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var ipLen int
	switch len(id) {
	case 32:
		ipLen = 4
	case 56:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d, want 32 or 56", ErrBadMsgID, len(id))
	}
	var raw [ipv6HostLen + 8]byte
	for i := 0; i < len(id); i += 2 {
		hi, ok1 := unhex(id[i])
		lo, ok2 := unhex(id[i+1])
		if !ok1 || !ok2 {
			return netip.AddrPort{}, 0, fmt.Errorf("%w: non-hex character near position %d", ErrBadMsgID, i)
		}
		raw[i/2] = hi<<4 | lo
	}
	port := be.Uint32(raw[ipLen:])
	if port > math.MaxUint16 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: port %d", ErrBadMsgID, port)
	}
	offset := int64(be.Uint64(raw[ipLen+4:]))
	if offset < 0 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: negative offset %d", ErrBadMsgID, offset)
	}
	var addr netip.Addr
	if ipLen == 4 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(raw[:16]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), offset, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// UniqIDGenerator makes UNIQ_KEY values in the Java client's layout, all
// upper-case hex:
//
//	IPv4: ip(4) pid(2) hash(4) | ms-in-month(4) counter(2)   = 32 chars
//	IPv6: ip(16) pid(2) hash(4) | ms-in-month(4) counter(2)  = 56 chars
//
// Where Java puts a class-loader hash, hash is a random per-generator seed
// plus the number of months since year 0, so it changes at every month
// boundary; months are counted in UTC. Each id is derived from a logical
// (millisecond, counter) pair that strictly increases from one call to the
// next: the counter restarts at 0 when the clock moves forward, and when the
// clock stands still or goes back the generator keeps the last millisecond
// and counts on, borrowing the next millisecond after 65 536 ids. So ids are
// unique within a generator across bursts, clock steps backwards and month
// boundaries; across processes they are unique in the usual probabilistic
// sense (ip, pid and random seed).
//
// A UniqIDGenerator is safe for concurrent use.
type UniqIDGenerator struct {
	now    func() time.Time
	prefix []byte // ip + pid
	seed   uint32

	mu         sync.Mutex
	lastMs     int64 // logical millisecond of the last id
	seq        int   // counter within lastMs
	monthStart int64 // ms of the start of the month holding lastMs, UTC
	monthEnd   int64 // ms of the start of the next month
	head       []byte
}

// NewUniqIDGenerator returns a generator for a client at ip with process id
// pid (only its low 16 bits are used). An invalid ip counts as 0.0.0.0. now
// is the clock; nil means time.Now.
func NewUniqIDGenerator(ip netip.Addr, pid int, now func() time.Time) *UniqIDGenerator {
	return newUniqIDGenerator(ip, pid, now, rand.Uint32())
}

func newUniqIDGenerator(ip netip.Addr, pid int, now func() time.Time, seed uint32) *UniqIDGenerator {
	if now == nil {
		now = time.Now
	}
	var prefix []byte
	switch {
	case !ip.IsValid():
		prefix = make([]byte, 4, 6)
	case ip.Is4():
		a := ip.As4()
		prefix = append(make([]byte, 0, 6), a[:]...)
	default:
		a := ip.As16()
		prefix = append(make([]byte, 0, 18), a[:]...)
	}
	prefix = append(prefix, byte(pid>>8), byte(pid))
	return &UniqIDGenerator{
		now:    now,
		prefix: prefix,
		seed:   seed,
		lastMs: math.MinInt64,
		head:   make([]byte, 2*(len(prefix)+4)),
	}
}

// Next returns a new id. Safe for concurrent use.
func (g *UniqIDGenerator) Next() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.now().UnixMilli()
	if ms > g.lastMs {
		g.seq = 0
	} else {
		ms = g.lastMs
		g.seq++
		if g.seq > math.MaxUint16 {
			ms++
			g.seq = 0
		}
	}
	g.lastMs = ms
	if ms < g.monthStart || ms >= g.monthEnd {
		g.setMonth(ms)
	}
	var buf [56]byte
	n := copy(buf[:], g.head)
	var tail [6]byte
	be.PutUint32(tail[:], uint32(ms-g.monthStart))
	be.PutUint16(tail[4:], uint16(g.seq))
	putUpperHex(buf[n:], tail[:])
	return string(buf[:n+12])
}

// setMonth recomputes the month bounds and the hex head (ip, pid, hash) for
// the month holding ms.
func (g *UniqIDGenerator) setMonth(ms int64) {
	t := time.UnixMilli(ms).UTC()
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	g.monthStart = start.UnixMilli()
	g.monthEnd = start.AddDate(0, 1, 0).UnixMilli()
	months := int64(t.Year())*12 + int64(t.Month()) - 1
	var hash [4]byte
	be.PutUint32(hash[:], g.seed+uint32(months))
	putUpperHex(g.head, g.prefix)
	putUpperHex(g.head[2*len(g.prefix):], hash[:])
}
