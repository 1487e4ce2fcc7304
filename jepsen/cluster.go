//go:build unix

package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/internal/devcluster"
	"github.com/ledgermq/ledgermq/internal/fsutil"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Errors of cluster control.
var (
	ErrCluster = errors.New("jepsen: cluster")
)

// GroupName is the broker group the harness runs.
const GroupName = devcluster.GroupName

// ClusterConfig is the cluster a run starts.
type ClusterConfig struct {
	Bin   string // the ledgermq binary
	Dir   string // the run directory
	Nodes int    // nodes in the group (3 or 5)
	// LogLevel of every process; NodeConf are extra KEY=VALUE lines of
	// every node's config.
	LogLevel string
	NodeConf []string
	// Security turns TLS and the ACL on (security.go).
	Security Security
	// OwnDisks: every node's data directory lies in a file system of its
	// own (Node.Disk, mounted by mountDisks) for disk-full faults.
	OwnDisks bool
}

// Node is one broker node of the cluster. Addr, Raft and HTTP are the
// ports it listens on (the harness's own status polls go there, past the
// proxies); Advertised is the client proxy the name server hands out, and
// RaftProxy the one proxy every other node reaches its raft port through
// (the address of the node in the group's raft configuration).
type Node struct {
	ID, Addr, Raft, HTTP, Advertised, RaftProxy, Dir, Conf string
	// Disk is the mount point of the node's own file system (OwnDisks),
	// Dir a directory in it: a wiped node's data is moved aside within
	// it (a mount point cannot be renamed).
	Disk string
	proc *proc
}

// Cluster is a name server and one broker group, each a process of Bin,
// every link between them and to the clients through Net.
type Cluster struct {
	cfg   ClusterConfig
	Net   *Net
	Nodes []*Node
	// NamesrvAddr is where the name server listens; ClientNamesrv the
	// proxy the clients use.
	NamesrvAddr, ClientNamesrv string
	namesrv                    *proc
	secretPath                 string
	status                     *remoting.Client
	sec                        security
	// stopping: Stop has begun (no supervised restart after it).
	stopping atomic.Bool
}

