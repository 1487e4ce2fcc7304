package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/console"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/ops"

	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

func newLogger(name, level string, json bool) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(level),
		JSONFormat: json,
		Output:     os.Stderr,
	})
}

func newNamesrvCmd() *cobra.Command {
	cfg := routing.DefaultConfig()
	var (
		logLevel                     string
		logJSON                      bool
		logFormat                    string
		check                        bool
		secretFile                   string
		httpAddr                     string
		httpPprof                    bool
		tlsFiles                     tlsconf.Files
		withConsole                  bool
		consoleUser, consolePassword string
	)
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "Run a name server (RocketMQ-compatible routing for producers and consumers)",
		Long: "namesrv keeps the routes of the broker groups that register with it and answers clients'\n" +
			"route queries. Name servers share no state; run several and give every broker all of them.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if logFormat != "text" && logFormat != "json" {
				return fmt.Errorf("namesrv: --log-format %q: want text or json", logFormat)
			}
			cfg.Logger = newLogger("namesrv", logLevel, logJSON || logFormat == "json")
			secret, err := namesrvSecret(secretFile)
			if err != nil {
				return err
			}
			cfg.Secret = secret
			if tlsFiles.Enabled() {
				if cfg.TLSServer, cfg.TLSClient, err = namesrvTLS(tlsFiles); err != nil {
					return err
				}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if consolePassword == "" {
				consolePassword = os.Getenv("LEDGERMQ_CONSOLE_PASSWORD")
			}
			if withConsole {
				if httpAddr == "" {
					return errors.New("namesrv: --console is served on the --http port: give --http")
				}
				if err := console.CheckListen(httpAddr, consoleUser, consolePassword); err != nil {
					return fmt.Errorf("namesrv: --console: %w", err)
				}
			}
			if check {
				if cfg.ACLEnable { // what NewServer would refuse
					if _, err := acl.LoadFile(cfg.ACLFile); err != nil {
						return fmt.Errorf("namesrv: %w", err)
					}
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), cfg.String())
				return err
			}
			srv, err := routing.NewServer(cfg)
			if err != nil {
				return err
			}
			if err := srv.Start(); err != nil {
				return err
			}
			cfg.Logger.Info("name server listening", "addr", srv.Addr().String(), "version", version)
			var stopping atomic.Bool
			if httpAddr != "" {
				var web http.Handler
				if withConsole {
					stopConsole, h, err := namesrvConsole(srv.Addr().String(), cfg.TLSClient, consoleUser, consolePassword)
					if err != nil {
						sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						return errors.Join(err, srv.Close(sctx))
					}
					defer stopConsole()
					web = h
				}
				opsSrv, err := startNamesrvOps(httpAddr, httpPprof, srv, &stopping, web, cfg.Logger)
				if err != nil {
					sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					return errors.Join(err, srv.Close(sctx))
				}
				defer func() {
					sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = opsSrv.Close(sctx)
				}()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "namesrv listening on %s\n", srv.Addr())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			stopping.Store(true)
			cfg.Logger.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return srv.Close(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "listen", cfg.Addr, "TCP address to listen on")
	f.DurationVar(&cfg.BrokerExpiry, "broker-expiry", cfg.BrokerExpiry, "remove a broker not heard from for this long")
	f.DurationVar(&cfg.ScanInterval, "scan-interval", cfg.ScanInterval, "how often expired brokers are looked for")
	f.Int64Var(&cfg.Limits.ReadBudget, "read-budget", routing.DefaultReadBudget, "bytes of requests read but not yet handled; beyond it peers are not read until handlers finish")
	f.IntVar(&cfg.Limits.MaxConns, "max-conns", remoting.DefaultMaxConns, "connections; more are closed at accept (-1: no limit)")
	f.IntVar(&cfg.Limits.MaxInFlightPerConn, "max-inflight-per-conn", remoting.DefaultMaxInFlightPerConn, "requests of one connection queued or being handled; more get SYSTEM_BUSY (-1: no limit)")
	f.StringVar(&cfg.KVConfigPath, "kv-config", "", "JSON file the KV configuration (PUT_KV_CONFIG, mqadmin updateKvConfig; Java's kvConfigPath) is kept in, written atomically on every change (none: kept in memory, lost on restart)")
	f.StringVar(&httpAddr, "http", "", "serve /livez, /readyz, /status and /metrics on this address (none when empty)")
	f.BoolVar(&withConsole, "console", false, "also serve the web console on --http (beyond loopback: needs --console-user/--console-password)")
	f.StringVar(&consoleUser, "console-user", "", "basic auth user of the console's pages")
	f.StringVar(&consolePassword, "console-password", "", "basic auth password of --console-user (unset: the LEDGERMQ_CONSOLE_PASSWORD environment variable)")
	f.BoolVar(&httpPprof, "http-pprof", false, "also serve Go's runtime profiles on --http under /debug/pprof/ (off: they show internals)")
	f.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	f.BoolVar(&logJSON, "log-json", false, "log as JSON (the same as --log-format json)")
	f.StringVar(&logFormat, "log-format", "text", "text or json (one JSON object a line)")
	f.BoolVar(&check, "check-config", false, "print the effective configuration and exit")
	f.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret brokers sign registrations with (else "+envClusterSecret+"; none: registrations are not signed)")
	f.BoolVar(&cfg.ACLEnable, "acl-enable", false, "check requests against --acl-file (RocketMQ's plain ACL, as the broker's acl_enable): registrations need an account, admin requests an admin account, signed route reads a valid signature")
	f.StringVar(&cfg.ACLFile, "acl-file", "", "RocketMQ plain_acl.yml, the brokers' acl_file (re-read when it changes; needs --acl-enable)")
	f.StringVar(&tlsFiles.CertFile, "tls-cert", "", "PEM certificate: serve TLS only (with --tls-key and --tls-ca; re-read when it changes)")
	f.StringVar(&tlsFiles.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&tlsFiles.CAFile, "tls-ca", "", "PEM CA certificates that brokers are verified against when their registrations are confirmed")
	return cmd
}

