package main

// `ledgermq proxy`: RocketMQ 5's cluster mode. A stateless process that
// serves the gRPC protocol (package grpcapi in cluster mode) in front of
// the broker groups its name servers know: run any number behind a load
// balancer and give clients its --advertise address. With --acl-enable it
// checks every call's signature against the broker groups' replicated
// plain ACL (grpcapi/clusteracl.go says how, and why the proxy holds an
// admin account of its own); with --http it serves /livez, /readyz,
// /status and /metrics (the gRPC call counters the nodes have).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/ops"
)

func newProxyCmd() *cobra.Command {
	var (
		namesrv, listen, advertise string
		tlsFiles                   tlsconf.Files
		maxBody                    int
		logLevel, logFormat        string
		aclEnable                  bool
		accessKey, secretKey       string
		secretKeyFile, httpAddr    string
		aclRefresh                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run a RocketMQ 5 proxy (gRPC, cluster mode) in front of the broker groups",
		Long: "proxy serves RocketMQ 5 clients (apache.rocketmq.v2 over gRPC) on --listen and answers them\n" +
			"from the broker groups its name servers know: sends go to the group's leader over remoting,\n" +
			"consumers are relayed to the leader's gRPC port (brokers need grpc_listen), routes name this\n" +
			"proxy's --advertise address for every queue. It keeps no state: run several behind a load\n" +
			"balancer. With the cluster's ACL on, give --acl-enable and an admin account (--access-key with\n" +
			"--secret-key-file or --secret-key): the proxy reads the broker groups' replicated plain ACL with it\n" +
			"(again every --acl-refresh, and at once for an access key it does not know) and checks every\n" +
			"call's signature and permissions against it, as the nodes' gRPC ports do (a wrong secret is\n" +
			"UNAUTHORIZED, a missing permission FORBIDDEN); what it sends the brokers it signs with that\n" +
			"account. --http serves /livez, /readyz, /status and /metrics (ledgermq_grpc_calls_total,\n" +
			"ledgermq_grpc_call_seconds).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if logFormat != "text" && logFormat != "json" {
				return fmt.Errorf("proxy: --log-format %q: want text or json", logFormat)
			}
			nss := splitNamesrv(namesrv)
			if len(nss) == 0 {
				return errors.New("proxy: --namesrv names no name server")
			}
			log := newLogger("proxy", logLevel, logFormat == "json")
			creds, err := proxyCredentials(accessKey, secretKey, secretKeyFile)
			if err != nil {
				return err
			}
			if aclEnable && creds.AccessKey == "" {
				return errors.New("proxy: --acl-enable needs an admin account: --access-key with --secret-key-file or --secret-key")
			}
			cc := &grpcapi.ClusterConfig{NameServers: nss, Credentials: creds, ACL: aclEnable, ACLRefresh: aclRefresh}
			cfg := grpcapi.Config{Addr: listen, Advertise: advertise, Cluster: cc, MaxBodySize: maxBody, Logger: log}
			if tlsFiles.Enabled() {
				srv, cli, err := proxyTLS(tlsFiles)
				if err != nil {
					return err
				}
				cfg.TLS, cc.TLS = srv, cli
			}
			if advertise == "" {
				// The listening host with the port bound: a port 0 is known
				// once bound.
				lis, err := net.Listen("tcp", listen)
				if err != nil {
					return fmt.Errorf("proxy: listening on %s: %w", listen, err)
				}
				cfg.Listener = lis
			}
			reg := prometheus.NewRegistry()
			if httpAddr != "" {
				// Labelled with the address clients reach the proxy at.
				self := advertise
				if cfg.Listener != nil {
					self = cfg.Listener.Addr().String()
				}
				cfg.Observer = newGRPCMetrics(reg, prometheus.Labels{"proxy": self})
				reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			}
			srv, err := grpcapi.New(cfg)
			if err != nil {
				if cfg.Listener != nil {
					_ = cfg.Listener.Close()
				}
				return fmt.Errorf("proxy: %w", err)
			}
			if err := srv.Start(); err != nil {
				return fmt.Errorf("proxy: %w", err)
			}
			var stopping atomic.Bool
			var web *ops.Server
			if httpAddr != "" {
				if web, err = startProxyOps(httpAddr, srv, nss, &stopping, reg, log); err != nil {
					sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
					defer cancel()
					return errors.Join(fmt.Errorf("proxy: --http: %w", err), srv.Stop(sctx))
				}
			}
			notes := ""
			if cfg.TLS != nil {
				notes += ", TLS"
			}
			if aclEnable {
				notes += ", ACL"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "proxy listening on %s (RocketMQ 5 gRPC, cluster mode%s; name servers %s)\n", srv.Addr(), notes, namesrv)
			if web != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "proxy metrics on http://%s/metrics (/livez /readyz /status)\n", web.Addr())
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			log.Info("shutting down")
			stopping.Store(true)
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			err = srv.Stop(sctx)
			if web != nil {
				err = errors.Join(err, web.Close(sctx))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namesrv, "namesrv", "n", defaultNamesrv(), namesrvUsage)
	f.StringVar(&listen, "listen", "127.0.0.1:8081", "address the gRPC port listens on")
	f.StringVar(&advertise, "advertise", "", "ip:port clients reach this proxy at, answered in routes (default: the listening address)")
	f.StringVar(&tlsFiles.CertFile, "tls-cert", "", "PEM certificate: serve TLS (with --tls-key and --tls-ca; clients are not asked for one)")
	f.StringVar(&tlsFiles.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&tlsFiles.CAFile, "tls-ca", "", "PEM CA certificates the name servers and brokers, reached over TLS, are verified against")
	f.IntVar(&maxBody, "max-body-size", 4<<20, "largest message body accepted (the brokers' max_message_size)")
	f.BoolVar(&aclEnable, "acl-enable", false, "check every call against the broker groups' replicated plain ACL (needs an admin account: --access-key and its secret)")
	f.StringVar(&accessKey, "access-key", "", "the proxy's own ACL account (an admin account): reads the groups' rules and signs what the proxy sends")
	f.StringVar(&secretKeyFile, "secret-key-file", "", "file holding the secret key of --access-key (else --secret-key, else "+envProxySecretKey+")")
	f.StringVar(&secretKey, "secret-key", "", "secret key of --access-key (visible to other local users: prefer --secret-key-file)")
	f.DurationVar(&aclRefresh, "acl-refresh", 30*time.Second, "how often the groups' ACL rules are read again (and at once, at most once a second, for an unknown access key)")
	f.StringVar(&httpAddr, "http", "", "serve /livez, /readyz, /status and /metrics on this address (none when empty)")
	f.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "text or json (one JSON object a line)")
	return cmd
}

