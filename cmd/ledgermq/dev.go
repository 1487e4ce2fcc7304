package main

// `ledgermq dev`: a name server and an N-node broker group on loopback, as
// separate OS processes of this same binary, supervised by PID.
//
// Layout of --dir (DIR is made absolute):
//
//	DIR/LOCK          flock held while dev runs (one dev per directory)
//	DIR/n0.conf ...   each node's broker config (properties, RocketMQ key
//	                  names where they exist, cluster_secret); rewritten on
//	                  every run, mode 0600
//	DIR/cluster.secret the cluster secret (64 hex digits), random, made on
//	                  the first run and kept (mode 0600); the name server
//	                  reads it (--cluster-secret-file) and every node's
//	                  config carries it, so registrations are signed
//	DIR/tls/          with --tls only: ca.pem, ca-key.pem (a local CA, made
//	                  on the first --tls run and kept), node.pem and
//	                  node-key.pem (127.0.0.1 and localhost, every node's
//	                  certificate); the name server and every node run
//	                  TLS with them (raft links mutual), clients pass
//	                  --tls-ca DIR/tls/ca.pem
//	--acl FILE        (not copied) every node's config gets acl_enable,
//	                  acl_file=FILE and FILE's first admin account as
//	                  namesrv.access_key/namesrv.secret_key (devacl.go);
//	                  the name server runs --acl-enable --acl-file FILE
//	DIR/n0/ ...       each node's data_dir (raft/, store/, metadata.json)
//	DIR/namesrv.log   the name server's stdout and stderr (appended)
//	DIR/n0.log ...    each node's stdout and stderr (appended)
//	DIR/proxy.log     the RocketMQ 5 proxy's (ledgermq proxy, cluster
//	                  mode, on 127.0.0.1:8081 when free, its /metrics on
//	                  a free port; with --acl it checks signatures as
//	                  FILE's first admin account, whose secret it reads
//	                  from DIR/proxy.secret, mode 0600) stdout and stderr
//	DIR/cluster.json  written atomically once the group's leader is
//	                  registered with the name server, and again whenever
//	                  a node is restarted:
//
//	{"namesrv":"127.0.0.1:9876",
//	 "nodes":[{"id":"n0","group":"broker-a","pid":1234,"addr":"127.0.0.1:10911",
//	           "raft":"127.0.0.1:10912","grpc":"127.0.0.1:10914",
//	           "dir":"DIR/n0"}, ...]}
//
// Ports: every node's client, raft, http and gRPC addresses are free loopback
// ports picked on the first run and kept in DIR/nI.conf, because the raft
// group remembers its members' addresses; a later run reuses them (and
// fails clearly if one is taken). The name server listens on --namesrv;
// its http address is the one cluster.json has from the last run while
// that is free (else a new one, which dev says).
//
// CPUs: the nodes of one machine share its CPUs, as pods with CPU limits
// would: unless GOMAXPROCS is set, every child runs with GOMAXPROCS = the
// machine's CPUs (dev's own GOMAXPROCS) divided by the number of nodes, at
// least 1 (childEnvWithCPUShare). A Go process with more processors than
// the CPUs it gets wakes idle threads for every goroutine it readies; on
// a small virtual machine those thread switches cost more than the work.
//
// Processes: dev starts the name server, waits until it accepts
// connections, then starts the nodes. Each child runs in its own process
// group (a terminal's Ctrl-C reaches only dev) and, on Linux, gets SIGTERM
// if dev dies. A child that exits is reported and, only with --restart,
// started again after a delay that doubles (1 s up to 30 s) while it keeps
// exiting within 30 s of its start; after three such exits in a row dev
// reports it as failing with the last error from its log, and a node that
// exits with status 3 (it cannot start from its own files) is reported with
// the admin command that rebuilds it. SIGTERM or SIGINT stop everything:
// SIGINT to the nodes (a whole-group stop: no leadership hand-over), up to
// stopGrace for them to exit, SIGKILL to any left, then SIGTERM and the
// same wait for the name server; dev exits 0.
//
// Goroutines: the command's goroutine runs the supervision loop (signals,
// exits, restarts, leader polling); one goroutine per running child waits
// for its exit and is waited for before dev returns.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/harness/procs"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/remoting"
)

