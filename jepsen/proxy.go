package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint names of the links that are not node to node.
const (
	Client  = "client"  // the harness's producers and consumers
	Namesrv = "namesrv" // the name server
)

// Link is one direction of traffic: bytes written by From and read by To.
type Link struct{ From, To string }

func (l Link) String() string { return l.From + "->" + l.To }

// Policy is what happens to the bytes of one Link.
type Policy struct {
	// Block holds every byte (the connection stays open, nothing passes):
	// a silent partition. Held bytes pass once the block is lifted, as a
	// TCP retransmission would deliver them, unless the peer gave up and
	// closed the connection meanwhile.
	Block bool
	// Delay (plus up to Jitter more, uniformly) is added to every chunk;
	// order is kept.
	Delay, Jitter time.Duration
	// Loss is the probability that a chunk is "lost" once: a byte stream
	// cannot drop bytes without corrupting the framing, so a lost chunk is
	// held for lossRetransmit, the way TCP's retransmission delays it.
	Loss float64
}

// lossRetransmit is how long a "lost" chunk is held (about Linux's
// minimum retransmission timeout).
const lossRetransmit = 200 * time.Millisecond

// Net is the harness's proxy mesh: one TCP proxy on 127.0.0.1 for every
// directed link the nodes, the name server and the clients use, and the
// policy of every Link. A proxy made for (from, to) forwards the bytes of
// its connections under the policy of Link{from, to} one way and of
// Link{to, from} the other way.
//
// Goroutines: one accept loop per proxy and two per direction of every
// proxied connection; Close stops and waits for all of them.
type Net struct {
	mu      sync.Mutex
	policy  map[Link]Policy
	changed chan struct{} // closed and replaced on every policy change
	rng     *rand.Rand

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	proxies []*proxy
	conns   map[*proxyConn]struct{}

	accepted     atomic.Int64 // connections proxied in all
	unidentified atomic.Int64 // connections refused: their source could not be named
}

// NewNet returns an empty mesh; seed drives jitter and loss.
func NewNet(seed uint64) *Net {
	ctx, cancel := context.WithCancel(context.Background())
	return &Net{policy: map[Link]Policy{}, changed: make(chan struct{}), rng: rand.New(rand.NewPCG(seed, seed^0x6e6574)),
		ctx: ctx, cancel: cancel, conns: map[*proxyConn]struct{}{}}
}

// errNotLoopback refuses a proxy target off the loopback interface.
var errNotLoopback = errors.New("jepsen: proxy target is not a loopback address")

// Proxy listens on a free 127.0.0.1 port, forwards every connection to
// target (a loopback address) as the link from → to, and returns the
// proxy's address.
func (n *Net) Proxy(from, to, target string) (string, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return "", fmt.Errorf("%w: %q", errNotLoopback, target)
	}
	return n.listen(&proxy{n: n, from: from, to: to, target: target})
}

// listen starts p on a free 127.0.0.1 port.
func (n *Net) listen(p *proxy) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("jepsen: proxy %s->%s: %w", p.from, p.to, err)
	}
	p.ln = ln
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	n.wg.Add(1)
	go p.accept()
	return ln.Addr().String(), nil
}

// Set replaces the policy of l (the zero Policy passes everything).
func (n *Net) Set(l Link, p Policy) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p == (Policy{}) {
		delete(n.policy, l)
	} else {
		n.policy[l] = p
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// Heal lifts every policy.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.policy)
	close(n.changed)
	n.changed = make(chan struct{})
}

// Faulty lists the links with a policy (for the history and the report).
func (n *Net) Faulty() map[Link]Policy {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[Link]Policy, len(n.policy))
	for l, p := range n.policy {
		out[l] = p
	}
	return out
}

// Accepted is the number of connections the proxies have forwarded: a
// heal check and the report's proof that traffic went through them.
func (n *Net) Accepted() int64 { return n.accepted.Load() }

// Close stops every proxy and connection and waits for their goroutines.
func (n *Net) Close() error {
	n.cancel()
	n.mu.Lock()
	for _, p := range n.proxies {
		p.ln.Close()
	}
	for c := range n.conns {
		c.close()
	}
	n.mu.Unlock()
	n.wg.Wait()
	return nil
}

