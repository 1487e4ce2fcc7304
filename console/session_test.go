package console

import (
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/client"
)

// Signing in: the form's account replaces the console's own for the
// session's pages, an account the cluster refuses gets no session, the
// form needs the CSRF token, and signing out ends the session and lets its
// client go.
func TestSignIn(t *testing.T) {
	def, _ := newFake(t)
	def.groups = []client.BrokerGroupConfig{{BrokerName: "broker-a"}}
	def.groups[0].GroupName = "seen-by-the-console"
	mine, _ := newFake(t)
	mine.groups = []client.BrokerGroupConfig{{BrokerName: "broker-a"}}
	mine.groups[0].GroupName = "seen-by-ops"
	refused, _ := newFake(t)
	refused.configErr = errors.New("NO_PERMISSION: wrong signature")
	var asked []string
	s, ts := newTestServer(t, def, Config{SignIn: func(ak, sk string) (Admin, error) {
		asked = append(asked, ak)
		if ak == "ops" && sk == "ops-secret" {
			return mine, nil
		}
		return refused, nil
	}})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	postForm := func(path string, form url.Values) (int, string) {
		t.Helper()
		resp, err := hc.PostForm(ts.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}

	wantAll(t, hc, ts.URL, "/login", `id="signed-out"`, `id="login-form"`, `href="/login" class="on">Account`)
	wantAll(t, hc, ts.URL, "/groups", "seen-by-the-console")
	if code, _ := postForm("/login", url.Values{"accessKey": {"ops"}, "secretKey": {"ops-secret"}}); code != http.StatusForbidden {
		t.Fatalf("sign-in without the form's token: %d", code)
	}
	if code, body := postForm("/login", url.Values{csrfField: {s.token}, "accessKey": {"ops"}, "secretKey": {"wrong"}}); code != http.StatusUnauthorized ||
		!strings.Contains(body, `id="login-failed"`) || !strings.Contains(body, "NO_PERMISSION") || !refused.isClosed() {
		t.Fatalf("a refused account: %d closed=%v\n%s", code, refused.isClosed(), body)
	}
	wantAll(t, hc, ts.URL, "/groups", "seen-by-the-console")
	if code, _ := postForm("/login", url.Values{csrfField: {s.token}, "accessKey": {"ops"}, "secretKey": {"ops-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	body := wantAll(t, hc, ts.URL, "/groups", "seen-by-ops")
	if strings.Contains(body, "seen-by-the-console") {
		t.Fatal("a signed-in session still used the console's own account")
	}
	body = wantAll(t, hc, ts.URL, "/login", `id="signed-in"`, "<code>ops</code>")
	if strings.Contains(body, "ops-secret") {
		t.Fatal("the account page shows the secret key")
	}
	// Another browser (no cookie) is not signed in.
	wantAll(t, ts.Client(), ts.URL, "/groups", "seen-by-the-console")

	if code, _ := postForm("/logout", url.Values{csrfField: {s.token}}); code != http.StatusSeeOther || !mine.isClosed() {
		t.Fatalf("sign-out: %d, client closed %v", code, mine.isClosed())
	}
	wantAll(t, hc, ts.URL, "/groups", "seen-by-the-console")
	if len(asked) != 2 {
		t.Fatalf("SignIn asked %v", asked)
	}
}

// Without Config.SignIn there is no sign-in page.
func TestNoSignInWithoutConfig(t *testing.T) {
	f, _ := newFake(t)
	_, ts := newTestServer(t, f, Config{})
	if code, body := get(t, ts.Client(), ts.URL+"/login"); code != http.StatusNotFound || strings.Contains(body, "login-form") {
		t.Fatalf("/login without SignIn: %d", code)
	}
	if code, body := get(t, ts.Client(), ts.URL+"/cluster"); code != http.StatusOK || strings.Contains(body, `href="/login"`) {
		t.Fatalf("/cluster offers sign-in without SignIn: %d", code)
	}
}
