//go:build unix

package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/harness/procs"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Errors of cluster control.
var (
	ErrCluster = errors.New("jepsen: cluster")
)

// GroupName is the broker group of a one-group run (the first of a run
// of more).
const GroupName = devcluster.GroupName

// ClusterConfig is the cluster a run starts.
type ClusterConfig struct {
	Bin   string // the ledgermq binary
	Dir   string // the run directory
	Nodes int    // nodes in each group (3 or 5)
	// Groups is the number of broker groups (0: one), broker-a, broker-b,
	// …, their nodes n0…, b0…, … (procs.NodeID).
	Groups int
	// LogLevel of every process; NodeConf are extra KEY=VALUE lines of
	// every node's config.
	LogLevel string
	NodeConf []string
	// Security turns TLS and the ACL on (security.go).
	Security Security
	// OwnDisks: every node's data directory lies in a file system of its
	// own (Node.Disk, mounted by mountDisks) for disk-full faults.
	OwnDisks bool
	// GRPC: every node serves the RocketMQ 5 gRPC port (the POP
	// workload's consumers), reached through proxies as its client port.
	GRPC bool
}

// Node is one broker node of the cluster. Addr, Raft and HTTP are the
// ports it listens on (the harness's own status polls go there, past the
// proxies); Advertised is the client proxy the name server hands out, and
// RaftProxy the one proxy every other node reaches its raft port through
// (the address of the node in the group's raft configuration).
type Node struct {
	ID, Addr, Raft, HTTP, Advertised, RaftProxy, Dir, Conf string
	// Group is the node's broker group (brokerName, raft group).
	Group string
	// Disk is the mount point of the node's own file system (OwnDisks),
	// Dir a directory in it: a wiped node's data is moved aside within
	// it (a mount point cannot be renamed).
	Disk string
	// GRPC is the node's gRPC port and GRPCAdvertised the client proxy
	// of it (ClusterConfig.GRPC; "" without).
	GRPC, GRPCAdvertised string
	proc                 *procs.Proc
}

// Cluster is a name server and one or more broker groups, each node a
// process of Bin, every link between them and to the clients through Net.
type Cluster struct {
	cfg   ClusterConfig
	Net   *Net
	Nodes []*Node // group by group
	// Groups are the broker groups' names in order.
	Groups []string
	// NamesrvAddr is where the name server listens; ClientNamesrv the
	// proxy the clients use.
	NamesrvAddr, ClientNamesrv string
	namesrv                    *procs.Proc
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
	cfg.Groups = max(cfg.Groups, 1)
	if cfg.Groups > procs.MaxGroups {
		return nil, fmt.Errorf("%w: %d groups: want 1..%d", ErrCluster, cfg.Groups, procs.MaxGroups)
	}
	c := &Cluster{cfg: cfg, Net: n, sec: security{Security: cfg.Security}, Groups: procs.GroupNames(cfg.Groups)}
	if err := c.sec.setUp(cfg.Dir); err != nil {
		return nil, err
	}
	c.status = remoting.NewClient(c.sec.remoting(remoting.ClientConfig{DialTimeout: time.Second}))
	// The nodes' and name server's ports stay held until every proxy has
	// its own, so that no proxy takes one of them.
	per := 3 // ports of a node
	if cfg.GRPC {
		per = 4
	}
	ports, hold, err := procs.FreePorts(1+per*cfg.Nodes*cfg.Groups, nil)
	if err != nil {
		return nil, err
	}
	defer hold()
	c.NamesrvAddr = procs.Loopback(ports[0])
	for k := range cfg.Nodes * cfg.Groups {
		g, i := k/cfg.Nodes, k%cfg.Nodes
		id := procs.NodeID(g, i)
		nd := &Node{ID: id, Group: c.Groups[g], Addr: procs.Loopback(ports[1+per*k]), Raft: procs.Loopback(ports[2+per*k]), HTTP: procs.Loopback(ports[3+per*k]),
			Dir: filepath.Join(cfg.Dir, id), Conf: filepath.Join(cfg.Dir, id+".conf")}
		if cfg.GRPC {
			nd.GRPC = procs.Loopback(ports[4+per*k])
		}
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
		if nd.GRPC != "" {
			if nd.GRPCAdvertised, err = n.Proxy(Client, nd.ID, nd.GRPC); err != nil {
				return nil, err
			}
		}
	}
	secret, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	c.secretPath = filepath.Join(cfg.Dir, "cluster.secret")
	if err := vfs.WriteFileAtomic(vfs.Default, c.secretPath, []byte(secret+"\n")); err != nil {
		return nil, err
	}
	for _, nd := range c.Nodes {
		conf, err := c.nodeConf(nd, secret)
		if err != nil {
			return nil, err
		}
		if err := vfs.WriteFileAtomic(vfs.Default, nd.Conf, conf); err != nil {
			return nil, err
		}
		nd.proc = newProc(nd.ID, cfg.Bin, filepath.Join(cfg.Dir, nd.ID+".log"),
			"broker", "--config", nd.Conf, "--log-level", cfg.LogLevel)
	}
	c.namesrv = newProc(Namesrv, cfg.Bin, filepath.Join(cfg.Dir, "namesrv.log"),
		append([]string{"namesrv", "--listen", c.NamesrvAddr, "--log-level", cfg.LogLevel, "--cluster-secret-file", c.secretPath},
			c.sec.namesrvArgs()...)...)
	return c, nil
}

