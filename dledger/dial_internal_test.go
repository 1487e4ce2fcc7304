package dledger

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

type mapResolver map[string][]string

func (m mapResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestCheckAdvertise: names and IPs peers can dial are accepted as they
// are (unresolved); an unspecified IP, no host or no port is refused.
func TestCheckAdvertise(t *testing.T) {
	for addr, ok := range map[string]bool{
		"broker-a-0.broker-a.ns.svc.cluster.local:40911": true,
		"n0.test:1": true, "127.0.0.1:40911": true, "[::1]:40911": true,
		"0.0.0.0:40911": false, "[::]:40911": false, ":40911": false,
		"n0.test": false, "n0.test:0": false, "n0.test:x": false,
	} {
		if err := checkAdvertise(addr); (err == nil) != ok {
			t.Errorf("%s: %v, want ok %v", addr, err, ok)
		}
	}
}

// TestDialByName: a name is resolved at the dial and its addresses tried
// in order (one refusing, the next answering); a name that does not
// resolve, or resolves to nothing, fails without dialling.
func TestDialByName(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// 127.0.0.2 listens on nothing at that port: refused.
	r := mapResolver{"two.test": {"127.0.0.2", "127.0.0.1"}, "none.test": {}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialByName(ctx, r, net.JoinHostPort("two.test", port))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteAddr().String(); got != ln.Addr().String() {
		t.Fatalf("dialled %s, want %s", got, ln.Addr())
	}
	c.Close()
	if _, err := dialByName(ctx, r, net.JoinHostPort("none.test", port)); !errors.Is(err, errNoAddress) {
		t.Fatalf("a name without addresses: %v", err)
	}
	var dnsErr *net.DNSError
	if _, err := dialByName(ctx, r, net.JoinHostPort("unknown.test", port)); !errors.As(err, &dnsErr) {
		t.Fatalf("an unknown name: %v", err)
	}
}