// state returns l's policy and the channel closed at the next change.
func (n *Net) state(l Link) (Policy, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.policy[l], n.changed
}

// hold returns how long a chunk read now on l waits before it is
// forwarded (its delay, jitter and loss), drawn from the mesh's rand.
func (n *Net) hold(p Policy) time.Duration {
	if p.Delay == 0 && p.Jitter == 0 && p.Loss == 0 {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	d := p.Delay
	if p.Jitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(p.Jitter)))
	}
	if p.Loss > 0 && n.rng.Float64() < p.Loss {
		d += lossRetransmit
	}
	return d
}

type proxy struct {
	n                *Net
	from, to, target string
	ln               net.Listener
	// source, when set, names the endpoint each accepted connection
	// comes from (proxy_source.go); "" refuses the connection.
	source func(net.Conn) string
}

func (p *proxy) accept() {
	defer p.n.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed by Net.Close
		}
		from := p.from
		if p.source != nil {
			if from = p.source(c); from == "" {
				p.n.unidentified.Add(1)
				c.Close() // a link that cannot be named could bypass every fault
				continue
			}
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		t, err := d.DialContext(p.n.ctx, "tcp", p.target)
		if err != nil {
			c.Close() // the target is down: the caller sees a reset, as it would
			continue
		}
		pc := &proxyConn{a: c, b: t, done: make(chan struct{})}
		p.n.mu.Lock()
		if p.n.ctx.Err() != nil {
			p.n.mu.Unlock()
			pc.close()
			return
		}
		p.n.conns[pc] = struct{}{}
		p.n.mu.Unlock()
		p.n.accepted.Add(1)
		var both sync.WaitGroup
		both.Add(2)
		p.n.wg.Add(1)
		go func() {
			defer p.n.wg.Done()
			both.Wait()
			p.n.mu.Lock()
			delete(p.n.conns, pc)
			p.n.mu.Unlock()
		}()
		p.n.startPipe(pc, c, t, Link{from, p.to}, &both)
		p.n.startPipe(pc, t, c, Link{p.to, from}, &both)
	}
}

// proxyConn is one proxied connection: a (accepted) and b (dialled).
type proxyConn struct {
	once sync.Once
	a, b net.Conn
	done chan struct{} // closed by close
}

func (c *proxyConn) close() {
	c.once.Do(func() { c.a.Close(); c.b.Close(); close(c.done) })
}

// chunk is bytes read from one side, due to be written at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipeDepth bounds the chunks read but not yet written per direction
// (back-pressure beyond it, as a full socket buffer gives).
const pipeDepth = 64

// startPipe forwards src to dst under l's policy: a reader that stamps
// each chunk with its due time, and a writer that waits for it and for
// any block to lift. Either direction ending closes the whole connection
// (neither raft nor remoting half-closes one).
func (n *Net) startPipe(pc *proxyConn, src, dst net.Conn, l Link, both *sync.WaitGroup) {
	q := make(chan chunk, pipeDepth)
	n.wg.Add(2)
	go func() { // reader
		defer n.wg.Done()
		defer close(q)
		var last time.Time
		for {
			buf := make([]byte, 32<<10)
			k, err := src.Read(buf)
			if k > 0 {
				p, _ := n.state(l)
				due := time.Now().Add(n.hold(p))
				if due.Before(last) {
					due = last // order is kept
				}
				last = due
				select {
				case q <- chunk{data: buf[:k], due: due}:
				case <-pc.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // writer
		defer n.wg.Done()
		defer both.Done()
		defer pc.close()
		for c := range q {
			if !n.await(l, c.due, pc.done) {
				return
			}
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}()
}

// await waits until due has passed and l is not blocked; false when the
// connection closes first.
func (n *Net) await(l Link, due time.Time, done <-chan struct{}) bool {
	for {
		p, changed := n.state(l)
		if p.Block {
			select {
			case <-changed:
				continue
			case <-done:
				return false
			}
		}
		wait := time.Until(due)
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-done:
			t.Stop()
			return false
		}
	}
}
