package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/console"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// TestConsoleRefuses: the console does not start beyond loopback without
// its own login, nor with half of a credential pair.
func TestConsoleRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"console", "-n", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"console", "-n", "127.0.0.1:1", "--listen", ":0"}, "not a loopback address"},
		{[]string{"console", "-n", "127.0.0.1:1", "--console-user", "ops"}, "give both or neither"},
		{[]string{"console", "-n", "127.0.0.1:1", "--access-key", "ak"}, "--access-key and --secret-key go together"},
		{[]string{"console", "-n", ""}, "no name server"},
		{[]string{"namesrv", "--listen", "127.0.0.1:0", "--console"}, "give --http"},
		{[]string{"namesrv", "--listen", "127.0.0.1:0", "--console", "--http", "0.0.0.0:0"}, "not a loopback address"},
	} {
		t.Setenv("LEDGERMQ_CONSOLE_PASSWORD", "")
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
		if strings.Contains(tt.want, "loopback") && !errors.Is(err, console.ErrNeedAuth) {
			t.Errorf("%s: %v is not ErrNeedAuth", strings.Join(tt.args, " "), err)
		}
	}
}

// The console serves HTTPS with --https-cert/--https-key: a client that
// trusts the certificate's CA gets the pages, with a Secure cookie and
// Strict-Transport-Security; one flag without the other is refused.
func TestConsoleHTTPS(t *testing.T) {
	files, _, err := tlsconf.WriteTestFiles(t.TempDir(), "console")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := consoleListener("127.0.0.1:0", tlsconf.Files{CertFile: files.CertFile}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("--https-cert alone: %v", err)
	}
	ln, scheme, err := consoleListener("127.0.0.1:0", tlsconf.Files{CertFile: files.CertFile, KeyFile: files.KeyFile})
	if err != nil || scheme != "https" {
		t.Fatalf("listener: %v %q", err, scheme)
	}
	// No cluster behind it: the chart page needs none.
	adm, err := client.NewAdmin(client.WithAdminNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	srv, err := console.New(console.Config{Admin: adm, HTTPS: true, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	pem, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + ln.Addr().String() + "/chart")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("GET /chart over HTTPS: %d %v", resp.StatusCode, resp.Header)
	}
	var secure bool
	for _, c := range resp.Cookies() {
		secure = secure || c.Secure
	}
	if !secure {
		t.Fatalf("cookies %v: none Secure", resp.Cookies())
	}
	// Plain HTTP on the same port gets no page.
	if r, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ln.Addr().String() + "/chart"); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served a page")
		}
	}
}
