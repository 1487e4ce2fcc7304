package dledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/rawconn"
)

// The raft port also answers one request of its own, node info: which
// format versions the node's binary applies. A connection whose first byte
// is peerInfoRPC (raft's own RPC types are 0 to 4) gets one JSON line and
// is closed; every other connection goes to raft's transport untouched.
//
//	request:  0xB7
//	answer:   {"node":"n1","minVersion":1,"maxVersion":6,"drained":true,"oneLog":true,"layout":"commitlog"}\n
//	          (at most 512 bytes; "drained" only while the node is drained;
//	          "layout", or "fresh":true for a node without data: older binaries send neither;
//	          "lastIndex", the node's raft log's last index (older binaries send it from a leader only);
//	          a leader adds "leader":true and "term";
//	          "recovering":true while the node abstains from votes, abstain.go)
const peerInfoRPC byte = 0xB7

const (
	maxNodeInfoSize = 512
	// sniffTimeout bounds how long an accepted connection may take to send
	// its first byte.
	sniffTimeout = 10 * time.Second
)

// nodeInfo is the node-info answer.
type nodeInfo struct {
	Node       string `json:"node"`
	MinVersion uint32 `json:"minVersion"`
	MaxVersion uint32 `json:"maxVersion"`
	// Drained: the node is drained (drain.go) and must not be made leader.
	// Older binaries leave it out.
	Drained bool `json:"drained,omitempty"`
	// OneLog: the node runs, or is configured for, the one-log layout
	// (Config.OneLog); the leader switches a two-log group only when every
	// member says so (convert.go). Older binaries leave it out.
	OneLog bool `json:"oneLog,omitempty"`
	// Layout is the layout the node's data is in ("wal" or "commitlog");
	// Fresh, instead, says that the node holds no data yet and waits to
	// learn its group's (layout.go). Older binaries send neither.
	Layout string `json:"layout,omitempty"`
	Fresh  bool   `json:"fresh,omitempty"`
	// Leader: the node leads its group at Term. LastIndex: where the
	// node's raft log ends (older binaries send it from a leader only).
	// Recovering: the node abstains from votes (abstain.go). Older
	// binaries send none of them.
	Leader     bool   `json:"leader,omitempty"`
	Term       uint64 `json:"term,omitempty"`
	LastIndex  uint64 `json:"lastIndex,omitempty"`
	Recovering bool   `json:"recovering,omitempty"`
}

// errBadNodeInfo: a node-info answer that is not one.
var errBadNodeInfo = errors.New("dledger: bad node info")

// decodeNodeInfo parses a node-info answer (without its newline).
func decodeNodeInfo(b []byte) (nodeInfo, error) {
	var ni nodeInfo
	if len(b) > maxNodeInfoSize {
		return ni, fmt.Errorf("%w: %d bytes", errBadNodeInfo, len(b))
	}
	if err := json.Unmarshal(b, &ni); err != nil {
		return nodeInfo{}, fmt.Errorf("%w: %v", errBadNodeInfo, err)
	}
	if ni.Node == "" || len(ni.Node) > 64 || ni.MinVersion < 1 || ni.MaxVersion < ni.MinVersion || ni.MaxVersion > 1<<16 {
		return nodeInfo{}, fmt.Errorf("%w: %+v", errBadNodeInfo, ni)
	}
	return ni, nil
}

// muxLayer is the raft stream layer with the node-info request beside
// raft's RPCs. It owns one accept goroutine and one short-lived goroutine
// per accepted connection until its first byte is read; Close stops them
// and wait waits for them.
type muxLayer struct {
	inner raft.StreamLayer
	info  func() nodeInfo
	log   hclog.Logger

	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup

	mu      sync.Mutex
	sniffed map[net.Conn]struct{}

	// dialed holds the raft addresses dialled successfully at least once
	// (the raft logger's "peer reached").
	dialed sync.Map

	// ended is signalled (never blocking) when a connection raft accepted
	// ends with an error of the peer's making: EOF or a reset, as when the
	// process at the other end died (leadergone.go).
	ended chan struct{}
}

var _ raft.StreamLayer = (*muxLayer)(nil)