// nodeConf is node nd's broker config: the other nodes' client addresses
// (for forwarding) and the name server are the proxies of its own links;
// its raft peers are every node's RaftProxy, the same list on every node
// (a membership change hands every node the leader's), whose proxies tell
// the sending node by its process (ProxyTo). So every fault on a Link
// reaches its traffic.
func (c *Cluster) nodeConf(nd *Node, secret string) ([]byte, error) {
	var peers, clients, grpcs []string
	for _, o := range c.Nodes {
		if o.Group != nd.Group {
			continue
		}
		peers = append(peers, o.ID+"-"+o.RaftProxy)
		if o == nd {
			clients = append(clients, o.ID+"-"+o.Advertised)
			if o.GRPC != "" {
				grpcs = append(grpcs, o.ID+"-"+o.GRPCAdvertised)
			}
			continue
		}
		fwd, err := c.Net.Proxy(nd.ID, o.ID, o.Addr)
		if err != nil {
			return nil, err
		}
		clients = append(clients, o.ID+"-"+fwd)
		if o.GRPC != "" {
			// A follower relays POP calls to the leader's gRPC port: a
			// link of its own, as its forwarded sends.
			if fwd, err = c.Net.Proxy(nd.ID, o.ID, o.GRPC); err != nil {
				return nil, err
			}
			grpcs = append(grpcs, o.ID+"-"+fwd)
		}
	}
	ns, err := c.Net.Proxy(nd.ID, Namesrv, c.NamesrvAddr)
	if err != nil {
		return nil, err
	}
	extra := []string{fmt.Sprintf("raft.segment_size=%d", 4<<20), fmt.Sprintf("store.segment_size=%d", 64<<20), "cluster_secret=" + secret}
	return procs.NodeConfig{
		Header: "Written by `ledgermq jepsen run`; every link goes through a harness proxy.",
		Group:  nd.Group, ID: nd.ID, Advertised: nd.Advertised, Listen: nd.Addr, Namesrv: ns, StoreDir: nd.Dir,
		// A name server that restarts learns the routes again within this.
		RegisterPeriodMS: 2000,
		Peers:            peers, RaftBind: nd.Raft, ClientAddrs: clients, Timing: "lan", HTTP: nd.HTTP,
		GRPCListen: nd.GRPC, GRPCAddrs: grpcs,
		Extra: append(append(extra, c.sec.nodeLines()...), c.cfg.NodeConf...),
	}.Text(), nil
}

