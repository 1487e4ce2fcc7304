package main

// `ledgermq broker`: one node of a broker group, that is one member of the
// group's raft group (dledger) and the RocketMQ-protocol broker over it.
//
// Start-up: load the configuration (brokerconfig.go), open the raft group
// (which recovers the store and bootstraps the group from raft.peers when
// it has no state), build and start the broker, print one line
//
//	broker n0 of broker-a listening on 127.0.0.1:10911 (raft 127.0.0.1:40911)
//
// (with ", http ADDR" after the raft address when http_addr serves the
// operator endpoints of package ops, and ", grpc ADDR" when grpc_listen
// serves RocketMQ 5 clients, package grpcapi) to stdout and wait. A raft node that stops itself (a store that cannot
// write, raft in a state only a restart clears) makes the command return
// its error (exit 1), for the supervisor to start it again. SIGTERM, SIGINT
// or the command's context ending shut the node down gracefully: the
// broker unregisters and stops serving, then the raft group closes, and
// the command returns nil (exit 0). SIGTERM (this node alone stopping, as
// in a rolling restart) first hands leadership to a caught-up follower;
// SIGINT (the whole group stopping: ledgermq dev's stop, a terminal's
// Ctrl-C) does not, since every peer is stopping too.
//
// Goroutines: the command's goroutine only waits; the raft group and the
// broker own theirs and Close waits for them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// shutdownTimeout bounds the broker's part of a graceful shutdown.
const shutdownTimeout = 15 * time.Second

func newBrokerCmd() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run one node of a broker group (a raft group serving the RocketMQ protocol)",
		Long: "broker runs one node of a broker group: a member of the group's raft group and the\n" +
			"broker that serves producers and consumers over it. Configure it with --config FILE (a\n" +
			"RocketMQ broker.conf works: its key names are accepted), LEDGERMQ_* environment variables\n" +
			"and flags; flags beat the environment, which beats the file. --check-config prints the\n" +
			"effective configuration with the source of every value and exits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadBrokerConfig(cmd.Flags(), true)
			if err != nil {
				return err
			}
			if check {
				return cfg.writeSettings(cmd.OutOrStdout())
			}
			return runBroker(cmd, cfg)
		},
	}
	addBrokerFlags(cmd.Flags())
	cmd.Flags().BoolVar(&check, "check-config", false, "print the effective configuration and exit")
	return cmd
}

// runBroker runs the node until a signal or the command's context ends it.
func runBroker(cmd *cobra.Command, cfg *nodeConfig) error {
	base := newLogger("ledgermq", cfg.LogLevel, cfg.LogJSON)
	log := base.Named("broker-cmd").With("group", cfg.BrokerName, "node", cfg.NodeID)
	for _, ig := range cfg.Ignored {
		log.Warn("ignoring", "what", ig)
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if os.Getenv("GOGC") == "" {
		// gc_percent defaults to Go's own 100: a broker allocates per
		// message, and a heap let grow to several times its live size
		// (400 was the default once) spreads those allocations over
		// memory the caches no longer hold and the kernel must fault in
		// again: under `bench produce` 4 × 64 a leader took 7 times the
		// page faults, twice the RSS and a tenth less rate than at 100,
		// the collector's own CPU notwithstanding (README "Performance").
		debug.SetGCPercent(cfg.GCPercent)
	}
	if !cfg.HTTPProfiling {
		// Go samples one allocation in 512 KiB for its heap profile,
		// walking the allocating stack each time: 1.4 % of a leader's
		// CPU under `bench produce` 4 × 64 (0.9 % of a follower's). Only
		// /debug/pprof/ (http_pprof) can read that profile: without it,
		// nothing is sampled.
		runtime.MemProfileRate = 0
	}

	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"cluster": cfg.ClusterName, "group": cfg.BrokerName, "node": cfg.NodeID}
	metrics := newBrokerMetrics(reg, labels)
	hooks := broker.NewHooks()
	dc := cfg.dledgerConfig(hooks)
	if cfg.SyncReport {
		// The node's one durable-length report (store.sync_report; the
		// chaos harness's power-loss model), shared by the store and the
		// raft log, open until the node has stopped.
		rep, err := syncreport.Open(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("store.sync_report: %w", err)
		}
		defer rep.Close()
		dc.Store.SyncReport = rep
	}
	dc.Logger = base
	dc.LogObserver = metrics
	onRole := dc.OnRoleChange
	dc.OnRoleChange = func(ev dledger.RoleEvent) {
		metrics.roleChanged(ev)
		onRole(ev)
	}
	group, err := dledger.Open(dc)
	if err != nil {
		return err
	}
	bc := cfg.brokerConfig()
	bc.Logger = base
	bc.GRPCEndpoint = cfg.grpcEndpoint()
	bc.Observer = metrics
	if s, ok := group.Settings(); ok && s.DelayLevels != "" {
		// The group's delay table, whatever this node's configuration says
		// (the raft group logged any difference).
		if levels, err := broker.ParseDelayLevels(s.DelayLevels); err == nil {
			bc.DelayLevels = levels
		}
	}
	b, err := broker.New(bc, broker.OverGroup(group), hooks)
	if err != nil {
		return errors.Join(err, closeGroup(group))
	}
	grpcSrv, err := cfg.grpcServer(b, base, metrics)
	if err != nil {
		return errors.Join(err, closeGroup(group))
	}
	if grpcSrv != nil {
		b.Attach(grpcSrv)
	}
	if err := b.Start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		return errors.Join(err, b.Close(ctx), closeGroup(group))
	}
	// stopping turns /readyz to 503 once shutdown begins, so a load
	// balancer stops sending new clients before the node stops serving.
	var stopping atomic.Bool
	opsSrv, err := startOps(cfg, group, b, &stopping, reg, labels, log)
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		return errors.Join(err, b.Close(sctx), closeGroup(group))
	}
	if opsSrv != nil {
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = opsSrv.Close(sctx)
		}()
	}
	log.Info("broker node started", "addr", b.Addr().String(), "raft", cfg.RaftBind,
		"peers", formatPeers(cfg.Peers), "timing", cfg.Timing.Name, "version", version)
	httpNote := ""
	if opsSrv != nil {
		httpNote = ", http " + opsSrv.Addr().String()
	}
	if grpcSrv != nil {
		httpNote += ", grpc " + grpcSrv.Addr().String()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "broker %s of %s listening on %s (raft %s%s)\n", cfg.NodeID, cfg.BrokerName, b.Addr(), cfg.RaftBind, httpNote)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// SIGTERM stops this node alone (a rolling restart): leadership is
	// handed over first. SIGINT stops it as part of the whole group (dev's
	// stop, a terminal's Ctrl-C): every peer is stopping, so no hand-over.
	wholeGroup := false
	select {
	case <-cmd.Context().Done():
	case sig := <-sigs:
		wholeGroup = sig == os.Interrupt
	case <-group.Failed():
		// The node stopped itself (fail-stop): exit, so that the
		// supervisor starts it again, rather than serve without raft.
		log.Error("the raft node stopped itself; exiting", "error", group.Err())
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		return errors.Join(group.Err(), b.Close(sctx), closeGroup(group))
	}
	stopping.Store(true)
	log.Info("shutting down", "role", group.Role().Role, "hand_over", !wholeGroup)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	closeRaft := closeGroup
	if wholeGroup {
		closeRaft = func(g *dledger.Group) error { return ignoreClosed(g.CloseWithoutHandOver()) }
	} else {
		handOver(sctx, group, 4*cfg.Timing.ElectionTimeout, log)
	}
	err = errors.Join(b.Close(sctx), closeRaft(group))
	log.Info("stopped", "error", err)
	return err
}