// proxyTLS loads the proxy's TLS, as a broker node's tls.enable: its port
// serves TLS with the certificate (clients are not asked for one), and it
// reaches the name servers and brokers over TLS, verifying them against
// the CA.
func proxyTLS(f tlsconf.Files) (srv, cli *tls.Config, err error) {
	if f.CertFile == "" || f.KeyFile == "" || f.CAFile == "" {
		return nil, nil, errors.New("proxy: TLS needs --tls-cert, --tls-key and --tls-ca")
	}
	src, err := tlsconf.Load(f)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: %w", err)
	}
	if srv, err = src.ServerConfig(false); err != nil {
		return nil, nil, fmt.Errorf("proxy: %w", err)
	}
	return srv, src.ClientConfig(), nil
}

// envProxySecretKey is the environment variable of the proxy's secret key.
const envProxySecretKey = envPrefix + "PROXY_SECRET_KEY"

// proxyCredentials is the proxy's own account: the access key with its
// secret from the file (white space around it removed), else the flag,
// else the environment.
func proxyCredentials(accessKey, secretKey, secretFile string) (auth.Credentials, error) {
	if accessKey == "" {
		if secretKey != "" || secretFile != "" {
			return auth.Credentials{}, errors.New("proxy: a secret key needs --access-key")
		}
		return auth.Credentials{}, nil
	}
	if secretFile != "" {
		data, err := os.ReadFile(secretFile)
		if err != nil {
			return auth.Credentials{}, fmt.Errorf("proxy: --secret-key-file: %w", err)
		}
		secretKey = string(data)
	}
	secretKey = strings.TrimSpace(firstNonEmpty(secretKey, os.Getenv(envProxySecretKey)))
	if secretKey == "" {
		return auth.Credentials{}, errors.New("proxy: --access-key needs its secret: --secret-key-file, --secret-key or " + envProxySecretKey)
	}
	return auth.Credentials{AccessKey: accessKey, SecretKey: secretKey}, nil
}

// proxyStatus is what the proxy's /status serves.
type proxyStatus struct {
	Addr        string   `json:"addr"`
	Version     string   `json:"version"`
	NameServers []string `json:"nameServers"`
	Stopping    bool     `json:"stopping,omitempty"`
}

// startProxyOps serves the proxy's operator endpoints on addr: /readyz is
// 200 while it serves and can check calls (503 once it stops, or while
// its ACL has read no rules), /metrics has reg (the gRPC calls).
func startProxyOps(addr string, srv *grpcapi.Server, nss []string, stopping *atomic.Bool, reg *prometheus.Registry, log hclog.Logger) (*ops.Server, error) {
	status := func() any {
		return proxyStatus{Addr: srv.Addr().String(), Version: version, NameServers: nss, Stopping: stopping.Load()}
	}
	ready := func() (bool, []string) {
		if stopping.Load() {
			return false, []string{"shutting down"}
		}
		if err := srv.ACLReady(); err != nil {
			return false, []string{err.Error()}
		}
		return true, nil
	}
	return serveOps(addr, false, status, ready, reg, nil, log)
}
