package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server.
type Config struct {
	// Addr is where the server listens (host:port; port 0 picks one).
	Addr string
	// Status returns what /status serves as JSON; Ready whether /readyz
	// answers 200, and why not. Each is called once per request. A broker
	// node passes NodeProbe(status, maxLag).
	Status func() any
	Ready  func() (bool, []string)
	// Registry is served on /metrics; nil serves an empty one.
	Registry *prometheus.Registry
	// Profiling also serves Go's runtime profiles under /debug/pprof/
	// (CPU, heap, goroutines, mutex, block, execution trace). Off by
	// default: they show the process's internals and a CPU profile or
	// trace costs while it runs.
	Profiling bool
	// Fallback, if set, serves every path the endpoints above do not (the
	// web console, when the process serves it on this port).
	Fallback http.Handler
	Logger   hclog.Logger
}

// profileWriteTimeout bounds a response of a server with Profiling on:
// a CPU profile or trace streams for its whole ?seconds= (net/http/pprof
// refuses a duration not shorter than the write timeout).
const profileWriteTimeout = 5 * time.Minute

// NodeProbe is the Status and Ready functions of a broker node whose
// status is read by status; maxLag 0 means DefaultMaxLag.
func NodeProbe(status func() Status, maxLag uint64) (func() any, func() (bool, []string)) {
	if maxLag == 0 {
		maxLag = DefaultMaxLag
	}
	return func() any { return status() }, func() (bool, []string) { return status().Ready(maxLag) }
}

// Server is a node's operator HTTP server.
type Server struct {
	cfg  Config
	http *http.Server
	ln   net.Listener
	done chan struct{}
}

// New builds the server; Start listens.
func New(cfg Config) (*Server, error) {
	if cfg.Status == nil || cfg.Ready == nil {
		return nil, errors.New("ops: Config.Status and Config.Ready are required")
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Server{cfg: cfg, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{ErrorLog: errorLog{cfg.Logger}}))
	writeTimeout := 30 * time.Second
	if cfg.Profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index) // and every named profile: heap, goroutine, mutex, …
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
		writeTimeout = profileWriteTimeout
	}
	if cfg.Fallback != nil {
		mux.Handle("/", cfg.Fallback)
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: writeTimeout, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	return s, nil
}

// Start listens on Config.Addr and serves until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("ops: listen %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("ops server stopped", "error", err)
		}
	}()
	return nil
}

// Addr is the listening address (after Start).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, waiting for requests in flight up to ctx.
func (s *Server) Close(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.http.Shutdown(ctx)
	<-s.done
	return err
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	ok, why := s.cfg.Ready()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, strings.Join(why, "\n"))
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.cfg.Status()); err != nil {
		s.cfg.Logger.Debug("status not written", "error", err)
	}
}

// errorLog adapts hclog to promhttp's logger.
type errorLog struct{ l hclog.Logger }

func (e errorLog) Println(v ...interface{}) { e.l.Warn("metrics: " + fmt.Sprint(v...)) }
