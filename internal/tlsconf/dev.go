package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// devValidity is how long dev certificates are valid.
const devValidity = 365 * 24 * time.Hour

// CA is a certificate authority that issues dev certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

// NewCA makes a self-signed ECDSA P-256 CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"ledgermq dev"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(devValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA certificate: %w", err)
	}
	return &CA{Cert: cert, key: key, der: der}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n
}

// WriteCA writes the CA certificate to path (the CA file of Files).
func (ca *CA) WriteCA(path string) error {
	return writePEM(path, "CERTIFICATE", ca.der, 0o644)
}

// WriteKey writes the CA's private key to path (mode 0600).
func (ca *CA) WriteKey(path string) error {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

// Issue makes a certificate for 127.0.0.1 and localhost, for server and
// client use, named cn, and writes it to certPath and its key to keyPath.
func (ca *CA) Issue(cn, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tlsconf: key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"ledgermq dev"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(devValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("tlsconf: certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	// Key first: a reloading reader that sees the new certificate finds
	// its key already there.
	if err := writePEM(keyPath, "EC PRIVATE KEY", kder, 0o600); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

// writePEM writes one PEM block through a temporary file and a rename, so
// a reader never sees half a file.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: typ, Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("tlsconf: write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("tlsconf: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tlsconf: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	return nil
}

// WriteDev makes a CA and one node certificate in dir (created if
// missing): ca.pem, ca-key.pem, node.pem, node-key.pem. Files already
// there are kept, so a restarted dev cluster keeps its certificates. It
// returns the node's Files.
func WriteDev(dir string) (Files, error) {
	f := Files{CertFile: filepath.Join(dir, "node.pem"), KeyFile: filepath.Join(dir, "node-key.pem"), CAFile: filepath.Join(dir, "ca.pem")}
	if _, err := os.Stat(f.CertFile); err == nil {
		if _, err := Load(f); err == nil {
			return f, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("tlsconf: %w", err)
	}
	ca, err := NewCA("ledgermq dev CA")
	if err != nil {
		return Files{}, err
	}
	if err := ca.WriteKey(filepath.Join(dir, "ca-key.pem")); err != nil {
		return Files{}, err
	}
	if err := ca.WriteCA(f.CAFile); err != nil {
		return Files{}, err
	}
	if err := ca.Issue("ledgermq dev node", f.CertFile, f.KeyFile); err != nil {
		return Files{}, err
	}
	return f, nil
}

// WriteTestFiles makes a fresh CA and a certificate in dir with the given
// file-name prefix (prefix-ca.pem, prefix.pem, prefix-key.pem). Tests use
// it for a second, foreign CA.
func WriteTestFiles(dir, prefix string) (Files, *CA, error) {
	ca, err := NewCA(prefix + " CA")
	if err != nil {
		return Files{}, nil, err
	}
	f := Files{CertFile: filepath.Join(dir, prefix+".pem"), KeyFile: filepath.Join(dir, prefix+"-key.pem"), CAFile: filepath.Join(dir, prefix+"-ca.pem")}
	if err := ca.WriteCA(f.CAFile); err != nil {
		return Files{}, nil, err
	}
	if err := ca.Issue(prefix, f.CertFile, f.KeyFile); err != nil {
		return Files{}, nil, err
	}
	return f, ca, nil
}
