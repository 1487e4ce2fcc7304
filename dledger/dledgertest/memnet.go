package dledgertest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MemNet is an in-memory network for raft stream layers: each listener
// has a name, a dial reaches the listener of that name, and every
// connection is a net.Pipe. It carries raft traffic without sockets, so a
// group in a test needs no port (MakeNode).
type MemNet struct {
	mu     sync.Mutex
	layers map[string]*MemLayer
}

// NewMemNet returns an empty in-memory network.
func NewMemNet() *MemNet { return &MemNet{layers: map[string]*MemLayer{}} }

// Listen opens the stream layer named name ("mem-n0"); the name is its
// address.
func (n *MemNet) Listen(name string) (*MemLayer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.layers[name]; ok {
		return nil, fmt.Errorf("dledgertest: memnet: %s is already listening", name)
	}
	l := &MemLayer{net: n, addr: memAddr(name), accept: make(chan net.Conn), done: make(chan struct{})}
	n.layers[name] = l
	return l, nil
}

func (n *MemNet) lookup(name string) *MemLayer {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.layers[name]
}

func (n *MemNet) remove(l *MemLayer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.layers[string(l.addr)] == l {
		delete(n.layers, string(l.addr))
	}
}

// errMemClosed is what Accept and Dial answer once a layer is closed.
var errMemClosed = errors.New("dledgertest: memnet: layer closed")

// MemLayer is one node's raft.StreamLayer on a MemNet.
type MemLayer struct {
	net    *MemNet
	addr   memAddr
	accept chan net.Conn
	once   sync.Once
	done   chan struct{}
}

var _ raft.StreamLayer = (*MemLayer)(nil)

// Accept waits for the next dial to this layer.
func (l *MemLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.done:
		return nil, errMemClosed
	}
}

// Close stops accepting and frees the name; connections already made stay
// until their ends close them.
func (l *MemLayer) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.remove(l)
	})
	return nil
}

// Addr is the layer's name.
func (l *MemLayer) Addr() net.Addr { return l.addr }

// Dial connects to the layer named address, waiting at most timeout for
// it to accept.
func (l *MemLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	peer := l.net.lookup(string(address))
	if peer == nil {
		return nil, fmt.Errorf("dledgertest: memnet: dial %s: no such listener", address)
	}
	local, remote := net.Pipe()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case peer.accept <- remote:
		return local, nil
	case <-peer.done:
	case <-l.done:
	case <-t.C:
	}
	local.Close()
	remote.Close()
	return nil, fmt.Errorf("dledgertest: memnet: dial %s: not accepted", address)
}

// memAddr is a MemLayer's address.
type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }
