//go:build unix

package console

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/devcluster"
)

const aclFile = `
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

// TestConsoleACLAndTLS: against `ledgermq dev --tls --acl`, a console
// whose admin calls are signed with an admin account (over TLS) shows the
// cluster, every node's /status and the groups; one whose calls are not
// signed shows the brokers' refusals.
func TestConsoleACLAndTLS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(aclFile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--tls", "--acl", file}})
	ca := filepath.Join(p.Dir, "tls", "ca.pem")
	open := func(opts ...client.AdminOption) *client.Admin {
		a, err := client.NewAdmin(append([]client.AdminOption{client.WithAdminNameServers(p.Namesrv), client.WithAdminTLSFiles(ca, "", "")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	signed := startConsole(t, open(client.WithAdminCredentials("ops-admin", "ops-secret")), Config{})
	unsigned := startConsole(t, open(), Config{})
	hc := &http.Client{Timeout: 30 * time.Second}

	waitUntil(t, 30*time.Second, "the signed console showing a healthy cluster and every node's /status", func() error {
		code, body := get(t, hc, signed+"/cluster")
		if code != http.StatusOK || !strings.Contains(body, `class="ok">healthy</span>`) || strings.Count(body, `class="ok">ready</span>`) != len(p.File.Nodes) {
			return errorf("status %d:\n%s", code, body)
		}
		return nil
	})
	if code, body := get(t, hc, signed+"/groups"); code != http.StatusOK || !strings.Contains(body, `id="groups"`) {
		t.Errorf("signed /groups: %d\n%s", code, body)
	}
	// The ACL page: on in every node, the same rules in force (once the
	// group has replicated them), the accounts as the file writes them
	// (read with the admin account), and never a secret key.
	waitUntil(t, 30*time.Second, "the ACL page showing the same rules on every node", func() error {
		code, body := get(t, hc, signed+"/acl")
		if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("ACL on in %d of %d nodes", len(p.File.Nodes), len(p.File.Nodes))) ||
			!strings.Contains(body, `class="ok agree"`) || strings.Count(body, `<td class="num">-</td>`) != 0 {
			return errorf("status %d:\n%s", code, body)
		}
		if strings.Contains(body, "app-secret") || strings.Contains(body, "ops-secret") {
			t.Fatalf("the ACL page shows a secret key:\n%s", body)
		}
		for _, want := range []string{`data-account="app-user"`, `data-account="ops-admin"`, "hidden (10 characters)", `<span class="ok">admin</span>`, "PUB|SUB"} {
			if !strings.Contains(body, want) {
				return errorf("no %s on the ACL page:\n%s", want, body)
			}
		}
		return nil
	})
	if code, body := get(t, hc, unsigned+"/acl"); code != http.StatusOK || !strings.Contains(body, "NO_PERMISSION") {
		t.Errorf("unsigned /acl: %d, no refusal shown:\n%s", code, body)
	}
	// Unsigned, the brokers refuse what needs an account: the nodes'
	// settings (so no /status) and the subscription groups.
	if code, body := get(t, hc, unsigned+"/cluster"); code != http.StatusOK || !strings.Contains(body, "NO_PERMISSION") || strings.Contains(body, `class="ok">ready</span>`) {
		t.Errorf("unsigned /cluster: %d, no refusal shown:\n%s", code, body)
	}
	if code, body := get(t, hc, unsigned+"/groups"); code == http.StatusOK || !strings.Contains(body, "NO_PERMISSION") {
		t.Errorf("unsigned /groups: %d, no refusal:\n%s", code, body)
	}
}
