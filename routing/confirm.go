package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Claim is what a registration says about the node at Addr: that it is a
// member of raft group Group (the broker name) at term Term or later, as
// its leader (BrokerID 0) or as a follower (BrokerID ≥ 1).
type Claim struct {
	Group    string
	Addr     string
	BrokerID int64
	Term     int64
}

// A Checker confirms a claim with the node it names. Check returns nil
// when the node confirms it, an error wrapping ErrClaimRefused when the
// node contradicts it, and any other error when the node could not be
// asked (the confirmer then tries again, a bounded number of times). It
// must honour ctx and is called from several goroutines at once.
type Checker interface {
	Check(ctx context.Context, c Claim) error
}

// CheckerFunc adapts a function to Checker.
type CheckerFunc func(ctx context.Context, c Claim) error

// Check calls f.
func (f CheckerFunc) Check(ctx context.Context, c Claim) error { return f(ctx, c) }

// nodeStatus is the part of a RAFT_STATUS (4001) body the name server
// reads.
type nodeStatus struct {
	Group string
	Role  string
	Term  uint64
}

// decodeNodeStatus parses a RAFT_STATUS body (protocol.DecodeRaftStatus).
func decodeNodeStatus(body []byte) (nodeStatus, error) {
	st, err := protocol.DecodeRaftStatus(body)
	if err != nil {
		return nodeStatus{}, fmt.Errorf("%w: raft status of the claimed node: %w", ErrClaimRefused, err)
	}
	return nodeStatus{Group: st.Group, Role: st.Role, Term: st.Term}, nil
}

// confirms reports whether a node's status confirms c: same group; for a
// leader claim the node leads at c.Term or later; for a follower claim it
// is a live member at c.Term or later that does not lead (a leader
// registered under another id would lose its id 0).
func (st nodeStatus) confirms(c Claim) error {
	term := uint64(max(c.Term, 0))
	switch {
	case st.Group != c.Group:
		return fmt.Errorf("%w: %s belongs to group %q, not %q", ErrClaimRefused, c.Addr, st.Group, c.Group)
	case st.Term < term:
		return fmt.Errorf("%w: %s is at term %d, claims %d", ErrClaimRefused, c.Addr, st.Term, c.Term)
	case c.BrokerID == 0 && st.Role != "leader":
		return fmt.Errorf("%w: %s is %s, claims to lead at term %d", ErrClaimRefused, c.Addr, st.Role, c.Term)
	case c.BrokerID != 0 && (st.Role == "leader" || st.Role == "shutdown" || st.Role == ""):
		return fmt.Errorf("%w: %s is %q, claims to follow as id %d", ErrClaimRefused, c.Addr, st.Role, c.BrokerID)
	}
	return nil
}

// RaftStatusChecker is the default Checker: it asks the claimed address
// for RAFT_STATUS (4001) over client, each attempt bounded by Timeout, and
// compares the node's own group, role and term with the claim.
type RaftStatusChecker struct {
	Client  *remoting.Client
	Timeout time.Duration
}

// Check implements Checker.
func (r RaftStatusChecker) Check(ctx context.Context, c Claim) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	resp, err := r.Client.Invoke(ctx, c.Addr, protocol.RaftStatusRequest())
	if err != nil {
		return fmt.Errorf("routing: asking %s for its raft status: %w", c.Addr, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("%w: %s answered RAFT_STATUS with %d %q", ErrClaimRefused, c.Addr, resp.Code, resp.Remark)
	}
	st, err := decodeNodeStatus(resp.Body)
	if err != nil {
		return err
	}
	return st.confirms(c)
}

const (
	// maxStatusFrame bounds a RAFT_STATUS answer the name server reads.
	maxStatusFrame = 1 << 20
	// MaxPendingClaims bounds the registrations waiting for confirmation
	// (one per group and address: a newer one replaces an older).
	MaxPendingClaims = 1024
	// confirmWorkers confirm claims concurrently.
	confirmWorkers = 4
	// confirmAttempts bounds the tries of a node that cannot be asked;
	// confirmRetryDelay is the pause between them.
	confirmAttempts   = 3
	confirmRetryDelay = 100 * time.Millisecond
)