// Start starts the name server and every node and waits (bounded by ctx)
// until the group serves: one leader, every other node its follower.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.namesrv.Start(); err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	if err := procs.WaitListening(ctx, c.NamesrvAddr, c.namesrv.Done(), 0); err != nil {
		return fmt.Errorf("%w: %s on %s: %w; see %s", ErrCluster, Namesrv, c.NamesrvAddr, err, c.namesrv.LogPath())
	}
	for _, nd := range c.Nodes {
		if err := nd.proc.Start(); err != nil {
			return fmt.Errorf("%w: %w", ErrCluster, err)
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
	for _, g := range c.Groups {
		if err := c.groupServing(ctx, g); err != nil {
			if len(c.Groups) > 1 {
				return fmt.Errorf("%s: %w", g, err)
			}
			return err
		}
	}
	return nil
}

func (c *Cluster) groupServing(ctx context.Context, g string) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	f := c.GroupFile(g)
	st, err := devcluster.Serving(rctx, c.status, f)
	if err != nil {
		return err
	}
	leader, ok := devcluster.LeaderOf(f, st)
	if !ok {
		return errors.New("no leader")
	}
	adv := c.node(leader.ID).Advertised
	got, err := devcluster.Leader(rctx, c.status, c.NamesrvAddr, g)
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
		if pid := nd.proc.Pid(); pid != 0 {
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
		if nd.proc.Pid() == 0 {
			role = devcluster.RoleDown
		}
		f.Nodes = append(f.Nodes, devcluster.Node{ID: nd.ID, Group: nd.Group, PID: nd.proc.Pid(), Addr: nd.Addr, Raft: nd.Raft,
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
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(c.cfg.Dir, devcluster.FileName), append(data, '\n')); err != nil {
		return err
	}
	adv := map[string]string{Namesrv: c.ClientNamesrv}
	for _, nd := range c.Nodes {
		adv[nd.ID] = nd.Advertised
	}
	data, _ = json.MarshalIndent(adv, "", "  ")
	return vfs.WriteFileAtomic(vfs.Default, filepath.Join(c.cfg.Dir, "proxies.json"), append(data, '\n'))
}

func (c *Cluster) node(id string) *Node {
	for _, nd := range c.Nodes {
		if nd.ID == id {
			return nd
		}
	}
	return nil
}

// GroupFile is File with only group g's nodes.
func (c *Cluster) GroupFile(g string) devcluster.File {
	f := c.File()
	f.Nodes = slices.DeleteFunc(f.Nodes, func(n devcluster.Node) bool { return n.Group != g })
	return f
}

// GroupNodes lists group g's node ids in order.
func (c *Cluster) GroupNodes(g string) []string {
	var ids []string
	for _, nd := range c.Nodes {
		if nd.Group == g {
			ids = append(ids, nd.ID)
		}
	}
	return ids
}

// GroupOf is node id's group ("" for none).
func (c *Cluster) GroupOf(id string) string {
	if nd := c.node(id); nd != nil {
		return nd.Group
	}
	return ""
}

// eventGroup is the Group of an event about node id: its group in a run
// of two or more groups, "" in a one-group run (whose history keeps the
// one-group shape).
func (c *Cluster) eventGroup(id string) string {
	if !c.Multi() {
		return ""
	}
	return c.GroupOf(id)
}

// Multi reports whether the cluster has more than one group.
func (c *Cluster) Multi() bool { return len(c.Groups) > 1 }

// StopGroup stops every node of group g as an operator stops a whole
// group (SIGINT to all at once, no leadership hand-over; SIGKILL after
// grace). The exits are expected: no supervisor restarts them.
func (c *Cluster) StopGroup(g string, grace time.Duration) error {
	var ps []*procs.Proc
	for _, nd := range c.Nodes {
		if nd.Group == g {
			ps = append(ps, nd.proc)
		}
	}
	if len(ps) == 0 {
		return fmt.Errorf("%w: no group %q", ErrCluster, g)
	}
	procs.StopAll(ps, syscall.SIGINT, grace)
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
func (c *Cluster) Kill(id string) error { return c.procOf(id).Kill() }

// Restart starts a killed node (or name server) again.
func (c *Cluster) Restart(id string) error {
	p := c.procOf(id)
	if p.Running() {
		return nil
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return nil
}

// Pause sends SIGSTOP; Resume SIGCONT.
func (c *Cluster) Pause(id string) error  { return c.signal(id, syscall.SIGSTOP) }
func (c *Cluster) Resume(id string) error { return c.signal(id, syscall.SIGCONT) }

func (c *Cluster) signal(id string, sig syscall.Signal) error {
	if err := c.procOf(id).Signal(sig); err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return nil
}

// Running reports whether id's process runs (paused counts as running).
func (c *Cluster) Running(id string) bool { return c.procOf(id).Running() }

func (c *Cluster) procOf(id string) *procs.Proc {
	if id == Namesrv {
		return c.namesrv
	}
	if nd := c.node(id); nd != nil {
		return nd.proc
	}
	return procs.New(procs.Spec{Name: id}) // unknown: nothing runs, nothing starts
}

// Stop stops every process: SIGCONT (a paused node cannot stop), then
// SIGINT to the nodes (a whole-group stop) and SIGTERM to the name
// server, SIGKILL to whatever has not exited within grace.
func (c *Cluster) Stop(grace time.Duration) {
	c.stopping.Store(true)
	nodes := make([]*procs.Proc, len(c.Nodes))
	for i, nd := range c.Nodes {
		nodes[i] = nd.proc
	}
	procs.StopAll(nodes, syscall.SIGINT, grace)
	procs.StopAll([]*procs.Proc{c.namesrv}, syscall.SIGTERM, grace)
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

// newProc is a process of the cluster: bin with args, its output in
// logPath, killed if the harness dies (so nothing outlives a run).
func newProc(name, bin, logPath string, args ...string) *procs.Proc {
	return procs.New(procs.Spec{Name: name, Bin: bin, Args: args, LogPath: logPath, Env: procs.ChildEnv(), DeathSignal: syscall.SIGKILL})
}