// Errors of the dev command.
var (
	errDevConfig = errors.New("dev: bad setup")
	errDevChild  = errors.New("dev: process failed")
)

const (
	devBrokerName = devcluster.GroupName
	// stopGrace bounds how long a child has to exit after SIGTERM.
	stopGrace = 20 * time.Second
	// pollInterval paces restarts and leader polling.
	pollInterval = 250 * time.Millisecond
	// Restarts (--restart) back off exponentially from minRestartDelay to
	// maxRestartDelay while a child keeps exiting within stableUptime of
	// its start; a run that lasted longer starts the back-off afresh. After
	// failingAfter quick exits in a row dev reports the node as failing.
	minRestartDelay = time.Second
	maxRestartDelay = 30 * time.Second
	stableUptime    = 30 * time.Second
	failingAfter    = 3
)

func newDevCmd() *cobra.Command {
	var (
		dir       string
		namesrv   string
		nodes     int
		groups    int
		restart   bool
		logLevel  string
		logFormat string
		timing    string
		nodeConf  []string
		useTLS    bool
		aclPath   string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a name server and a local N-node broker group as supervised processes",
		Long: "dev starts a name server on --namesrv and an N-node broker group on loopback ports, each a\n" +
			"separate process of this binary, with data and logs in --dir. Once the group's leader is\n" +
			"registered it writes DIR/cluster.json and prints the addresses. A process that dies stays\n" +
			"down unless --restart. Ctrl-C (or SIGTERM) stops everything cleanly.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || nodes > 9 {
				return fmt.Errorf("%w: --nodes %d: want 1..9", errDevConfig, nodes)
			}
			if groups < 1 || groups > maxDevGroups {
				return fmt.Errorf("%w: --groups %d: want 1..%d", errDevConfig, groups, maxDevGroups)
			}
			if err := checkLoopback(namesrv); err != nil {
				return err
			}
			if logFormat != "text" && logFormat != "json" {
				return fmt.Errorf("%w: --log-format %q: want text or json", errDevConfig, logFormat)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			nodeConf = append(envNodeConf(), nodeConf...)
			for _, kv := range nodeConf {
				if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(kv, "\n\r") {
					return fmt.Errorf("%w: --node-conf %q: want KEY=VALUE", errDevConfig, kv)
				}
			}
			d := &devRun{
				dir: abs, namesrv: namesrv, nodes: nodes, groups: groups, restart: restart, logLevel: logLevel, logFormat: logFormat, timing: timing, nodeConf: nodeConf,
				tls: useTLS, out: cmd.OutOrStdout(),
				log: newLogger("dev", logLevel, false),
			}
			if aclPath != "" {
				if d.acl, err = loadDevACL(aclPath); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return d.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", ".run", "directory for data, logs, configs and cluster.json")
	f.StringVar(&namesrv, "namesrv", "127.0.0.1:9876", "loopback address of the name server")
	f.IntVar(&nodes, "nodes", 3, "nodes in each broker group")
	f.IntVar(&groups, "groups", 1, "broker groups (broker-a, broker-b, …), each a raft group of --nodes nodes; a directory of an earlier run gains the groups it lacks")
	f.BoolVar(&restart, "restart", false, "restart a process that exits")
	f.StringVar(&logLevel, "log-level", "info", "log level of dev and of every child")
	f.StringVar(&logFormat, "log-format", "text", "log format of every child: text or json")
	f.StringVar(&timing, "timing", "lan", "raft timing profile of the nodes: default or lan")
	f.BoolVar(&useTLS, "tls", false, "run every link over TLS with a local CA and certificates made in DIR/tls (clients: --tls-ca DIR/tls/ca.pem)")
	f.StringVar(&aclPath, "acl", "", "RocketMQ plain_acl.yml checked by every node and the name server; the nodes register with its first admin account (clients: --access-key/--secret-key)")
	f.StringArrayVar(&nodeConf, "node-conf", nil, "KEY=VALUE added to every node's broker config (repeatable), e.g. raft.trailing_logs=64")
	return cmd
}

// checkLoopback accepts only a loopback ip:port.
func checkLoopback(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return fmt.Errorf("%w: %q must be a loopback ip:port such as 127.0.0.1:9876", errDevConfig, addr)
	}
	return nil
}

// devRun is one run of the dev command.
type devRun struct {
	dir, namesrv     string
	namesrvHTTP      string
	nodes, groups    int
	restart          bool
	logLevel, timing string
	logFormat        string
	nodeConf         []string // extra KEY=VALUE lines of every node's config
	tls              bool
	acl              *devACL       // with --acl
	tlsFiles         tlsconf.Files // with tls: DIR/tls's node files
	clientTLS        *tls.Config   // with tls: how dev itself dials the name server
	out              io.Writer
	log              hclog.Logger
	sup              *supervisor
	layout           []devNode
	nsChild          *child
	nodeChildren     []*child
	// proxy is the address of the RocketMQ 5 proxy (cluster mode) dev
	// runs in front of the groups, proxyHTTP its metrics address;
	// proxyChild its process.
	proxy, proxyHTTP string
	proxyChild       *child
	announced, stale bool
	// leaders is each group's leader (client address) as last polled.
	leaders map[string]string
	// written is cluster.json as last written (rewritten only on change);
	// lastPoll paces the leader polls that keep its roles current.
	written  []byte
	lastPoll time.Time
}

func (d *devRun) run(ctx context.Context) error {
	lock, err := vfs.Lock(d.dir)
	if err != nil {
		return fmt.Errorf("%w: %s is in use by another dev: %w", errDevConfig, d.dir, err)
	}
	defer lock.Release()
	if d.layout, err = planLayout(d.dir, d.groups, d.nodes, d.namesrv); err != nil {
		return err
	}
	if err := procs.CheckFree(d.namesrv); err != nil {
		return fmt.Errorf("%w: name server address %s: %w", errDevConfig, d.namesrv, err)
	}
	secretPath, secret, err := devSecret(d.dir)
	if err != nil {
		return err
	}
	extra := []string{"cluster_secret=" + secret}
	if d.tls {
		if d.tlsFiles, err = tlsconf.WriteDev(filepath.Join(d.dir, "tls")); err != nil {
			return fmt.Errorf("%w: TLS certificates: %w", errDevConfig, err)
		}
		src, err := tlsconf.Load(d.tlsFiles)
		if err != nil {
			return fmt.Errorf("%w: TLS certificates: %w", errDevConfig, err)
		}
		d.clientTLS = src.ClientConfig()
		extra = append(extra, "tls.enable=true", "tls.cert_file="+escapeProperty(d.tlsFiles.CertFile, false),
			"tls.key_file="+escapeProperty(d.tlsFiles.KeyFile, false), "tls.ca_file="+escapeProperty(d.tlsFiles.CAFile, false))
	}
	if d.acl != nil {
		extra = append(extra, d.acl.nodeLines()...)
	}
	extra = append(extra, d.nodeConf...)
	for _, n := range d.layout {
		if err := vfs.WriteFileAtomic(vfs.Default, n.conf, nodeConfText(n, d.layout, d.namesrv, d.timing, extra)); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env, procsEach := childEnvWithCPUShare(procs.ChildEnv(), len(d.layout))
	if procsEach > 0 {
		fmt.Fprintf(d.out, "dev: %d nodes share this machine's %d CPUs: each process runs with GOMAXPROCS=%d (set GOMAXPROCS to choose)\n",
			len(d.layout), runtime.GOMAXPROCS(0), procsEach)
	}
	d.sup = newSupervisor(exe, env, d.log)
	defer d.stopAll()

	// The name server's http address is the last run's (cluster.json)
	// while it is free, as the nodes' are.
	skip := map[int]bool{}
	for _, n := range d.layout {
		for _, a := range []string{n.addr, n.raft, n.http} {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				skip[int(ap.Port())] = true
			}
		}
	}
	if ap, err := netip.ParseAddrPort(d.namesrv); err == nil {
		skip[int(ap.Port())] = true
	}
	var last string
	if d.namesrvHTTP, last, err = namesrvHTTPAddr(d.dir, skip); err != nil {
		return err
	}
	if last != "" && last != d.namesrvHTTP {
		fmt.Fprintf(d.out, "dev: the name server's http address of the last run, %s, is taken; it is %s now\n", last, d.namesrvHTTP)
	}
	d.nsChild = &child{name: "namesrv", logPath: filepath.Join(d.dir, "namesrv.log"),
		args: []string{"namesrv", "--listen", d.namesrv, "--http", d.namesrvHTTP, "--console", "--log-level", d.logLevel, "--log-format", d.logFormat,
			"--cluster-secret-file", secretPath}}
	if d.tls {
		d.nsChild.args = append(d.nsChild.args, "--tls-cert", d.tlsFiles.CertFile, "--tls-key", d.tlsFiles.KeyFile, "--tls-ca", d.tlsFiles.CAFile)
	}
	if d.acl != nil {
		d.nsChild.args = append(d.nsChild.args, d.acl.namesrvArgs()...)
	}
	if err := d.sup.start(d.nsChild); err != nil {
		return err
	}
	if err := procs.WaitListening(ctx, d.namesrv, d.nsChild.proc.Done(), 15*time.Second); err != nil {
		switch {
		case errors.Is(err, procs.ErrExited):
			return fmt.Errorf("%w: namesrv exited at start-up; see %s", errDevChild, d.nsChild.logPath)
		case errors.Is(err, procs.ErrNotListening):
			return fmt.Errorf("%w: namesrv %w; see %s", errDevChild, err, d.nsChild.logPath)
		}
		return err
	}
	for _, n := range d.layout {
		c := &child{name: n.id, logPath: filepath.Join(d.dir, n.id+".log"),
			args: []string{"broker", "--config", n.conf, "--log-level", d.logLevel, "--log-format", d.logFormat}}
		if err := d.sup.start(c); err != nil {
			return err
		}
		d.nodeChildren = append(d.nodeChildren, c)
	}
	if err := d.startProxy(skip); err != nil {
		return err
	}
	if d.groups == 1 {
		fmt.Fprintf(d.out, "dev: name server and %d nodes started in %s; waiting for a leader\n", d.nodes, d.dir)
	} else {
		fmt.Fprintf(d.out, "dev: name server and %d groups of %d nodes started in %s; waiting for their leaders\n", d.groups, d.nodes, d.dir)
	}
	return d.loop(ctx)
}

// devProxyAddr is where dev's proxy listens when the port is free
// (RocketMQ's proxy port).
const devProxyAddr = "127.0.0.1:8081"

// startProxy starts the RocketMQ 5 proxy in front of the groups, on
// devProxyAddr or, when that is taken, a free loopback port not in skip,
// with its metrics on another free port. With --acl it checks calls
// against the groups' rules, reading them as the ACL file's first admin
// account (its secret in DIR/proxy.secret, mode 0600, as the nodes' is in
// their configs).
func (d *devRun) startProxy(skip map[int]bool) error {
	d.proxy = devProxyAddr
	for _, n := range d.layout {
		skip[procs.PortOf(n.grpc)] = true
	}
	if skip[procs.PortOf(d.proxy)] || procs.CheckFree(d.proxy) != nil {
		ports, err := freePorts(1, skip)
		if err != nil {
			return fmt.Errorf("%w: a port for the proxy: %w", errDevConfig, err)
		}
		d.proxy = procs.Loopback(ports[0])
	}
	skip[procs.PortOf(d.proxy)] = true
	ports, err := freePorts(1, skip)
	if err != nil {
		return fmt.Errorf("%w: a port for the proxy's metrics: %w", errDevConfig, err)
	}
	d.proxyHTTP = procs.Loopback(ports[0])
	c := &child{name: "proxy", logPath: filepath.Join(d.dir, "proxy.log"),
		args: []string{"proxy", "--namesrv", d.namesrv, "--listen", d.proxy, "--http", d.proxyHTTP, "--log-level", d.logLevel, "--log-format", d.logFormat}}
	if d.tls {
		c.args = append(c.args, "--tls-cert", d.tlsFiles.CertFile, "--tls-key", d.tlsFiles.KeyFile, "--tls-ca", d.tlsFiles.CAFile)
	}
	if d.acl != nil {
		secretFile := filepath.Join(d.dir, "proxy.secret")
		if err := os.WriteFile(secretFile, []byte(d.acl.creds.SecretKey+"\n"), 0o600); err != nil {
			return fmt.Errorf("%w: the proxy's secret key: %w", errDevConfig, err)
		}
		c.args = append(c.args, "--acl-enable", "--access-key", d.acl.creds.AccessKey, "--secret-key-file", secretFile)
	}
	if err := d.sup.start(c); err != nil {
		return err
	}
	d.proxyChild = c
	return nil
}

// loop supervises the children until ctx ends.
func (d *devRun) loop(ctx context.Context) error {
	client := remoting.NewClient(remoting.ClientConfig{TLS: d.clientTLS})
	defer client.Close()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	pending := map[*child]time.Time{} // restarts due
	d.stale = true
	waitingSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(d.out, "dev: stopping")
			return nil
		case ev := <-d.sup.exits:
			if ev.run != ev.c.proc.Run() {
				continue // an earlier generation
			}
			fmt.Fprintf(d.out, "dev: %s (pid %d) exited: %v; log %s\n", ev.c.name, ev.pid, procs.ExitText(ev.err), ev.c.logPath)
			if d.restart {
				delay := ev.c.exited(time.Now())
				d.reportFailing(ev)
				pending[ev.c] = time.Now().Add(delay)
				continue
			}
			if !d.anyAlive() {
				return fmt.Errorf("%w: every process has exited", errDevChild)
			}
		case now := <-tick.C:
			for c, due := range pending {
				if now.Before(due) {
					continue
				}
				delete(pending, c)
				c.restarts++
				if err := d.sup.start(c); err != nil {
					d.log.Error("restart failed", "process", c.name, "error", err)
					pending[c] = now.Add(5 * time.Second)
					continue
				}
				fmt.Fprintf(d.out, "dev: restarted %s (pid %d)\n", c.name, c.proc.Pid())
				d.stale = true
			}
			// Poll after a restart, and every second to keep the roles in
			// cluster.json current (written only when they change).
			if d.stale || now.Sub(d.lastPoll) >= time.Second {
				d.lastPoll = now
				d.pollLeader(ctx, client)
			}
			if !d.announced && time.Since(waitingSince) > 60*time.Second {
				fmt.Fprintf(d.out, "dev: still no leader registered after 60s; see the logs in %s\n", d.dir)
				waitingSince = time.Now()
			}
		}
	}
}

