package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

const devACLFile = `
accounts:
  - accessKey: app-user
    secretKey: app-secret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: ops-admin
    secretKey: ops-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

// TestDevACL: `ledgermq dev --tls --acl FILE` runs every node and the name
// server with the file's ACL (and TLS). The nodes register with the name
// server as its first admin account, so the cluster comes up; clients with
// an account produce, the admin CLI creates and deletes topics only with
// the admin account, and a wrong secret is refused by the name server.
// Its RocketMQ 5 proxy checks signatures as that admin account and turns
// ready once it has read the groups' rules.
func TestDevACL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(devACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--tls", "--acl", file}})
	// dev tells it once the cluster is up, which can come after Start
	// returns.
	waitFor(t, 30*time.Second, "dev telling about the ACL", func() bool {
		return strings.Contains(d.Output(), "ACL on every node and the name server ("+file+"); nodes register as accessKey ops-admin")
	})
	// Its proxy checks signatures too, as the admin account, whose secret
	// only its own file holds; it is ready once it has read the rules.
	proxyLine := regexp.MustCompile(`proxy \(cluster mode\) at \S+ instead \(over TLS, checking signatures as the nodes do\); metrics http://(\S+)/metrics`)
	var proxyHTTP string
	waitFor(t, 30*time.Second, "dev telling about the proxy", func() bool {
		if m := proxyLine.FindStringSubmatch(d.Output()); m != nil {
			proxyHTTP = m[1]
		}
		return proxyHTTP != ""
	})
	if fi, err := os.Stat(filepath.Join(d.Dir, "proxy.secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("proxy.secret: %v, %v", fi, err)
	}
	waitFor(t, 30*time.Second, "the proxy ready, the groups' rules read", func() bool {
		code, _ := httpGet(proxyHTTP, "/readyz")
		return code == 200
	})
	conf, err := os.ReadFile(filepath.Join(d.Dir, "n0.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"acl_enable=true", "acl_file=" + file, "namesrv.access_key=ops-admin", "namesrv.secret_key=ops-secret"} {
		if !strings.Contains(string(conf), line+"\n") {
			t.Fatalf("n0.conf lacks %q:\n%s", line, conf)
		}
	}
	ca := filepath.Join(d.Dir, "tls", "ca.pem")
	ns := []string{"-n", d.Namesrv, "--tls-ca", ca}
	app := append(ns[:len(ns):len(ns)], "--access-key", "app-user", "--secret-key", "app-secret")
	ops := append(ns[:len(ns):len(ns)], "--access-key", "ops-admin", "--secret-key", "ops-secret")
	wrong := append(ns[:len(ns):len(ns)], "--access-key", "app-user", "--secret-key", "not-the-secret")
	cli := func(args ...string) (string, error) {
		out, errOut, err := runCLI(t, args...)
		return out + errOut, err
	}

	waitFor(t, 30*time.Second, "the admin creates a topic", func() bool {
		_, err := cli(append([]string{"admin", "topic", "create", "-t", "DevACL", "-r", "2", "-w", "2"}, ops...)...)
		return err == nil
	})
	if out, err := cli(append([]string{"admin", "topic", "create", "-t", "DevACLNot", "-r", "2", "-w", "2"}, app...)...); err == nil ||
		!strings.Contains(out+err.Error(), "needs an admin account, accessKey app-user is not one") {
		t.Fatalf("topic create by an account that is not admin: %v\n%s", err, out)
	}
	waitFor(t, 20*time.Second, "a first acknowledged send with an account", func() bool {
		out, err := cli(append([]string{"bench", "produce", "--topic", "DevACL", "--count", "1", "--producers", "1", "--inflight", "1"}, app...)...)
		return err == nil && strings.Contains(out, "acked=1 ")
	})
	for what, args := range map[string][]string{"no credentials": ns, "a wrong secret": wrong} {
		out, err := cli(append([]string{"bench", "produce", "--topic", "DevACL", "--count", "1", "--producers", "1", "--inflight", "1", "--send-timeout", "2s"}, args...)...)
		if err == nil && strings.Contains(out, "acked=1 ") {
			t.Fatalf("a send with %s acknowledged:\n%s", what, out)
		}
	}
	if out, err := cli(append([]string{"admin", "topic", "list"}, app...)...); err != nil || !strings.Contains(out, "DevACL") {
		t.Fatalf("topic list with an account: %v\n%s", err, out)
	}
	if out, err := cli(append([]string{"admin", "topic", "list", "--timeout", "5s"}, wrong...)...); err == nil || !strings.Contains(out+err.Error(), "signature of GET_ALL_TOPIC_LIST_FROM_NAMESERVER") {
		t.Fatalf("topic list with a wrong secret: %v\n%s", err, out)
	}
	if out, err := cli(append([]string{"admin", "topic", "delete", "-t", "DevACL"}, app...)...); err == nil || !strings.Contains(out+err.Error(), "needs an admin account") {
		t.Fatalf("topic delete by an account that is not admin: %v\n%s", err, out)
	}
	if out, err := cli(append([]string{"admin", "topic", "delete", "-t", "DevACL"}, ops...)...); err != nil {
		t.Fatalf("topic delete by the admin: %v\n%s", err, out)
	}
	logText, err := os.ReadFile(filepath.Join(d.Dir, "n0.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(logText), "\n") {
		if strings.Contains(line, "registration with name server failed") && strings.Contains(line, "acl: ") {
			t.Errorf("n0's registration was refused by the ACL: %s", line)
		}
	}
}

func TestDevACLRejectsAFileWithoutAdmin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte("accounts:\n  - accessKey: app-user\n    secretKey: app-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, filepath.Join(t.TempDir(), "missing.yml")} {
		_, _, err := runCLI(t, "dev", "--dir", t.TempDir(), "--acl", path)
		if err == nil || !strings.Contains(err.Error(), "--acl") {
			t.Fatalf("dev --acl %s: %v", path, err)
		}
	}
}
