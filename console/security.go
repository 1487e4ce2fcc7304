package console

// The console's own protection: basic auth (required off loopback), a
// CSRF token on every form that changes something, and headers that keep
// the pages from being framed or running scripts of another origin.

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// csrfCookie holds the per-process token; every POST form carries it
// again in csrfField.
const (
	csrfCookie = "ledgermq_console_csrf"
	csrfField  = "csrf"
)

// ErrNeedAuth: the console would listen beyond loopback without
// --console-user and --console-password.
var ErrNeedAuth = errors.New("console: listening beyond loopback needs a console user and password")

// CheckListen refuses an address beyond loopback without both a user and
// a password, and a user without a password (or the reverse).
func CheckListen(addr, user, password string) error {
	if (user == "") != (password == "") {
		return fmt.Errorf("%w: give both or neither", ErrNeedAuth)
	}
	if user != "" {
		return nil
	}
	loop, err := loopback(addr)
	if err != nil {
		return err
	}
	if !loop {
		return fmt.Errorf("%w: %s is not a loopback address", ErrNeedAuth, addr)
	}
	return nil
}

// loopback reports whether addr ("host:port") binds loopback only.
func loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("console: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// newToken returns 32 random bytes, hex.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("console: random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// guard wraps h with the headers, basic auth and the CSRF check.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		if s.cfg.HTTPS {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		if s.cfg.User != "" {
			u, p, ok := r.BasicAuth()
			if !ok || !equal(u, s.cfg.User) || !equal(p, s.cfg.Password) {
				hd.Set("WWW-Authenticate", `Basic realm="ledgermq console", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if c, err := r.Cookie(csrfCookie); err != nil || !equal(c.Value, s.token) {
			http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: s.token, Path: "/", HttpOnly: true, Secure: s.cfg.HTTPS, SameSite: http.SameSiteStrictMode})
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			if err := s.checkCSRF(r); err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		r, _ = s.withSession(r)
		h.ServeHTTP(w, r)
	})
}

// checkCSRF wants the token in both the cookie and the form, and, when
// the browser says where the form came from, this host.
func (s *Server) checkCSRF(r *http.Request) error {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !equal(c.Value, s.token) {
		return errors.New("forbidden: missing or stale console cookie; reload the page and try again")
	}
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("bad form: %w", err)
	}
	if !equal(r.PostForm.Get(csrfField), s.token) {
		return errors.New("forbidden: the form's token does not match; reload the page and try again")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if host := strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://"); host != r.Host {
			return fmt.Errorf("forbidden: form from %s, not this console", o)
		}
	}
	return nil
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