// reportFailing tells the operator about a node that keeps failing, once
// per streak of quick exits, with the last error it printed; and, for a
// node that cannot start from its own files, how to rebuild it.
func (d *devRun) reportFailing(ev exitEvent) {
	c := ev.c
	var xe *exec.ExitError
	cannotStart := errors.As(ev.err, &xe) && xe.ExitCode() == exitCannotStart
	switch {
	case cannotStart && !c.toldCannotStart:
		c.toldCannotStart = true
		fmt.Fprintf(d.out, "dev: %s cannot start from its own files; restarting will not help (next try in %v). Its error: %s\n"+
			"dev: to rebuild %s from the group: %s admin raft replace-node %s --dev-dir %s\n",
			c.name, c.delay, lastErrorLine(c.logPath), c.name, d.sup.exe, c.name, d.dir)
	case c.quickFails == failingAfter && !c.toldCannotStart:
		fmt.Fprintf(d.out, "dev: %s keeps failing (%d starts in a row ended within %v); next start in %v; last error: %s\n",
			c.name, c.quickFails, stableUptime, c.delay, lastErrorLine(c.logPath))
	case c.quickFails >= failingAfter:
		fmt.Fprintf(d.out, "dev: %s still failing; next start in %v\n", c.name, c.delay)
	}
}

