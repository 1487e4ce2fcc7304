package acl

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// addrRule matches one white-list entry: "*" (any), an exact address, or
// an IPv4 pattern whose segments are a number, "*", a range "a-b" or, in
// the last segment only, a list "{a,b,c}" (RocketMQ's
// RemoteAddressStrategyFactory forms).
type addrRule struct {
	any   bool
	exact string
	// seg[i] is the inclusive range of IPv4 segment i.
	seg [4][2]int
	// last, if set, lists the allowed values of the last segment.
	last map[int]bool
}

// addrMatcher is a white list: any rule matching passes.
type addrMatcher []addrRule

func (m addrMatcher) match(host string) bool {
	if len(m) == 0 || host == "" {
		return false
	}
	ip := net.ParseIP(host).To4()
	for _, r := range m {
		switch {
		case r.any:
			return true
		case r.exact != "":
			if r.exact == host {
				return true
			}
		case ip != nil:
			ok := true
			for i := 0; i < 4 && ok; i++ {
				v := int(ip[i])
				if i == 3 && r.last != nil {
					ok = r.last[v]
				} else {
					ok = v >= r.seg[i][0] && v <= r.seg[i][1]
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// parseAddr reads one white-list entry; "" is no rule. Several entries
// may be given separated by commas outside braces.
func parseAddr(s string) (addrMatcher, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if s == "*" || s == "*.*.*.*" {
		return addrMatcher{{any: true}}, nil
	}
	if !strings.ContainsAny(s, "*-{") {
		if strings.Contains(s, ",") {
			var out addrMatcher
			for _, p := range strings.Split(s, ",") {
				m, err := parseAddr(p)
				if err != nil {
					return nil, err
				}
				out = append(out, m...)
			}
			return out, nil
		}
		if ip := net.ParseIP(s); ip == nil {
			return nil, fmt.Errorf("%w: white address %q is not an address", ErrBadConfig, s)
		}
		return addrMatcher{{exact: s}}, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil, fmt.Errorf("%w: white address pattern %q is not IPv4 a.b.c.d", ErrBadConfig, s)
	}
	var r addrRule
	for i, p := range parts {
		if i == 3 && strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			r.last = map[int]bool{}
			for _, v := range strings.Split(p[1:len(p)-1], ",") {
				n, err := segment(strings.TrimSpace(v))
				if err != nil {
					return nil, fmt.Errorf("%w: white address pattern %q", err, s)
				}
				r.last[n] = true
			}
			continue
		}
		lo, hi, err := segRange(p)
		if err != nil {
			return nil, fmt.Errorf("%w: white address pattern %q", err, s)
		}
		r.seg[i] = [2]int{lo, hi}
	}
	return addrMatcher{r}, nil
}

func segRange(p string) (int, int, error) {
	if p == "*" {
		return 0, 255, nil
	}
	if a, b, ok := strings.Cut(p, "-"); ok {
		lo, err := segment(a)
		if err != nil {
			return 0, 0, err
		}
		hi, err := segment(b)
		if err != nil || hi < lo {
			return 0, 0, ErrBadConfig
		}
		return lo, hi, nil
	}
	n, err := segment(p)
	return n, n, err
}

func segment(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 255 {
		return 0, ErrBadConfig
	}
	return n, nil
}

// hostOf strips a port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
