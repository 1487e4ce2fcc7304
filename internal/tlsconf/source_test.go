package tlsconf

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// handshake runs a TLS handshake between a server and a client config over
// loopback TCP and returns each side's error.
func handshake(t *testing.T, srv, cli *tls.Config) (srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(c, srv)
		err = tc.Handshake()
		if err == nil {
			// TLS 1.3 clients finish before the server has checked the
			// client certificate: a read shows the server's verdict.
			_, err = tc.Write([]byte{1})
		}
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, ForAddr(cli, ln.Addr().String()))
	cliErr = tc.Handshake()
	if cliErr == nil {
		var b [1]byte
		_, cliErr = tc.Read(b[:])
	}
	return <-done, cliErr
}

func mustLoad(t *testing.T, f Files) *Source {
	t.Helper()
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTLSServerAndClient(t *testing.T) {
	dir := t.TempDir()
	f, err := WriteDev(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, f)
	srv, err := s.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	// A client with only the CA (no certificate) is enough on a client port.
	cli := mustLoad(t, Files{CAFile: f.CAFile}).ClientConfig()
	if se, ce := handshake(t, srv, cli); se != nil || ce != nil {
		t.Fatalf("server %v, client %v", se, ce)
	}
	// WriteDev keeps what is there.
	before, _ := os.ReadFile(f.CertFile)
	if _, err := WriteDev(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(f.CertFile); string(after) != string(before) {
		t.Fatal("WriteDev replaced existing certificates")
	}
}

func TestTLSClientRefusesForeignServer(t *testing.T) {
	dir := t.TempDir()
	good, err := WriteDev(filepath.Join(dir, "good"))
	if err != nil {
		t.Fatal(err)
	}
	bad, _, err := WriteTestFiles(dir, "foreign")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := mustLoad(t, bad).ServerConfig(false)
	_, ce := handshake(t, srv, mustLoad(t, good).ClientConfig())
	if ce == nil || !strings.Contains(ce.Error(), "verify server") {
		t.Fatalf("client accepted a server of another CA: %v", ce)
	}
}

func TestTLSMutualRefusesForeignAndMissingClientCert(t *testing.T) {
	dir := t.TempDir()
	good, err := WriteDev(filepath.Join(dir, "good"))
	if err != nil {
		t.Fatal(err)
	}
	bad, _, err := WriteTestFiles(dir, "foreign")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := mustLoad(t, good).ServerConfig(true)
	// The foreign client trusts the good CA but its own certificate is
	// signed by another.
	foreign := mustLoad(t, Files{CertFile: bad.CertFile, KeyFile: bad.KeyFile, CAFile: good.CAFile}).ClientConfig()
	if se, _ := handshake(t, srv, foreign); se == nil {
		t.Fatal("mutual server accepted a client certificate of another CA")
	}
	none := mustLoad(t, Files{CAFile: good.CAFile}).ClientConfig()
	if se, _ := handshake(t, srv, none); se == nil {
		t.Fatal("mutual server accepted a client without a certificate")
	}
	if se, ce := handshake(t, srv, mustLoad(t, good).ClientConfig()); se != nil || ce != nil {
		t.Fatalf("good pair: server %v, client %v", se, ce)
	}
}

// TestTLSReload: a server whose files are replaced by those of a new CA
// serves the new certificate after the next check, not before; a broken
// replacement keeps the old one.
func TestTLSReload(t *testing.T) {
	dir := t.TempDir()
	old, err := WriteDev(filepath.Join(dir, "srv"))
	if err != nil {
		t.Fatal(err)
	}
	oldCA := mustLoad(t, Files{CAFile: old.CAFile, CheckInterval: -1}).ClientConfig()
	s := mustLoad(t, old)
	clock := time.Unix(1000, 0)
	s.now = func() time.Time { return clock }
	s.checked = clock
	srv, _ := s.ServerConfig(false)

	next, ca, err := WriteTestFiles(dir, "next")
	if err != nil {
		t.Fatal(err)
	}
	newCA := mustLoad(t, Files{CAFile: next.CAFile, CheckInterval: -1}).ClientConfig()
	replace := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(to, time.Now(), time.Now().Add(time.Duration(s.Loads())*time.Minute+time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	replace(next.KeyFile, old.KeyFile)
	replace(next.CertFile, old.CertFile)

	// Within the interval: still the old certificate.
	if _, ce := handshake(t, srv, oldCA); ce != nil {
		t.Fatalf("before the check: %v", ce)
	}
	clock = clock.Add(DefaultCheckInterval)
	if _, ce := handshake(t, srv, newCA); ce != nil {
		t.Fatalf("after the check the new certificate is not served: %v", ce)
	}
	if _, ce := handshake(t, srv, oldCA); ce == nil {
		t.Fatal("the old CA still verifies the server after the reload")
	}
	if s.Loads() != 2 || s.Err() != nil {
		t.Fatalf("loads %d, err %v", s.Loads(), s.Err())
	}

	// A certificate whose key is not there yet: the old pair stays.
	if err := ca.Issue("third", filepath.Join(dir, "third.pem"), filepath.Join(dir, "third-key.pem")); err != nil {
		t.Fatal(err)
	}
	replace(filepath.Join(dir, "third.pem"), old.CertFile)
	clock = clock.Add(DefaultCheckInterval)
	if _, ce := handshake(t, srv, newCA); ce != nil {
		t.Fatalf("a half-rotated pair took the server down: %v", ce)
	}
	if s.Err() == nil {
		t.Fatal("the failed reload is not reported")
	}
	replace(filepath.Join(dir, "third-key.pem"), old.KeyFile)
	clock = clock.Add(DefaultCheckInterval)
	if _, ce := handshake(t, srv, newCA); ce != nil || s.Err() != nil || s.Loads() != 3 {
		t.Fatalf("completed rotation: %v, err %v, loads %d", ce, s.Err(), s.Loads())
	}
}

func TestTLSLoadErrors(t *testing.T) {
	dir := t.TempDir()
	f, err := WriteDev(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Files{CertFile: f.CertFile, KeyFile: f.KeyFile}); !errors.Is(err, ErrNoCA) {
		t.Fatalf("no CA: %v", err)
	}
	if _, err := Load(Files{CertFile: f.CertFile, CAFile: f.CAFile}); err == nil {
		t.Fatal("a certificate without its key loaded")
	}
	if _, err := Load(Files{CertFile: f.CertFile, KeyFile: f.KeyFile, CAFile: f.KeyFile}); err == nil {
		t.Fatal("a key file loaded as CA")
	}
	if _, err := mustLoad(t, Files{CAFile: f.CAFile}).ServerConfig(false); err == nil {
		t.Fatal("a server config without a certificate")
	}
}