// lastErrorLine is the last line the command printed as its error
// ("ledgermq: …") in a child's log, or its last non-empty line.
func lastErrorLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const tail = 16 << 10
	buf := make([]byte, tail)
	size, _ := f.Seek(0, io.SeekEnd)
	off := max(size-tail, 0)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "ledgermq: ") {
			return lines[i]
		}
	}
	if len(lines) > 0 {
		return lines[len(lines)-1]
	}
	return "(empty log)"
}

// anyAlive reports whether a child is running.
func (d *devRun) anyAlive() bool {
	for _, c := range append([]*child{d.nsChild}, d.nodeChildren...) {
		if c.alive() {
			return true
		}
	}
	return false
}

// pollLeader asks the name server for every group's leader; once each
// has one it writes cluster.json (and announces the cluster the first
// time), and rewrites it when a role changes.
func (d *devRun) pollLeader(ctx context.Context, client *remoting.Client) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if d.leaders == nil {
		d.leaders = map[string]string{}
	}
	for _, g := range procs.GroupNames(d.groups) {
		leader, err := devcluster.Leader(rctx, client, d.namesrv, g)
		if err != nil || leader == "" {
			return
		}
		d.leaders[g] = leader
	}
	cf := d.clusterFile(false)
	path, changed := d.writeClusterFile(cf)
	if path == "" {
		return
	}
	d.stale = false
	if d.announced {
		if changed {
			fmt.Fprintf(d.out, "dev: %s updated\n", path)
		}
		return
	}
	d.announced = true
	fmt.Fprintf(d.out, "dev: cluster %s is up (%s)\n", strings.Join(procs.GroupNames(d.groups), ", "), path)
	fmt.Fprintf(d.out, "  %-8s %-21s pid %-7d %-26s http %-21s log %s\n", "namesrv", d.namesrv, d.nsChild.proc.Pid(), "", d.namesrvHTTP, d.nsChild.logPath)
	for i, n := range cf.Nodes {
		group := ""
		if d.groups > 1 {
			group = n.Group + " "
		}
		fmt.Fprintf(d.out, "  %-8s %-21s pid %-7d raft %-21s http %-21s %s%-8s log %s\n", n.ID, n.Addr, n.PID, n.Raft, n.HTTP, group, n.Role, d.nodeChildren[i].logPath)
	}
	if d.tls {
		fmt.Fprintf(d.out, "dev: every link is TLS; clients add --tls-ca %s (the real client: WithTls(true))\n", d.tlsFiles.CAFile)
	}
	if d.acl != nil {
		fmt.Fprintf(d.out, "dev: ACL on every node and the name server (%s); nodes register as accessKey %s; clients add --access-key/--secret-key of an account (the real client: primitive.Credentials)\n",
			d.acl.file, d.acl.creds.AccessKey)
	}
	var grpcs []string
	for _, n := range cf.Nodes {
		if n.GRPC != "" {
			grpcs = append(grpcs, n.GRPC)
		}
	}
	if len(grpcs) > 0 {
		tlsNote := ""
		if d.tls {
			tlsNote = fmt.Sprintf(" over TLS (sslEnabled, trusting %s)", d.tlsFiles.CAFile)
		}
		fmt.Fprintf(d.out, "dev: RocketMQ 5 (gRPC) clients use endpoints %s%s\n", strings.Join(grpcs, ";"), tlsNote)
	}
	if d.proxy != "" {
		var notes []string
		if d.tls {
			notes = append(notes, "over TLS")
		}
		if d.acl != nil {
			notes = append(notes, "checking signatures as the nodes do")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(d.out, "dev: RocketMQ 5 (gRPC) clients can use the proxy (cluster mode) at %s instead%s; metrics http://%s/metrics; log %s\n",
			d.proxy, note, d.proxyHTTP, d.proxyChild.logPath)
	}
	if d.groups > 1 {
		fmt.Fprintf(d.out, "dev: a topic on every group: %s admin topic create -n %s -t TOPIC -c DefaultCluster\n", d.sup.exe, d.namesrv)
	}
	signIn := ""
	if d.acl != nil {
		signIn = " (sign in on its Account page with an account of the ACL file)"
	}
	fmt.Fprintf(d.out, "dev: web console: http://%s/%s; or its own process: %s console -n %s%s\n", d.namesrvHTTP, signIn, d.sup.exe, d.namesrv, d.consoleFlags())
	fmt.Fprintf(d.out, "dev: clients use name server %s; Ctrl-C stops everything\n", d.namesrv)
}

