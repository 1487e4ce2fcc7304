package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestConfigTLS: the tls keys load the node's certificate into the client
// port, the raft port (mutual) and the outgoing client; off by default;
// incomplete or unreadable settings are refused.
func TestConfigTLS(t *testing.T) {
	c, err := loadWith(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if bc, dc := c.brokerConfig(), c.dledgerConfig(nil); c.TLS != nil || bc.TLSServer != nil || bc.TLSClient != nil || dc.TLS != nil {
		t.Fatal("TLS on by default")
	}
	f, err := tlsconf.WriteDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	file := "tls.enable=true\ntls.cert_file=" + f.CertFile + "\ntls.key_file=" + f.KeyFile + "\ntls.ca_file=" + f.CAFile + "\n"
	if c, err = loadWith(t, "b.conf", file); err != nil {
		t.Fatal(err)
	}
	bc, dc := c.brokerConfig(), c.dledgerConfig(nil)
	if bc.TLSServer == nil || bc.TLSClient == nil || dc.TLS == nil || dc.TLS.Server == nil || dc.TLS.Client == nil {
		t.Fatalf("TLS not wired: broker %v %v, raft %+v", bc.TLSServer, bc.TLSClient, dc.TLS)
	}

	for name, tt := range map[string]struct{ file, mention string }{
		"enable without files": {"tls.enable=true\n", "tls.enable"},
		"files without enable": {"tls.ca_file=" + f.CAFile + "\n", "tls.enable"},
		"missing file": {"tls.enable=true\ntls.cert_file=" + f.CertFile + "\ntls.key_file=" + f.KeyFile +
			"\ntls.ca_file=" + filepath.Join(t.TempDir(), "none.pem") + "\n", "none.pem"},
		"key of another cert": {"tls.enable=true\ntls.cert_file=" + f.CertFile + "\ntls.key_file=" + f.CAFile +
			"\ntls.ca_file=" + f.CAFile + "\n", "tls.cert_file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadWith(t, "b.conf", tt.file)
			if !errors.Is(err, errBadValue) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %v, want a bad value mentioning %q", err, tt.mention)
			}
		})
	}
}

// TestNamesrvTLSFlags: the three flags are all or nothing.
func TestNamesrvTLSFlags(t *testing.T) {
	f, err := tlsconf.WriteDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := namesrvTLS(tlsconf.Files{CertFile: f.CertFile, KeyFile: f.KeyFile}); err == nil {
		t.Fatal("TLS without a CA accepted")
	}
	if srv, cli, err := namesrvTLS(f); err != nil || srv == nil || cli == nil {
		t.Fatalf("%v %v %v", srv, cli, err)
	}
	if _, _, err := runCLI(t, "admin", "topic", "list", "-n", "127.0.0.1:1", "--tls-cert", f.CertFile, "--tls-key", f.KeyFile); err == nil ||
		!strings.Contains(err.Error(), "--tls-ca") {
		t.Fatalf("admin with a client certificate and no CA: %v", err)
	}
}

// TestDevTLS: `ledgermq dev --tls` makes a CA and certificates, and its
// name server and nodes (separate processes) come up over TLS: the
// leader registers with the TLS name server (broker to name server, and
// the name server's confirmation back, over TLS) after an election over
// mutual-TLS raft links. bench and admin reach it with --tls-ca; a
// plaintext client is refused.
func TestDevTLS(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--tls"}})
	ca := filepath.Join(d.Dir, "tls", "ca.pem")
	// dev tells it once the cluster is up, which can come after Start
	// returns.
	waitFor(t, 30*time.Second, "dev telling clients the CA", func() bool { return strings.Contains(d.Output(), "--tls-ca "+ca) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := remoting.NewClient(remoting.ClientConfig{})
	defer plain.Close()
	if _, err := d.Leader(ctx, plain); err == nil {
		t.Fatal("the TLS name server answered a plaintext client")
	}

	waitFor(t, 20*time.Second, "a first acknowledged send over TLS", func() bool {
		out, _, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--tls-ca", ca, "--topic", "DevTLS", "--count", "1", "--producers", "1", "--inflight", "1")
		return err == nil && strings.Contains(out, "acked=1 ")
	})
	out, _, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--tls-ca", ca, "--topic", "DevTLS", "--count", "200", "--verify")
	if err != nil || !strings.Contains(out, "acked=200 ") || !strings.Contains(out, "verify: lost=0 ") {
		t.Fatalf("bench over TLS: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "admin", "topic", "list", "-n", d.Namesrv, "--tls-ca", ca); err != nil || !strings.Contains(out, "DevTLS") {
		t.Fatalf("admin over TLS: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "admin", "topic", "list", "-n", d.Namesrv, "--timeout", "5s"); err == nil {
		t.Fatal("a plaintext admin was answered")
	}

	// The gRPC ports serve TLS too: dev prints and writes them, and a
	// RocketMQ 5 client trusting the CA is answered.
	waitFor(t, 30*time.Second, "dev printing the gRPC endpoints", func() bool {
		return strings.Contains(d.Output(), "RocketMQ 5 (gRPC) clients use endpoints ") && strings.Contains(d.Output(), "over TLS")
	})
	cf, err := devcluster.ReadFile(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.Load(tlsconf.Files{CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cf.Nodes {
		if n.GRPC == "" {
			t.Fatalf("cluster.json names no gRPC endpoint of %s", n.ID)
		}
		conn, err := grpc.NewClient(n.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(tlsconf.ForAddr(src.ClientConfig(), n.GRPC))))
		if err != nil {
			t.Fatal(err)
		}
		r, err := v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "DevTLS"}})
		_ = conn.Close()
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("QueryRoute over TLS at %s: %v %v", n.GRPC, r.GetStatus(), err)
		}
	}
}
