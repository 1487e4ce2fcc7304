package console

// A node's operator endpoints (package ops): where they are, /status and
// /metrics. The address is the node's http_addr setting, read once per
// node with GET_BROKER_CONFIG (26) and kept while the console runs.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ledgermq/ledgermq/ops"
)

// errNoHTTP: the node serves no operator endpoints the console can reach
// (http_addr empty, or port 0 chosen at start and not advertised).
var errNoHTTP = errors.New("console: node has no reachable http_addr")

// nodes finds and asks nodes' operator endpoints.
type nodes struct {
	admin Admin
	http  *http.Client

	mu    sync.Mutex
	addrs map[string]string // client address → http address
}

func newNodes(a Admin, hc *http.Client) *nodes {
	return &nodes{admin: a, http: hc, addrs: map[string]string{}}
}

// httpAddr returns the operator address of the node at clientAddr.
func (n *nodes) httpAddr(ctx context.Context, clientAddr string) (string, error) {
	n.mu.Lock()
	addr, ok := n.addrs[clientAddr]
	n.mu.Unlock()
	if ok {
		return addr, nil
	}
	cfg, err := adminFrom(ctx, n.admin).BrokerConfig(ctx, clientAddr)
	if err != nil {
		return "", fmt.Errorf("console: config of %s: %w", clientAddr, err)
	}
	addr, err = resolveHTTPAddr(cfg["http_addr"], clientAddr)
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	n.addrs[clientAddr] = addr
	n.mu.Unlock()
	return addr, nil
}

// resolveHTTPAddr turns a node's http_addr setting into an address to
// dial: a wildcard or empty host becomes the client address's host.
func resolveHTTPAddr(setting, clientAddr string) (string, error) {
	if setting == "" {
		return "", fmt.Errorf("%w: %s sets none", errNoHTTP, clientAddr)
	}
	host, port, err := net.SplitHostPort(setting)
	if err != nil {
		return "", fmt.Errorf("%w: %s: http_addr %q: %w", errNoHTTP, clientAddr, setting, err)
	}
	if port == "0" {
		return "", fmt.Errorf("%w: %s: http_addr %q picks its port at start", errNoHTTP, clientAddr, setting)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, _, err = net.SplitHostPort(clientAddr); err != nil {
			return "", fmt.Errorf("%w: %s: %w", errNoHTTP, clientAddr, err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// get fetches path from the node at clientAddr, at most limit bytes.
func (n *nodes) get(ctx context.Context, clientAddr, path string, limit int64) ([]byte, error) {
	addr, err := n.httpAddr(ctx, clientAddr)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, fmt.Errorf("console: %s%s: %w", addr, path, err)
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("console: %s%s: %w", addr, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("console: %s%s: %w", addr, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("console: %s%s: %s", addr, path, resp.Status)
	}
	return body, nil
}

// status is the node's /status.
func (n *nodes) status(ctx context.Context, clientAddr string) (ops.Status, error) {
	var st ops.Status
	body, err := n.get(ctx, clientAddr, "/status", 1<<20)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("console: /status of %s: %w", clientAddr, err)
	}
	return st, nil
}

// metrics scrapes the node's /metrics and sums the samples of each wanted
// metric over their labels.
func (n *nodes) metrics(ctx context.Context, clientAddr string, wanted ...string) (map[string]float64, error) {
	body, err := n.get(ctx, clientAddr, "/metrics", 16<<20)
	if err != nil {
		return nil, err
	}
	return sumMetrics(strings.NewReader(string(body)), wanted...), nil
}

// sumMetrics reads Prometheus text exposition and sums every sample of
// each wanted metric name, whatever its labels. Metrics absent are absent.
func sumMetrics(r io.Reader, wanted ...string) map[string]float64 {
	want := map[string]bool{}
	for _, w := range wanted {
		want[w] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := splitSample(line)
		if !ok || !want[name] {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out
}

// splitSample splits a sample line into its metric name and what follows
// the labels.
func splitSample(line string) (name, rest string, ok bool) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", "", false
	}
	name, rest = line[:i], line[i:]
	if rest[0] == '{' {
		// Label values may hold '}' only escaped inside quotes.
		inQuote, esc := false, false
		for j := 1; j < len(rest); j++ {
			c := rest[j]
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inQuote = !inQuote
			case c == '}' && !inQuote:
				return name, rest[j+1:], true
			}
		}
		return "", "", false
	}
	return name, rest, true
}