// consoleFlags are the connection flags the console needs for this dev
// cluster (its TLS CA; with ACL, an account's keys, not printed).
func (d *devRun) consoleFlags() string {
	var out string
	if d.tls {
		out += " --tls-ca " + d.tlsFiles.CAFile
	}
	if d.acl != nil {
		out += " --access-key AK --secret-key SK"
	}
	return out
}

// clusterFile is cluster.json's content: every node's group, addresses,
// pid (0 while down) and role (leader, follower, down; stopped once dev
// stops), from the leaders last polled.
func (d *devRun) clusterFile(stopped bool) devcluster.File {
	cf := devcluster.File{Namesrv: d.namesrv, NamesrvHTTP: d.namesrvHTTP, Proxy: d.proxy, ProxyHTTP: d.proxyHTTP}
	for i, n := range d.layout {
		pid, role := 0, devcluster.RoleDown
		if c := d.nodeChildren[i]; c.alive() {
			pid, role = c.proc.Pid(), devcluster.RoleFollower
			if n.addr == d.leaders[n.group] {
				role = devcluster.RoleLeader
			}
		}
		if stopped {
			pid, role = 0, devcluster.RoleStopped
		}
		cf.Nodes = append(cf.Nodes, devcluster.Node{ID: n.id, Group: n.group, PID: pid, Addr: n.addr, Raft: n.raft, HTTP: n.http, GRPC: n.grpc, Role: role, Dir: n.dir})
	}
	return cf
}

