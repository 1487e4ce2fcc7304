package console

// Signing in. With Config.SignIn set, the console asks the operator for
// the cluster account to act with (an access key and its secret key) on
// /login: SignIn builds an admin client that signs every call with that
// account, and the console checks it with one signed read (a node's
// settings) before it keeps it. The client is kept on the server, in a
// session named by a random id in an HttpOnly, SameSite=Strict cookie
// (Secure over HTTPS); every page of the session then uses it (the
// request's context carries it, adminFrom), so what the operator sees and
// may change is what the account may. /logout drops it. Sessions last
// sessionTTL from sign-in; at most maxSessions are kept (the oldest goes).
// Without a session the pages use Config.Admin (the process's account,
// or none). The secret key is held only by the admin client: never shown,
// logged or written.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

const (
	sessionCookie = "ledgermq_console_session"
	sessionTTL    = 8 * time.Hour
	maxSessions   = 256
)

// adminKey is the context key of the session's admin client.
type adminKey struct{}

// adminFrom is the admin client of ctx's session, or def.
func adminFrom(ctx context.Context, def Admin) Admin {
	if a, ok := ctx.Value(adminKey{}).(Admin); ok {
		return a
	}
	return def
}

// adminOf is the admin client a page's calls use.
func (s *Server) adminOf(ctx context.Context) Admin { return adminFrom(ctx, s.cfg.Admin) }

type session struct {
	admin   Admin
	account string
	expires time.Time
}

// sessions are the signed-in sessions by id.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func (ss *sessions) get(id string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	se := ss.m[id]
	if se == nil {
		return nil
	}
	if now.After(se.expires) {
		delete(ss.m, id)
		closeAdmin(se.admin)
		return nil
	}
	return se
}

// add keeps se under id, dropping expired sessions and, past
// maxSessions, the one that expires first.
func (ss *sessions) add(id string, se *session, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]*session{}
	}
	for k, o := range ss.m {
		if now.After(o.expires) {
			delete(ss.m, k)
			closeAdmin(o.admin)
		}
	}
	if len(ss.m) >= maxSessions {
		var first string
		for k, o := range ss.m {
			if first == "" || o.expires.Before(ss.m[first].expires) {
				first = k
			}
		}
		closeAdmin(ss.m[first].admin)
		delete(ss.m, first)
	}
	ss.m[id] = se
}

func (ss *sessions) drop(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if se := ss.m[id]; se != nil {
		delete(ss.m, id)
		closeAdmin(se.admin)
	}
}

// closeAll drops every session (Run, on return).
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, se := range ss.m {
		delete(ss.m, k)
		closeAdmin(se.admin)
	}
}

func closeAdmin(a Admin) {
	if c, ok := a.(io.Closer); ok {
		_ = c.Close()
	}
}

// withSession gives r the admin client of its session, if it has one.
func (s *Server) withSession(r *http.Request) (*http.Request, *session) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || s.cfg.SignIn == nil {
		return r, nil
	}
	se := s.sessions.get(c.Value, time.Now())
	if se == nil {
		return r, nil
	}
	return r.WithContext(context.WithValue(r.Context(), adminKey{}, se.admin)), se
}

// loginData is the sign-in page's.
type loginData struct {
	Account string // the session's account, "" when signed out
	Failed  string
}

// loginPage shows the session's account and the sign-in form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.SignIn == nil {
		http.NotFound(w, r)
		return
	}
	d := &loginData{}
	if _, se := s.withSession(r); se != nil {
		d.Account = se.account
	}
	s.render(w, http.StatusOK, "login", page{Title: "Account", Nav: "login", Data: d}, false)
}

// errSignIn: the account given cannot act on the cluster.
var errSignIn = errors.New("console: sign-in refused")

// login signs in with the form's account: it builds the account's admin
// client, checks it with a signed read of a node's settings, and starts
// a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.SignIn == nil {
		http.NotFound(w, r)
		return
	}
	ak, sk := r.PostFormValue("accessKey"), r.PostFormValue("secretKey")
	fail := func(code int, why string) {
		s.render(w, code, "login", page{Title: "Account", Nav: "login", Data: &loginData{Failed: why}}, false)
	}
	if ak == "" || sk == "" {
		fail(http.StatusBadRequest, "give an access key and its secret key")
		return
	}
	a, err := s.cfg.SignIn(ak, sk)
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	if err := checkAccount(ctx, a); err != nil {
		closeAdmin(a)
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	id, err := newToken()
	if err != nil {
		closeAdmin(a)
		fail(http.StatusInternalServerError, err.Error())
		return
	}
	s.sessions.add(id, &session{admin: a, account: ak, expires: time.Now().Add(sessionTTL)}, time.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: s.cfg.HTTPS,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)})
	http.Redirect(w, r, "/cluster", http.StatusSeeOther)
}

// checkAccount makes one signed read with a: the settings of the first
// node that answers the cluster list.
func checkAccount(ctx context.Context, a Admin) error {
	members, err := a.ClusterList(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Error != "" {
			continue
		}
		if _, err := a.BrokerConfig(ctx, m.ClientAddr); err != nil {
			return fmt.Errorf("%w: %w", errSignIn, err)
		}
		return nil
	}
	return fmt.Errorf("%w: no node answers", errSignIn)
}

// logout ends the session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.drop(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: s.cfg.HTTPS,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