func newMuxLayer(inner raft.StreamLayer, info func() nodeInfo, log hclog.Logger) *muxLayer {
	m := &muxLayer{inner: inner, info: info, log: log, conns: make(chan net.Conn),
		closed: make(chan struct{}), sniffed: map[net.Conn]struct{}{}, ended: make(chan struct{}, 1)}
	m.wg.Add(1)
	go m.run()
	return m
}

func (m *muxLayer) run() {
	defer m.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := m.inner.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
				continue
			}
		}
		backoff = 5 * time.Millisecond
		m.mu.Lock()
		select {
		case <-m.closed:
			m.mu.Unlock()
			c.Close()
			return
		default:
		}
		m.sniffed[c] = struct{}{}
		m.mu.Unlock()
		m.wg.Add(1)
		go m.sniff(c)
	}
}

// sniff reads a connection's first byte and routes it.
func (m *muxLayer) sniff(c net.Conn) {
	defer m.wg.Done()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	_, err := c.Read(first[:])
	_ = c.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.sniffed, c)
	m.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	if first[0] == peerInfoRPC {
		b, _ := json.Marshal(m.info())
		_ = c.SetWriteDeadline(time.Now().Add(sniffTimeout))
		_, _ = c.Write(append(b, '\n'))
		c.Close()
		return
	}
	select {
	case m.conns <- &prefixConn{Conn: rawconn.Wrap(c), first: first[0], pending: true, ended: m.ended}:
	case <-m.closed:
		c.Close()
	}
}

// Accept returns the next connection for raft.
func (m *muxLayer) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.closed:
		return nil, fmt.Errorf("dledger: raft listener closed: %w", net.ErrClosed)
	}
}

// Close stops accepting and closes connections not yet routed.
func (m *muxLayer) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.closed)
		for c := range m.sniffed {
			c.Close()
		}
		m.mu.Unlock()
		m.closeErr = m.inner.Close()
	})
	return m.closeErr
}

// wait waits for the layer's goroutines after Close.
func (m *muxLayer) wait() { m.wg.Wait() }

func (m *muxLayer) Addr() net.Addr { return m.inner.Addr() }

func (m *muxLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := m.inner.Dial(addr, timeout)
	if err == nil {
		// raft's connections carry entries of up to MaxBatchBytes:
		// written raw (internal/rawconn), a large write does not hand
		// this node's processor to another thread.
		c = rawconn.Wrap(c)
		if _, ok := m.dialed.Load(string(addr)); !ok {
			m.dialed.Store(string(addr), struct{}{})
		}
	}
	return c, err
}

// reached reports whether a dial to the raft address addr has succeeded
// since this node started.
func (m *muxLayer) reached(addr string) bool {
	_, ok := m.dialed.Load(addr)
	return ok
}

// askNodeInfo asks the node at raft address addr for its node info.
func (m *muxLayer) askNodeInfo(addr string, timeout time.Duration) (nodeInfo, error) {
	c, err := m.inner.Dial(raft.ServerAddress(addr), timeout)
	if err != nil {
		return nodeInfo{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{peerInfoRPC}); err != nil {
		return nodeInfo{}, err
	}
	line, err := bufio.NewReaderSize(&limitedReader{r: c, n: maxNodeInfoSize + 1}, maxNodeInfoSize+1).ReadSlice('\n')
	if err != nil {
		return nodeInfo{}, fmt.Errorf("%w: %v", errBadNodeInfo, err)
	}
	return decodeNodeInfo(line[:len(line)-1])
}

// limitedReader reads at most n bytes.
type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errBadNodeInfo
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= k
	return k, err
}

// prefixConn gives back the byte sniff read before the rest, and signals
// ended when the peer ends the connection.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
	ended   chan<- struct{}
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		p[0] = c.first
		c.pending = false
		return 1, nil
	}
	n, err := c.Conn.Read(p)
	if err != nil && c.ended != nil && peerEnded(err) {
		select {
		case c.ended <- struct{}{}:
		default:
		}
	}
	return n, err
}

// peerEnded reports whether a read error is the other end's doing: EOF
// or a reset, not a deadline or this side's own close.
func peerEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