// writeClusterFile writes cf as cluster.json when it changed and returns
// its path ("" after an error) and whether it was written.
func (d *devRun) writeClusterFile(cf devcluster.File) (string, bool) {
	data, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return "", false
	}
	data = append(data, '\n')
	path := filepath.Join(d.dir, devcluster.FileName)
	if bytes.Equal(data, d.written) {
		return path, false
	}
	if err := vfs.WriteFileAtomic(vfs.Default, path, data); err != nil {
		d.log.Error("writing cluster.json", "error", err)
		return "", false
	}
	d.written = data
	return path, true
}

// stopAll stops the nodes, then the name server, waits for every child's
// goroutine, and marks every node stopped in cluster.json.
func (d *devRun) stopAll() {
	if d.sup == nil {
		return
	}
	if d.proxyChild != nil {
		d.sup.stop([]*child{d.proxyChild}, syscall.SIGTERM, d.out)
	}
	d.sup.stop(d.nodeChildren, syscall.SIGINT, d.out)
	if d.nsChild != nil {
		d.sup.stop([]*child{d.nsChild}, syscall.SIGTERM, d.out)
	}
	if d.announced {
		d.writeClusterFile(d.clusterFile(true))
	}
	fmt.Fprintln(d.out, "dev: stopped")
}

