//go:build unix

package console

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
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
	// The unsigned console lets operators sign in with their own account.
	unsigned := startConsole(t, open(), Config{SignIn: func(ak, sk string) (Admin, error) {
		return client.NewAdmin(client.WithAdminNameServers(p.Namesrv), client.WithAdminTLSFiles(ca, "", ""), client.WithAdminCredentials(ak, sk))
	}})
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

	// Signing in on the unsigned console: a wrong secret is refused by
	// the brokers and starts no session; the admin account's session sees
	// the groups and the accounts; signing out returns to the refusals.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Timeout: 30 * time.Second, Jar: jar}
	if code, _ := get(t, browser, unsigned+"/login"); code != http.StatusOK {
		t.Fatalf("/login: %d", code)
	}
	u, err := url.Parse(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, c := range jar.Cookies(u) {
		if c.Name == csrfCookie {
			token = c.Value
		}
	}
	signIn := func(ak, sk string) (int, string) {
		resp, err := browser.PostForm(unsigned+"/login", url.Values{csrfField: {token}, "accessKey": {ak}, "secretKey": {sk}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := signIn("ops-admin", "not-the-secret"); code != http.StatusUnauthorized || !strings.Contains(body, `id="login-failed"`) {
		t.Fatalf("sign-in with a wrong secret: %d\n%s", code, body)
	}
	if code, body := signIn("ops-admin", "ops-secret"); code != http.StatusOK || !strings.Contains(body, `id="cluster"`) && !strings.Contains(body, "healthy") {
		t.Fatalf("sign-in as ops-admin: %d\n%s", code, body)
	}
	waitUntil(t, 30*time.Second, "the signed-in session's ACL page listing the accounts", func() error {
		code, body := get(t, browser, unsigned+"/acl")
		if code != http.StatusOK || !strings.Contains(body, `data-account="app-user"`) || !strings.Contains(body, `data-account="ops-admin"`) {
			return errorf("status %d:\n%s", code, body)
		}
		return nil
	})
	if code, body := get(t, browser, unsigned+"/groups"); code != http.StatusOK || strings.Contains(body, "NO_PERMISSION") {
		t.Errorf("signed-in /groups: %d\n%s", code, body)
	}
	resp, err := browser.PostForm(unsigned+"/logout", url.Values{csrfField: {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, body := get(t, browser, unsigned+"/groups"); code == http.StatusOK || !strings.Contains(body, "NO_PERMISSION") {
		t.Errorf("signed out /groups: %d, no refusal:\n%s", code, body)
	}
}
