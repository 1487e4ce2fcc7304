package main

// `ledgermq proxy`: RocketMQ 5's cluster mode. A stateless process that
// serves the gRPC protocol (package grpcapi in cluster mode) in front of
// the broker groups its name servers know: run any number behind a load
// balancer and give clients its --advertise address.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

func newProxyCmd() *cobra.Command {
	var (
		namesrv, listen, advertise string
		tlsFiles                   tlsconf.Files
		maxBody                    int
		logLevel, logFormat        string
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run a RocketMQ 5 proxy (gRPC, cluster mode) in front of the broker groups",
		Long: "proxy serves RocketMQ 5 clients (apache.rocketmq.v2 over gRPC) on --listen and answers them\n" +
			"from the broker groups its name servers know: sends go to the group's leader over remoting,\n" +
			"consumers are relayed to the leader's gRPC port (brokers need grpc_listen), routes name this\n" +
			"proxy's --advertise address for every queue. It keeps no state: run several behind a load\n" +
			"balancer. It holds no account: with ACL on, serve RocketMQ 5 clients on the nodes' gRPC ports,\n" +
			"which check every call's signature.",
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
			cc := &grpcapi.ClusterConfig{NameServers: nss}
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
			tlsNote := ""
			if cfg.TLS != nil {
				tlsNote = ", TLS"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "proxy listening on %s (RocketMQ 5 gRPC, cluster mode%s; name servers %s)\n", srv.Addr(), tlsNote, namesrv)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			return srv.Stop(sctx)
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