// devRaftSegmentSize is the raft log segment size of dev nodes: raft-wal
// allocates a segment's file whole, and the default (64 MiB) would be most
// of a demo node's disk.
const devRaftSegmentSize = 4 << 20

// devSecretFile is the cluster secret's file in the dev directory.
const devSecretFile = "cluster.secret"

// devSecret returns the dev directory's cluster secret and its file,
// making a random one on the first run.
func devSecret(dir string) (path, secret string, err error) {
	path = filepath.Join(dir, devSecretFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		secret = strings.TrimSpace(string(data))
		if err := auth.CheckSecret(secret); err != nil || secret == "" {
			return "", "", fmt.Errorf("%w: %s: not a cluster secret (delete it to get a new one): %v", errDevConfig, path, err)
		}
		return path, secret, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", "", fmt.Errorf("%w: %w", errDevConfig, err)
	}
	if secret, err = auth.NewSecret(); err != nil {
		return "", "", err
	}
	// WriteFileAtomic creates the file 0600: only this user reads it.
	if err := vfs.WriteFileAtomic(vfs.Default, path, []byte(secret+"\n")); err != nil {
		return "", "", err
	}
	return path, secret, nil
}

// namesrvHTTPAddr is the name server's http address: the one cluster.json
// in dir has from the last run while it is a free loopback port none of
// skip, else a new free one. last is the last run's ("" when unknown).
func namesrvHTTPAddr(dir string, skip map[int]bool) (addr, last string, err error) {
	if f, err := devcluster.ReadFile(dir); err == nil && f.NamesrvHTTP != "" {
		last = f.NamesrvHTTP
		if ap, err := netip.ParseAddrPort(last); err == nil && ap.Addr().IsLoopback() && !skip[int(ap.Port())] && procs.CheckFree(last) == nil {
			return last, last, nil
		}
	}
	ports, err := freePorts(1, skip)
	if err != nil {
		return "", last, err
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0]), last, nil
}