// namesrvTLS loads the name server's TLS: its port's and the one it dials
// brokers with to confirm registrations.
func namesrvTLS(f tlsconf.Files) (srv, cli *tls.Config, err error) {
	if f.CertFile == "" || f.KeyFile == "" || f.CAFile == "" {
		return nil, nil, errors.New("namesrv: TLS needs --tls-cert, --tls-key and --tls-ca")
	}
	src, err := tlsconf.Load(f)
	if err != nil {
		return nil, nil, fmt.Errorf("namesrv: %w", err)
	}
	if srv, err = src.ServerConfig(false); err != nil {
		return nil, nil, fmt.Errorf("namesrv: %w", err)
	}
	return srv, src.ClientConfig(), nil
}

// envClusterSecret is the environment variable of the cluster secret, for
// the name server and (as the cluster_secret key) the broker.
const envClusterSecret = envPrefix + "CLUSTER_SECRET"

// namesrvSecret is the cluster secret: the file's content (surrounding
// white space removed) when path is set, else the environment's.
func namesrvSecret(path string) (string, error) {
	if path == "" {
		return strings.TrimSpace(os.Getenv(envClusterSecret)), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("namesrv: cluster secret: %w", err)
	}
	secret := strings.TrimSpace(string(data))
	if secret == "" {
		return "", fmt.Errorf("namesrv: cluster secret file %s is empty", path)
	}
	return secret, nil
}

// namesrvStatus is what a name server's /status serves.
type namesrvStatus struct {
	Addr     string        `json:"addr"`
	Version  string        `json:"version"`
	Stopping bool          `json:"stopping,omitempty"`
	Stats    routing.Stats `json:"stats"`
}

// startNamesrvOps serves the name server's operator endpoints: /readyz is
// 200 while it serves (503 "shutting down" once it stops, or "not reading
// new requests" while its read budget's reserve is used up), /metrics has
// the route table's size, registrations and the remoting figures.
func startNamesrvOps(addr string, profiling bool, srv *routing.Server, stopping *atomic.Bool, web http.Handler, log hclog.Logger) (*ops.Server, error) {
	labels := prometheus.Labels{"namesrv": srv.Addr().String()}
	g := func(name, help string, f func(routing.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 { return f(srv.Stats()) })
	}
	c := func(name, help string, f func(routing.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 { return f(srv.Stats()) })
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		g("ledgermq_namesrv_broker_groups", "Broker groups in the route table.", func(s routing.Stats) float64 { return float64(s.Groups) }),
		g("ledgermq_namesrv_brokers", "Broker nodes in the route table.", func(s routing.Stats) float64 { return float64(s.Brokers) }),
		g("ledgermq_namesrv_topics", "Topics in the route table.", func(s routing.Stats) float64 { return float64(s.Topics) }),
		c("ledgermq_namesrv_registrations_total", "Broker registrations accepted.", func(s routing.Stats) float64 { return float64(s.Registrations) }),
		c("ledgermq_namesrv_registrations_refused_total", "Broker registrations refused (unsigned, fenced, malformed, busy).",
			func(s routing.Stats) float64 { return float64(s.Refused) }),
		ops.NewServerCollector(func() remoting.ServerStats { return srv.Stats().Remoting }, labels),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	status := func() any {
		return namesrvStatus{Addr: srv.Addr().String(), Version: version, Stopping: stopping.Load(), Stats: srv.Stats()}
	}
	ready := func() (bool, []string) {
		if stopping.Load() {
			return false, []string{"shutting down"}
		}
		if err := srv.ReadHealth(); err != nil {
			return false, []string{"not reading new requests: " + err.Error()}
		}
		return true, nil
	}
	return serveOps(addr, profiling, status, ready, reg, web, log)
}

// namesrvConsole is the web console served on the name server's HTTP port:
// its admin client asks this name server (over TLS when it serves TLS),
// unsigned; operators sign in with an account of their own on its
// Account page when the cluster's ACL is on. stop ends its sampler and
// lets its clients go.
func namesrvConsole(self string, tlsClient *tls.Config, user, password string) (stop func(), h http.Handler, err error) {
	opts := []client.AdminOption{client.WithAdminNameServers(self)}
	if tlsClient != nil {
		opts = append(opts, client.WithAdminTLS(tlsClient))
	}
	adm, err := client.NewAdmin(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("namesrv: console: %w", err)
	}
	signIn := func(ak, sk string) (console.Admin, error) {
		return client.NewAdmin(append(opts, client.WithAdminCredentials(ak, sk))...)
	}
	web, err := console.New(console.Config{Admin: adm, User: user, Password: password, SignIn: signIn})
	if err != nil {
		_ = adm.Close()
		return nil, nil, fmt.Errorf("namesrv: console: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		web.RunBackground(ctx)
	}()
	return func() {
		cancel()
		<-done
		_ = adm.Close()
	}, web.Handler(), nil
}
