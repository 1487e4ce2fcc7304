package main

// `ledgermq console`: the web console (package console) against a running
// cluster, found through its name servers like `ledgermq admin`, with the
// same connection flags (TLS, ACL credentials).

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/console"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// errConsole is the console command's failure before it serves.
var errConsole = errors.New("console")

// consoleDefaultListen is where the console listens unless told.
const consoleDefaultListen = "127.0.0.1:8080"

func newConsoleCmd() *cobra.Command {
	var (
		namesrv, listen string
		user, password  string
		tf              tlsFlags
		https           tlsconf.Files
	)
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console (cluster, topics, consumer groups, messages, live chart) for a running cluster",
		Long: "console serves a web console for the cluster behind the name servers (-n): every broker group\n" +
			"and its raft state, topics and queues, consumer groups with lag, clients and offset resets (dry run,\n" +
			"then a confirmed execution), message search, and a live chart of the send rate and raft apply lag.\n" +
			"It listens on loopback (" + consoleDefaultListen + ") unless --listen says otherwise; any other\n" +
			"address needs --console-user and --console-password (HTTP basic auth). With the cluster's ACL on,\n" +
			"give --access-key/--secret-key; with TLS, --tls-ca (as for ledgermq admin). --https-cert and\n" +
			"--https-key serve the console itself over HTTPS (the files are re-read when they change).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns := splitNamesrv(namesrv)
			if len(ns) == 0 {
				return fmt.Errorf("%w: no name server: give -n host:port or set NAMESRV_ADDR", errConsole)
			}
			if err := tf.check(); err != nil {
				return err
			}
			if password == "" {
				password = os.Getenv("LEDGERMQ_CONSOLE_PASSWORD")
			}
			if err := console.CheckListen(listen, user, password); err != nil {
				return fmt.Errorf("%w; or listen on loopback", err)
			}
			adm, err := client.NewAdmin(append([]client.AdminOption{client.WithAdminNameServers(ns...)}, tf.adminOptions()...)...)
			if err != nil {
				return fmt.Errorf("%w: %w", errConsole, err)
			}
			defer adm.Close()
			ln, scheme, err := consoleListener(listen, https)
			if err != nil {
				return err
			}
			// Operators may sign in with an account of their own (/login):
			// its admin client signs every call of their session.
			signIn := func(ak, sk string) (console.Admin, error) {
				opts := append([]client.AdminOption{client.WithAdminNameServers(ns...)}, tf.adminOptions()...)
				return client.NewAdmin(append(opts, client.WithAdminCredentials(ak, sk))...)
			}
			srv, err := console.New(console.Config{Admin: adm, User: user, Password: password, HTTPS: scheme == "https", SignIn: signIn})
			if err != nil {
				_ = ln.Close()
				return fmt.Errorf("%w: %w", errConsole, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			auth := "no login (loopback)"
			if user != "" {
				auth = "basic auth as " + user
			}
			fmt.Fprintf(cmd.OutOrStdout(), "console: %s://%s/ for name servers %s; %s; Ctrl-C stops it\n", scheme, ln.Addr(), namesrv, auth)
			return srv.Run(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namesrv, "namesrv", "n", defaultNamesrv(), namesrvUsage)
	f.StringVar(&listen, "listen", consoleDefaultListen, "address the console serves HTTP on (beyond loopback: needs --console-user/--console-password)")
	f.StringVar(&user, "console-user", "", "basic auth user of the console's own pages")
	f.StringVar(&password, "console-password", "", "basic auth password of --console-user (unset: the LEDGERMQ_CONSOLE_PASSWORD environment variable)")
	f.StringVar(&https.CertFile, "https-cert", "", "certificate file (PEM) to serve the console over HTTPS with (with --https-key)")
	f.StringVar(&https.KeyFile, "https-key", "", "private key file (PEM) of --https-cert")
	tf.add(f)
	return cmd
}

// consoleListener listens on addr, over TLS with the certificate files
// when given (re-read when they change), and says which scheme it serves.
func consoleListener(addr string, files tlsconf.Files) (net.Listener, string, error) {
	if (files.CertFile == "") != (files.KeyFile == "") {
		return nil, "", fmt.Errorf("%w: --https-cert and --https-key go together", errConsole)
	}
	var cfg *tls.Config
	if files.CertFile != "" {
		// The source wants a CA pool; the console asks browsers for no
		// certificate, so its own certificate file stands in for it.
		files.CAFile = files.CertFile
		src, err := tlsconf.Load(files)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", errConsole, err)
		}
		if cfg, err = src.ServerConfig(false); err != nil {
			return nil, "", fmt.Errorf("%w: %w", errConsole, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errConsole, err)
	}
	if cfg == nil {
		return ln, "http", nil
	}
	return tls.NewListener(ln, cfg), "https", nil
}