// freePorts picks n distinct free loopback ports, none of skip.
func freePorts(n int, skip map[int]bool) ([]int, error) {
	ports, release, err := procs.FreePorts(n, skip)
	release()
	return ports, err
}

// child is one supervised process: its procs.Proc and dev's restart
// bookkeeping, which belongs to the supervision loop.
type child struct {
	name, logPath string
	args          []string
	proc          *procs.Proc
	restarts      int
	started       time.Time     // when the current run started
	quickFails    int           // runs in a row that ended within stableUptime
	delay         time.Duration // the back-off before the next start
	// toldCannotStart: this streak's exit with exitCannotStart was reported.
	toldCannotStart bool
}

// exited records that the current run ended at now and returns how long to
// wait before starting the child again.
func (c *child) exited(now time.Time) time.Duration {
	if now.Sub(c.started) >= stableUptime {
		c.quickFails, c.toldCannotStart = 0, false
		c.delay = minRestartDelay
		return c.delay
	}
	c.quickFails++
	c.delay = min(minRestartDelay<<min(c.quickFails-1, 6), maxRestartDelay)
	return c.delay
}

func (c *child) alive() bool { return c.proc != nil && c.proc.Running() }

// exitEvent reports that one run (run) of a child exited.
type exitEvent struct {
	c        *child
	run, pid int
	err      error
}

// supervisor starts children and reports their exits.
type supervisor struct {
	exe   string
	env   []string
	log   hclog.Logger
	exits chan exitEvent
}

func newSupervisor(exe string, env []string, log hclog.Logger) *supervisor {
	return &supervisor{exe: exe, env: env, log: log, exits: make(chan exitEvent, 64)}
}

// start runs c again, its output appended to its log; its exit is sent to
// s.exits (dropped once nobody listens any more).
func (s *supervisor) start(c *child) error {
	if c.proc == nil {
		c.proc = procs.New(procs.Spec{Name: c.name, Bin: s.exe, Args: c.args, LogPath: c.logPath, Env: s.env, DeathSignal: syscall.SIGTERM})
		c.proc.OnExit(func(e procs.Exit) {
			select {
			case s.exits <- exitEvent{c: c, run: e.Run, pid: e.Pid, err: e.Err}:
			default: // nobody is listening any more (shutting down)
			}
		})
	}
	if err := c.proc.Start(); err != nil {
		return fmt.Errorf("%w: %w", errDevChild, err)
	}
	c.started = c.proc.Started()
	s.log.Debug("started", "process", c.name, "pid", c.proc.Pid())
	return nil
}

// stop sends sig to every running child of cs (SIGCONT first, for one
// paused), waits up to stopGrace for them, kills the rest and reports how
// each stopped to out. The nodes of a whole-group stop get SIGINT (no
// leadership hand-over: every peer is stopping too).
func (s *supervisor) stop(cs []*child, sig syscall.Signal, out io.Writer) {
	var ps []*procs.Proc
	for _, c := range cs {
		if c.proc != nil {
			ps = append(ps, c.proc)
		}
	}
	for _, st := range procs.StopAll(ps, sig, stopGrace) {
		if st.Killed {
			s.log.Warn("process did not stop in time; killed it", "process", st.Name, "pid", st.Pid)
		}
		fmt.Fprintf(out, "dev: %s (pid %d) stopped: %s\n", st.Name, st.Pid, procs.ExitText(st.Err))
	}
}

// childEnvWithCPUShare is env with GOMAXPROCS set to this machine's CPUs
// divided among nodes (at least 1), and that share; env as it is and 0
// when GOMAXPROCS is set already (the user's choice), or when every node
// would get every CPU anyway.
func childEnvWithCPUShare(env []string, nodes int) ([]string, int) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env, 0
		}
	}
	cpus := runtime.GOMAXPROCS(0)
	share := max(1, cpus/max(1, nodes))
	if share >= cpus {
		return env, 0
	}
	return append(slices.Clip(env), "GOMAXPROCS="+strconv.Itoa(share)), share
}
