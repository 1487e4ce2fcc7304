package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

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
		logLevel   string
		logJSON    bool
		check      bool
		secretFile string
	)
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "Run a name server (RocketMQ-compatible routing for producers and consumers)",
		Long: "namesrv keeps the routes of the broker groups that register with it and answers clients'\n" +
			"route queries. Name servers share no state; run several and give every broker all of them.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = newLogger("namesrv", logLevel, logJSON)
			secret, err := namesrvSecret(secretFile)
			if err != nil {
				return err
			}
			cfg.Secret = secret
			if err := cfg.Validate(); err != nil {
				return err
			}
			if check {
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
			fmt.Fprintf(cmd.OutOrStdout(), "namesrv listening on %s\n", srv.Addr())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
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
	f.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	f.BoolVar(&logJSON, "log-json", false, "log as JSON")
	f.BoolVar(&check, "check-config", false, "print the effective configuration and exit")
	f.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret brokers sign registrations with (else "+envClusterSecret+"; none: registrations are not signed)")
	return cmd
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
