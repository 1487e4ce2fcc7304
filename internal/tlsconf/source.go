package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultCheckInterval is how often at most a Source looks at its files.
const DefaultCheckInterval = 2 * time.Second

// ErrNoCA is returned by Load for files without a CA file: nothing could
// be verified.
var ErrNoCA = errors.New("tlsconf: a CA file is required")

// Files names the PEM files of one side of a link.
type Files struct {
	// CertFile and KeyFile are this side's certificate chain and key.
	// Required for a server; a client without them presents no
	// certificate (enough for client ports, refused on raft ports).
	CertFile, KeyFile string
	// CAFile holds the CA certificates peers are verified against.
	CAFile string
	// CheckInterval bounds how often the files are looked at
	// (DefaultCheckInterval); negative: at every handshake.
	CheckInterval time.Duration
}

// Enabled reports whether any file is named.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.CAFile != "" }

// Source holds the material loaded from Files and reloads it when the
// files change. Safe for concurrent use.
type Source struct {
	files Files
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time
	stamps  [3]stamp
	cert    *tls.Certificate
	pool    *x509.CertPool
	err     error // the last failed reload, nil after a good one
	loads   int
}

// stamp is what tells a file changed.
type stamp struct {
	mod  time.Time
	size int64
}

// Load reads the files once; an error means they are unusable now. A
// certificate without its key (or the reverse) is an error, so is a
// missing CA file.
func Load(f Files) (*Source, error) {
	if f.CAFile == "" {
		return nil, ErrNoCA
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("tlsconf: a certificate file needs its key file and the reverse")
	}
	if f.CheckInterval == 0 {
		f.CheckInterval = DefaultCheckInterval
	}
	s := &Source{files: f, now: time.Now}
	st, err := s.stat()
	if err != nil {
		return nil, err
	}
	if err := s.load(st); err != nil {
		return nil, err
	}
	s.checked = s.now()
	return s, nil
}

// Files returns the files the source reads.
func (s *Source) Files() Files { return s.files }

// Err is the error of the last reload attempt (nil when it succeeded or
// none was needed).
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Loads counts successful loads, the first included.
func (s *Source) Loads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

func (s *Source) paths() [3]string {
	return [3]string{s.files.CertFile, s.files.KeyFile, s.files.CAFile}
}

func (s *Source) stat() ([3]stamp, error) {
	var out [3]stamp
	for i, p := range s.paths() {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return out, fmt.Errorf("tlsconf: %w", err)
		}
		out[i] = stamp{mod: fi.ModTime(), size: fi.Size()}
	}
	return out, nil
}

// load reads every file; the caller holds mu or owns s.
func (s *Source) load(st [3]stamp) error {
	var cert *tls.Certificate
	if s.files.CertFile != "" {
		c, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
		if err != nil {
			return fmt.Errorf("tlsconf: load %s and %s: %w", s.files.CertFile, s.files.KeyFile, err)
		}
		cert = &c
	}
	pem, err := os.ReadFile(s.files.CAFile)
	if err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("tlsconf: %s holds no PEM certificate", s.files.CAFile)
	}
	s.cert, s.pool, s.stamps = cert, pool, st
	s.loads++
	return nil
}

// current returns the material, reloading it first when a check is due
// and the files changed.
func (s *Source) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.files.CheckInterval > 0 && now.Sub(s.checked) < s.files.CheckInterval {
		return s.cert, s.pool
	}
	s.checked = now
	st, err := s.stat()
	if err != nil {
		s.err = err
		return s.cert, s.pool
	}
	if st == s.stamps {
		return s.cert, s.pool
	}
	if err := s.load(st); err != nil {
		// Keep serving the old material; the stamps are unchanged, so
		// the next check tries again.
		s.err = err
		return s.cert, s.pool
	}
	s.err = nil
	return s.cert, s.pool
}

// ServerConfig is a server's config. With mutual, clients must present a
// certificate signed by the CA (raft ports); without, none is asked for
// (client ports). It fails if the files hold no certificate.
func (s *Source) ServerConfig(mutual bool) (*tls.Config, error) {
	if s.files.CertFile == "" {
		return nil, errors.New("tlsconf: a server needs a certificate and key file")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := s.current()
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
			if mutual {
				c.ClientAuth = tls.RequireAndVerifyClientCert
				c.ClientCAs = pool
			}
			return c, nil
		},
	}, nil
}

// ClientConfig is a client's config: the server is verified against the
// CA for the host name of the address dialled (dial with ForAddr), and the certificate, if the files have
// one, is presented when the server asks.
func (s *Source) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is done in VerifyConnection against the current
		// pool (doc.go, Reload); it is not skipped.
		InsecureSkipVerify: true, //nolint:gosec
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := s.current()
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool := s.current()
			return verifyServer(cs, pool)
		},
	}
}

// verifyServer is the standard verification of a server's chain and name.
func verifyServer(cs tls.ConnectionState, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconf: the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	name := cs.ServerName
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	if name == "" {
		return errors.New("tlsconf: no server name to verify (set ServerName)")
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		DNSName: name, Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tlsconf: verify server %s: %w", name, err)
	}
	return nil
}

// ForAddr returns cfg for dialling addr ("host:port"): a clone with
// ServerName set to the host when cfg has none. crypto/tls leaves an IP
// address out of ConnectionState.ServerName (it is not sent as SNI), so a
// VerifyConnection hook (ClientConfig's) is handed the dialled host in it.
// Every client link of the product dials through it.
func ForAddr(cfg *tls.Config, addr string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			c.ServerName = h
		} else {
			c.ServerName = addr
		}
	}
	if verify := c.VerifyConnection; verify != nil {
		name := c.ServerName
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.ServerName == "" {
				cs.ServerName = name
			}
			return verify(cs)
		}
	}
	return c
}