// NewCluster lays the cluster out in cfg.Dir: ports, proxies, configs,
// the cluster secret. Nothing runs yet.
func NewCluster(cfg ClusterConfig, n *Net) (*Cluster, error) {
	if cfg.Nodes < 1 || cfg.Nodes > 9 {
		return nil, fmt.Errorf("%w: %d nodes: want 1..9", ErrCluster, cfg.Nodes)
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	c := &Cluster{cfg: cfg, Net: n, sec: security{Security: cfg.Security}}
	if err := c.sec.setUp(cfg.Dir); err != nil {
		return nil, err
	}
	c.status = remoting.NewClient(c.sec.remoting(remoting.ClientConfig{DialTimeout: time.Second}))
	// The nodes' and name server's ports stay held until every proxy has
	// its own, so that no proxy takes one of them.
	ports, hold, err := freePorts(1 + 3*cfg.Nodes)
	if err != nil {
		return nil, err
	}
	defer hold()
	c.NamesrvAddr = ports[0]
	for i := range cfg.Nodes {
		id := fmt.Sprintf("n%d", i)
		nd := &Node{ID: id, Addr: ports[1+3*i], Raft: ports[2+3*i], HTTP: ports[3+3*i],
			Dir: filepath.Join(cfg.Dir, id), Conf: filepath.Join(cfg.Dir, id+".conf")}
		if cfg.OwnDisks {
			nd.Disk = filepath.Join(cfg.Dir, id+".disk")
			nd.Dir = filepath.Join(nd.Disk, "data")
		}
		c.Nodes = append(c.Nodes, nd)
	}
	if c.ClientNamesrv, err = n.Proxy(Client, Namesrv, c.NamesrvAddr); err != nil {
		return nil, err
	}
	for _, nd := range c.Nodes {
		if nd.Advertised, err = n.Proxy(Client, nd.ID, nd.Addr); err != nil {
			return nil, err
		}
		if nd.RaftProxy, err = n.ProxyTo(nd.ID, nd.Raft, SourceByProcess(c.nodePIDs)); err != nil {
			return nil, err
		}
	}
	secret, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	c.secretPath = filepath.Join(cfg.Dir, "cluster.secret")
	if err := fsutil.WriteFileAtomic(c.secretPath, []byte(secret+"\n")); err != nil {
		return nil, err
	}
	for _, nd := range c.Nodes {
		conf, err := c.nodeConf(nd, secret)
		if err != nil {
			return nil, err
		}
		if err := fsutil.WriteFileAtomic(nd.Conf, conf); err != nil {
			return nil, err
		}
		nd.proc = &proc{name: nd.ID, bin: cfg.Bin, logPath: filepath.Join(cfg.Dir, nd.ID+".log"),
			args: []string{"broker", "--config", nd.Conf, "--log-level", cfg.LogLevel}}
	}
	c.namesrv = &proc{name: Namesrv, bin: cfg.Bin, logPath: filepath.Join(cfg.Dir, "namesrv.log"),
		args: append([]string{"namesrv", "--listen", c.NamesrvAddr, "--log-level", cfg.LogLevel, "--cluster-secret-file", c.secretPath},
			c.sec.namesrvArgs()...)}
	return c, nil
}

// nodeConf is node nd's broker config: the other nodes' client addresses
// (for forwarding) and the name server are the proxies of its own links;
// its raft peers are every node's RaftProxy, the same list on every node
// (a membership change hands every node the leader's), whose proxies tell
// the sending node by its process (ProxyTo). So every fault on a Link
// reaches its traffic.
func (c *Cluster) nodeConf(nd *Node, secret string) ([]byte, error) {
	var peers, clients []string
	for _, o := range c.Nodes {
		peers = append(peers, o.ID+"-"+o.RaftProxy)
		if o == nd {
			clients = append(clients, o.ID+"-"+o.Advertised)
			continue
		}
		fwd, err := c.Net.Proxy(nd.ID, o.ID, o.Addr)
		if err != nil {
			return nil, err
		}
		clients = append(clients, o.ID+"-"+fwd)
	}
	ns, err := c.Net.Proxy(nd.ID, Namesrv, c.NamesrvAddr)
	if err != nil {
		return nil, err
	}
	_, advPort, _ := net.SplitHostPort(nd.Advertised)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `ledgermq jepsen run`; every link goes through a harness proxy.\n")
	fmt.Fprintf(&b, "brokerClusterName=DefaultCluster\nbrokerName=%s\n", GroupName)
	fmt.Fprintf(&b, "brokerIP1=127.0.0.1\nlistenPort=%s\nlisten_addr=%s\n", advPort, nd.Addr)
	fmt.Fprintf(&b, "namesrvAddr=%s\nstorePathRootDir=%s\n", ns, strings.ReplaceAll(nd.Dir, `\`, `\\`))
	// A name server that restarts learns the routes again within this.
	fmt.Fprintf(&b, "registerNameServerPeriod=2000\n")
	fmt.Fprintf(&b, "enableDLegerCommitLog=true\ndLegerGroup=%s\ndLegerSelfId=%s\n", GroupName, nd.ID)
	fmt.Fprintf(&b, "dLegerPeers=%s\nraft.bind=%s\n", strings.Join(peers, ";"), nd.Raft)
	fmt.Fprintf(&b, "raft.client_addrs=%s\nraft.timing=lan\n", strings.Join(clients, ";"))
	fmt.Fprintf(&b, "http_addr=%s\n", nd.HTTP)
	fmt.Fprintf(&b, "raft.segment_size=%d\nstore.segment_size=%d\n", 4<<20, 64<<20)
	fmt.Fprintf(&b, "cluster_secret=%s\n", secret)
	for _, kv := range append(c.sec.nodeLines(), c.cfg.NodeConf...) {
		fmt.Fprintf(&b, "%s\n", kv)
	}
	return []byte(b.String()), nil
}

// Start starts the name server and every node and waits (bounded by ctx)
// until the group serves: one leader, every other node its follower.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.namesrv.start(); err != nil {
		return err
	}
	if err := waitListening(ctx, c.NamesrvAddr, c.namesrv); err != nil {
		return err
	}
	for _, nd := range c.Nodes {
		if err := nd.proc.start(); err != nil {
			return err
		}
	}
	return c.WaitServing(ctx)
}

// WaitServing waits until every node runs, the group has one leader that
// every other node follows and the name server lists it.
func (c *Cluster) WaitServing(ctx context.Context) error {
	var last error
	for {
		last = c.serving(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: not serving: %w (%w)", ErrCluster, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) serving(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := devcluster.Serving(rctx, c.status, c.File())
	if err != nil {
		return err
	}
	leader, ok := devcluster.LeaderOf(c.File(), st)
	if !ok {
		return errors.New("no leader")
	}
	adv := c.node(leader.ID).Advertised
	got, err := devcluster.Leader(rctx, c.status, c.NamesrvAddr, GroupName)
	if err != nil {
		return err
	}
	if got != adv {
		return fmt.Errorf("name server lists %q as leader, not %s's %s", got, leader.ID, adv)
	}
	return nil
}

// nodePIDs maps every running node's pid to its id (the raft proxies'
// sources).
func (c *Cluster) nodePIDs() map[int]string {
	out := make(map[int]string, len(c.Nodes))
	for _, nd := range c.Nodes {
		if pid := nd.proc.pid(); pid != 0 {
			out[pid] = nd.ID
		}
	}
	return out
}

// File is the cluster as devcluster describes it, with the nodes' own
// (not proxied) addresses, for Status, Serving and CompareCommitLogs.
func (c *Cluster) File() devcluster.File {
	f := devcluster.File{Namesrv: c.NamesrvAddr}
	for _, nd := range c.Nodes {
		role := devcluster.RoleFollower
		if nd.proc.pid() == 0 {
			role = devcluster.RoleDown
		}
		f.Nodes = append(f.Nodes, devcluster.Node{ID: nd.ID, PID: nd.proc.pid(), Addr: nd.Addr, Raft: nd.Raft,
			HTTP: nd.HTTP, Role: role, Dir: nd.Dir})
	}
	return f
}

// WriteFile writes DIR/cluster.json (devcluster's format, own addresses)
// with the advertised proxies beside it in DIR/proxies.json.
func (c *Cluster) WriteFile() error {
	data, err := json.MarshalIndent(c.File(), "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(c.cfg.Dir, devcluster.FileName), append(data, '\n')); err != nil {
		return err
	}
	adv := map[string]string{Namesrv: c.ClientNamesrv}
	for _, nd := range c.Nodes {
		adv[nd.ID] = nd.Advertised
	}
	data, _ = json.MarshalIndent(adv, "", "  ")
	return fsutil.WriteFileAtomic(filepath.Join(c.cfg.Dir, "proxies.json"), append(data, '\n'))
}

func (c *Cluster) node(id string) *Node {
	for _, nd := range c.Nodes {
		if nd.ID == id {
			return nd
		}
	}
	return nil
}

// NodeIDs lists the nodes' ids in order.
func (c *Cluster) NodeIDs() []string {
	ids := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		ids[i] = nd.ID
	}
	return ids
}

// NodeByAdvertised maps a client-facing (proxy) address to its node id.
func (c *Cluster) NodeByAdvertised(addr string) string {
	for _, nd := range c.Nodes {
		if nd.Advertised == addr {
			return nd.ID
		}
	}
	return ""
}

// Kill sends SIGKILL to a node (or the name server) and waits for it to
// exit. A paused process is killed too.
func (c *Cluster) Kill(id string) error { return c.procOf(id).kill() }

// Restart starts a killed node (or name server) again.
func (c *Cluster) Restart(id string) error {
	p := c.procOf(id)
	if p.pid() != 0 {
		return nil
	}
	return p.start()
}

// Pause sends SIGSTOP; Resume SIGCONT.
func (c *Cluster) Pause(id string) error  { return c.procOf(id).signal(syscall.SIGSTOP) }
func (c *Cluster) Resume(id string) error { return c.procOf(id).signal(syscall.SIGCONT) }

// Running reports whether id's process runs (paused counts as running).
func (c *Cluster) Running(id string) bool { return c.procOf(id).pid() != 0 }

func (c *Cluster) procOf(id string) *proc {
	if id == Namesrv {
		return c.namesrv
	}
	if nd := c.node(id); nd != nil {
		return nd.proc
	}
	return &proc{name: id} // unknown: every operation is a no-op error
}

// Stop stops every process: SIGCONT (a paused node cannot stop), then
// SIGINT to the nodes (a whole-group stop) and SIGTERM to the name
// server, SIGKILL to whatever has not exited within grace.
func (c *Cluster) Stop(grace time.Duration) {
	c.stopping.Store(true)
	for _, nd := range c.Nodes {
		nd.proc.expect()
	}
	for _, nd := range c.Nodes {
		_ = nd.proc.signal(syscall.SIGCONT)
		_ = nd.proc.signal(syscall.SIGINT)
	}
	for _, nd := range c.Nodes {
		nd.proc.waitOrKill(grace)
	}
	_ = c.namesrv.signal(syscall.SIGCONT)
	_ = c.namesrv.signal(syscall.SIGTERM)
	c.namesrv.waitOrKill(grace)
	c.status.Close()
}

// TransferLeader asks the leader (at its own address) to hand leadership
// to node to.
func (c *Cluster) TransferLeader(ctx context.Context, leader, to string) error {
	nd := c.node(leader)
	if nd == nil {
		return fmt.Errorf("%w: no node %q", ErrCluster, leader)
	}
	resp, err := c.status.Invoke(ctx, nd.Addr, protocol.RaftNodeHeader{Node: to}.Request(remoting.RaftTransferLeader))
	if err != nil {
		return err
	}
	return remoting.CheckResponse(resp)
}

// CommittedOffset asks node id (at its own address) for group's
// committed offset of a queue (QUERY_CONSUMER_OFFSET: the group's
// linearizable answer, relayed to the leader by a follower; NodeOffsets
// is one replica's own view).
func (c *Cluster) CommittedOffset(ctx context.Context, id, group, topic string, queue int32, timeout time.Duration) (int64, error) {
	nd := c.node(id)
	if nd == nil {
		return 0, fmt.Errorf("%w: no node %q", ErrCluster, id)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue}
	resp, err := c.status.Invoke(rctx, nd.Addr, h.Request())
	if err != nil {
		return 0, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return 0, err
	}
	return remoting.ExtInt(resp.ExtFields, "offset")
}

// Status asks every running node for its raft view (at its own address,
// past the proxies), each bounded by timeout; a node that does not answer
// has Role "down" (not running) or "unreachable".
func (c *Cluster) Status(ctx context.Context, timeout time.Duration) []devcluster.NodeStatus {
	f := c.File()
	out := make([]devcluster.NodeStatus, len(f.Nodes))
	var wg sync.WaitGroup
	for i, n := range f.Nodes {
		if n.PID == 0 {
			out[i] = devcluster.NodeStatus{ID: n.ID, Addr: n.Addr, Role: devcluster.RoleDown}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st, err := devcluster.Status(rctx, c.status, n)
			if err != nil {
				st = devcluster.NodeStatus{ID: n.ID, Addr: n.Addr, Role: "unreachable"}
			}
			out[i] = st
		}()
	}
	wg.Wait()
	return out
}

// freePorts picks n distinct free loopback ports, held open until
// release is called.
func freePorts(n int) (ports []string, release func(), err error) {
	var ls []net.Listener
	release = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			release()
			return nil, nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().String())
	}
	return ports, release, nil
}

// waitListening waits until addr accepts connections or p exits.
func waitListening(ctx context.Context, addr string, p *proc) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if p.pid() == 0 {
			return fmt.Errorf("%w: %s exited at start-up; see %s", ErrCluster, p.name, p.logPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not listening on %s: %w", ErrCluster, p.name, addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// proc is one process of the cluster, restartable. Its methods are safe
// from any goroutine.
type proc struct {
	name, bin, logPath string
	args               []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run exits
	wg   sync.WaitGroup
	// expected: the harness signalled the current run to end (kill,
	// stop); onExit, if set, hears of every other exit (supervise.go).
	expected bool
	onExit   func(error)
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bin == "" {
		return fmt.Errorf("%w: no process %q", ErrCluster, p.name)
	}
	if p.cmd != nil {
		return nil // running
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = childEnv()
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%w: start %s: %w", ErrCluster, p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.expected = cmd, done, false
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		werr := cmd.Wait()
		f.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		onExit := p.onExit
		if p.expected {
			onExit = nil
		}
		p.mu.Unlock()
		close(done)
		if onExit != nil {
			onExit(werr)
		}
	}()
	return nil
}

// expect marks the current run's end as the harness's doing.
func (p *proc) expect() {
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
}

// pid is the running process's pid, 0 when none runs.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%w: %s is not running", ErrCluster, p.name)
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	p.expect()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return nil
}

// waitOrKill waits up to grace for the exit, then kills.
func (p *proc) waitOrKill(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd != nil {
		t := time.NewTimer(grace)
		select {
		case <-done:
		case <-t.C:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		t.Stop()
	}
	p.wg.Wait()
}

// childEnv is the harness's environment without the variables that
// would give every child the same broker settings.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LEDGERMQ_") || strings.HasPrefix(kv, "NAMESRV_ADDR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
