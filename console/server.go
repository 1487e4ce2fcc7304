package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Config configures a Server.
type Config struct {
	// Admin is the cluster's admin API (a *client.Admin). Required.
	Admin Admin
	// User and Password, when set, protect every page with basic auth.
	User, Password string
	// NodeHTTP asks nodes' /status and /metrics (default: its own
	// transport, 2 s timeout; Run closes its idle connections on return).
	NodeHTTP *http.Client
	// SampleEvery is the live chart's interval (default 2 s).
	SampleEvery time.Duration
	// RefreshEvery is how often the cluster page refreshes itself
	// (default 2 s).
	RefreshEvery time.Duration
	// RequestTimeout bounds the admin calls of one page (default 15 s).
	RequestTimeout time.Duration
	// HTTPS says the console is served over TLS (its listener does it):
	// its cookie is then Secure, and browsers are told to keep to HTTPS.
	HTTPS bool
	// SignIn, if set, lets operators sign in with a cluster account on
	// /login (session.go): it returns an admin client that signs every
	// call with the account; the session's pages use it.
	SignIn func(accessKey, secretKey string) (Admin, error)
}

// Server is the console: its pages, and the sampler of the live chart.
type Server struct {
	cfg     Config
	token   string
	pages   map[string]*template.Template
	nodes   *nodes
	sampler *sampler
	leaders *leaderLog
	mux     *http.ServeMux
	// sessions are the signed-in operators' (session.go).
	sessions sessions
}

// New returns a Server; Run serves it, Handler gives its pages alone.
func New(cfg Config) (*Server, error) {
	if cfg.Admin == nil {
		return nil, errors.New("console: no admin API")
	}
	if (cfg.User == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("%w: give both or neither", ErrNeedAuth)
	}
	if cfg.NodeHTTP == nil {
		cfg.NodeHTTP = &http.Client{Timeout: 2 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: 2 * time.Second}}
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 2 * time.Second
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 2 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 15 * time.Second
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	n := newNodes(cfg.Admin, cfg.NodeHTTP)
	s := &Server{cfg: cfg, token: token, pages: pages, nodes: n, sampler: newSampler(cfg.Admin, n, cfg.SampleEvery), leaders: newLeaderLog(), mux: http.NewServeMux()}
	s.sampler.observe = s.leaders.observe
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/static/favicon.svg", http.StatusMovedPermanently)
	})
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/cluster", http.StatusFound)
	})
	s.mux.HandleFunc("GET /cluster", s.cluster)
	s.mux.HandleFunc("GET /topics", s.topics)
	s.mux.HandleFunc("GET /topics/{topic}", s.topic)
	s.mux.HandleFunc("GET /groups", s.groups)
	s.mux.HandleFunc("GET /groups/{group}", s.group)
	s.mux.HandleFunc("POST /groups/{group}/reset", s.resetDryRun)
	s.mux.HandleFunc("POST /groups/{group}/reset/execute", s.resetExecute)
	s.mux.HandleFunc("GET /messages", s.messages)
	s.mux.HandleFunc("GET /chart", s.chart)
	s.mux.HandleFunc("GET /pending", s.pending)
	s.mux.HandleFunc("GET /acl", s.acl)
	s.mux.HandleFunc("GET /api/metrics", s.metricsJSON)
	s.mux.HandleFunc("GET /login", s.loginPage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
}

// Handler returns the console's pages behind its auth and CSRF checks.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// RunBackground runs what the console does besides answering pages (the
// live chart's sampler) until ctx ends, then lets the signed-in sessions'
// clients and the nodes' idle connections go. A process that serves
// Handler on a server of its own runs it beside (Run does both).
func (s *Server) RunBackground(ctx context.Context) {
	s.sampler.run(ctx)
	s.sessions.closeAll()
	s.cfg.NodeHTTP.CloseIdleConnections()
}

// Run serves on ln and samples the chart's metrics until ctx ends, then
// shuts the server down (waiting up to 5 s for requests in flight).
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 60 * time.Second}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.RunBackground(sctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		shctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shctx)
		cancel()
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	stop()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