// grpcServer is the node's RocketMQ 5 gRPC port (grpc_listen), nil when
// off. It advertises broker_ip with the port it listens on; routes name
// the leader's address from grpc_addrs. With tls.enable it serves TLS with
// the node's certificates; with the ACL on, every call is checked by it.
// obs hears every call (the node's metrics).
func (c *nodeConfig) grpcServer(b *broker.Broker, log hclog.Logger, obs grpcapi.CallObserver) (*grpcapi.Server, error) {
	if c.GRPCListen == "" {
		return nil, nil
	}
	adv := ""
	if _, port, err := net.SplitHostPort(c.GRPCListen); err == nil && port != "0" {
		ip, _, _ := net.SplitHostPort(c.ClientAddr)
		adv = net.JoinHostPort(ip, port)
	}
	gc := grpcapi.Config{
		Addr:        c.GRPCListen,
		Advertise:   adv,
		BrokerName:  c.BrokerName,
		NodeID:      c.NodeID,
		Peers:       c.GRPCAddrs,
		Broker:      b,
		MaxBodySize: c.MaxMessageSize,
		Observer:    obs,
		Logger:      log,
	}
	if c.TLS != nil {
		// The remoting port's certificates, re-read when they change;
		// RocketMQ 5 clients present none.
		srv, err := c.TLS.ServerConfig(false)
		if err != nil {
			return nil, fmt.Errorf("config: grpc_listen: %w", err)
		}
		gc.TLS, gc.PeerTLS = srv, c.TLS.ClientConfig()
	}
	if b.ACLEnabled() {
		gc.Access = b
	}
	return grpcapi.New(gc)
}

// grpcEndpoint is the address the node's gRPC port is reached at, which
// the broker publishes for proxies (broker.GRPCEndpointKey): its entry in
// grpc_addrs, else broker_ip with grpc_listen's port; "" when the port is
// off or its port is picked at start.
func (c *nodeConfig) grpcEndpoint() string {
	if c.GRPCListen == "" {
		return ""
	}
	if a := c.GRPCAddrs[c.NodeID]; a != "" {
		return a
	}
	_, port, err := net.SplitHostPort(c.GRPCListen)
	if err != nil || port == "0" {
		return ""
	}
	ip, _, _ := net.SplitHostPort(c.ClientAddr)
	return net.JoinHostPort(ip, port)
}

// handOver moves leadership to a caught-up follower while this node still
// serves, so a rolling restart costs clients one leader change and no
// election timeout: sends arriving meanwhile are forwarded to the new
// leader, which registers with the name server as brokerId 0. The group's
// Close tries again if this fails. It waits at most wait, so that when the
// whole group stops at once (the new leader stopping too) this node still
// closes in time.
func handOver(ctx context.Context, g *dledger.Group, wait time.Duration, log hclog.Logger) {
	if !g.IsLeader() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := g.TransferLeadership(ctx, ""); err != nil {
		log.Warn("leadership transfer before shutdown failed", "error", err)
		return
	}
	leader, _, _ := g.WaitLeader(ctx)
	log.Info("leadership handed over before shutdown", "leader", leader)
}

// closeGroup closes the raft group (transferring leadership first).
func closeGroup(g *dledger.Group) error { return ignoreClosed(g.Close()) }

// ignoreClosed drops the error of closing a group closed before.
func ignoreClosed(err error) error {
	if errors.Is(err, dledger.ErrClosed) {
		return nil
	}
	return err
}
