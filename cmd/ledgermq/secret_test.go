package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

const testClusterSecret = "0123456789abcdef0123456789abcdef"

func TestBrokerConfigClusterSecret(t *testing.T) {
	c, err := loadWith(t, "b.conf", "cluster_secret="+testClusterSecret+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.ClusterSecret != testClusterSecret || c.brokerConfig().ClusterSecret != testClusterSecret {
		t.Fatalf("secret not loaded: %q", c.ClusterSecret)
	}
	if s := settingOf(c, "cluster_secret"); s.Value != "(set)" {
		t.Fatalf("effective settings show %q", s.Value)
	}
	var out strings.Builder
	if err := c.writeSettings(&out); err != nil || strings.Contains(out.String(), testClusterSecret) {
		t.Fatalf("--check-config prints the secret (%v):\n%s", err, out.String())
	}
	if _, err := loadWith(t, "b.conf", "cluster_secret=short\n"); !errors.Is(err, errBadValue) {
		t.Fatalf("short secret: %v", err)
	}
	t.Setenv(envClusterSecret, testClusterSecret)
	if c, err := loadWith(t, "", ""); err != nil || c.ClusterSecret != testClusterSecret {
		t.Fatalf("secret from %s: %q %v", envClusterSecret, c.ClusterSecret, err)
	}
}

func TestNamesrvSecretSources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(path, []byte(testClusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := namesrvSecret(path); err != nil || s != testClusterSecret {
		t.Fatalf("from file: %q %v", s, err)
	}
	t.Setenv(envClusterSecret, "from-the-environment-0123")
	if s, err := namesrvSecret(""); err != nil || s != "from-the-environment-0123" {
		t.Fatalf("from env: %q %v", s, err)
	}
	empty := filepath.Join(t.TempDir(), "e")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := namesrvSecret(empty); err == nil {
		t.Fatal("an empty secret file was accepted")
	}
	if _, err := namesrvSecret(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing secret file was accepted")
	}
}

func TestDevSecretFile(t *testing.T) {
	dir := t.TempDir()
	path, first, err := devSecret(dir)
	if err != nil || len(first) != 64 {
		t.Fatalf("first run: %q %v", first, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v mode %v", err, fi.Mode())
	}
	if _, again, err := devSecret(dir); err != nil || again != first {
		t.Fatalf("second run: %q %v, want the first run's secret", again, err)
	}
	if err := os.WriteFile(path, []byte("bad"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := devSecret(dir); !errors.Is(err, errDevConfig) {
		t.Fatalf("bad secret file: %v", err)
	}
}

// TestDevSignedRegistrations: `ledgermq dev` gives the name server and
// every node a secret of its own: the nodes register (a leader is
// routed), a stranger's unsigned registration is refused.
func TestDevSignedRegistrations(t *testing.T) {
	d := startDev(t)
	secret, err := os.ReadFile(filepath.Join(d.Dir, devSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range d.File.Nodes {
		conf, err := os.ReadFile(filepath.Join(d.Dir, n.ID+".conf"))
		if err != nil || !strings.Contains(string(conf), "cluster_secret="+strings.TrimSpace(string(secret))) {
			t.Fatalf("%s.conf lacks the secret (%v)", n.ID, err)
		}
	}
	c := remoting.NewClient(remoting.ClientConfig{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader, err := d.Leader(ctx, c)
	if err != nil || leader == "" {
		t.Fatalf("no leader routed: %q %v", leader, err)
	}
	err = routing.RegisterBroker(ctx, c, d.Namesrv, routing.RegisterRequest{
		ClusterName: "DefaultCluster", BrokerName: devcluster.GroupName, BrokerAddr: "127.0.0.1:1",
		BrokerID: 0, Term: 1 << 40})
	if !errors.Is(err, routing.ErrUnauthenticated) {
		t.Fatalf("unsigned registration to dev's name server: %v", err)
	}
	if now, err := d.Leader(ctx, c); err != nil || now != leader {
		t.Fatalf("leader after the refused claim %q %v, want %s", now, err, leader)
	}
}