// pendingKey identifies a waiting registration.
type pendingKey struct{ group, addr string }

// pendingClaim is a registration waiting for confirmation and the
// connection it came on.
type pendingClaim struct {
	reg  Registration
	conn connState
}

// connState is what the confirmer needs of a connection.
type connState interface {
	ID() uint64
	Closed() bool
}

// confirmer holds the registrations waiting for confirmation and the
// workers that confirm them (owned by the Server: started by Start,
// stopped by Close).
type confirmer struct {
	s       *Server
	checker Checker

	mu      sync.Mutex
	pending map[pendingKey]*pendingClaim
	work    chan pendingKey // each pending key, once while it waits
	// applying counts checked registrations not yet applied or dropped.
	applying int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newConfirmer(s *Server, checker Checker) *confirmer {
	ctx, cancel := context.WithCancel(context.Background())
	return &confirmer{
		s: s, checker: checker,
		pending: make(map[pendingKey]*pendingClaim),
		work:    make(chan pendingKey, 2*MaxPendingClaims),
		ctx:     ctx, cancel: cancel,
	}
}

func (c *confirmer) start() {
	for range confirmWorkers {
		c.wg.Add(1)
		go c.worker()
	}
}

// stop ends the workers (claims in flight are abandoned) and waits.
func (c *confirmer) stop() {
	c.cancel()
	c.wg.Wait()
}

// add queues r for confirmation, replacing an older registration of the
// same group and address. It fails with ErrBusy when MaxPendingClaims are
// waiting.
func (c *confirmer) add(r Registration, conn connState) error {
	key := pendingKey{r.BrokerName, r.BrokerAddr}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[key]; ok {
		c.pending[key] = &pendingClaim{reg: r, conn: conn}
		return nil
	}
	if len(c.pending) >= MaxPendingClaims {
		return ErrBusy
	}
	select {
	case c.work <- key:
	default:
		// Only keys dropped before a worker reached them can fill the
		// queue beyond MaxPendingClaims; refuse rather than block.
		return ErrBusy
	}
	c.pending[key] = &pendingClaim{reg: r, conn: conn}
	return nil
}

// drop forgets the registration waiting under key if it came on
// connection conn or trusted is set (an honoured UNREGISTER_BROKER).
func (c *confirmer) drop(key pendingKey, conn uint64, trusted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[key]; p != nil && (trusted || (conn != 0 && p.conn.ID() == conn)) {
		delete(c.pending, key)
	}
}

// pendingCount is how many registrations wait or are being applied (for
// tests: zero means every registration received so far is settled).
func (c *confirmer) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) + c.applying
}

func (c *confirmer) worker() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case key := <-c.work:
			c.confirm(key)
		}
	}
}

// confirm asks the node of the registration waiting under key, applies
// the registration if the node confirms it, and repeats while a newer
// registration replaced it in the meantime.
func (c *confirmer) confirm(key pendingKey) {
	for {
		c.mu.Lock()
		p := c.pending[key]
		c.mu.Unlock()
		if p == nil {
			return
		}
		err := c.check(p.reg)
		c.mu.Lock()
		if c.pending[key] != p {
			c.mu.Unlock()
			continue // replaced while being checked: check the newer one
		}
		delete(c.pending, key)
		c.applying++
		c.mu.Unlock()
		switch {
		case c.ctx.Err() != nil:
		case err != nil:
			c.s.claimRefused(p.reg, err)
		default:
			c.s.applyConfirmed(p.reg, p.conn)
		}
		c.mu.Lock()
		c.applying--
		c.mu.Unlock()
		return
	}
}

// check runs the checker, retrying a node that could not be asked.
func (c *confirmer) check(r Registration) error {
	claim := Claim{Group: r.BrokerName, Addr: r.BrokerAddr, BrokerID: r.BrokerID, Term: r.Term()}
	var err error
	for attempt := range confirmAttempts {
		if attempt > 0 {
			t := time.NewTimer(confirmRetryDelay)
			select {
			case <-c.ctx.Done():
				t.Stop()
				return c.ctx.Err()
			case <-t.C:
			}
		}
		err = c.checker.Check(c.ctx, claim)
		if err == nil || errors.Is(err, ErrClaimRefused) || c.ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrClaimRefused, err)
}
