package main

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// tlsFlags are the connection flags of the client commands (admin,
// bench): with --tls-ca every connection is TLS and servers are verified
// against it; --tls-cert and --tls-key add a client certificate;
// --access-key and --secret-key sign every request (a broker with its ACL
// on).
type tlsFlags struct {
	ca, cert, key string
	accessKey     string
	secretKey     string
}

func (t *tlsFlags) add(f *pflag.FlagSet) {
	f.StringVar(&t.ca, "tls-ca", "", "PEM CA `FILE`: connect over TLS, verifying servers against it (ledgermq dev --tls writes DIR/tls/ca.pem)")
	f.StringVar(&t.cert, "tls-cert", "", "PEM client certificate `FILE`, presented when a server asks (with --tls-key)")
	f.StringVar(&t.key, "tls-key", "", "PEM private key `FILE` of --tls-cert")
	f.StringVar(&t.accessKey, "access-key", "", "ACL access key: sign every request with it (with --secret-key)")
	f.StringVar(&t.secretKey, "secret-key", "", "ACL secret key of --access-key")
}

func (t *tlsFlags) enabled() bool { return t.ca != "" || t.cert != "" || t.key != "" }

func (t *tlsFlags) check() error {
	if t.enabled() && t.ca == "" {
		return fmt.Errorf("%w: --tls-cert and --tls-key need --tls-ca", errAdmin)
	}
	if (t.accessKey == "") != (t.secretKey == "") {
		return fmt.Errorf("%w: --access-key and --secret-key go together", errAdmin)
	}
	return nil
}

func (t *tlsFlags) clientOptions() []client.Option {
	var out []client.Option
	if t.enabled() {
		out = append(out, client.WithTLSFiles(t.ca, t.cert, t.key))
	}
	if t.accessKey != "" {
		out = append(out, client.WithCredentials(t.accessKey, t.secretKey))
	}
	return out
}

func (t *tlsFlags) adminOptions() []client.AdminOption {
	var out []client.AdminOption
	if t.enabled() {
		out = append(out, client.WithAdminTLSFiles(t.ca, t.cert, t.key))
	}
	if t.accessKey != "" {
		out = append(out, client.WithAdminCredentials(t.accessKey, t.secretKey))
	}
	return out
}

// config is the flags' TLS for a bare remoting client (nil without TLS).
func (t *tlsFlags) config() (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	src, err := tlsconf.Load(tlsconf.Files{CAFile: t.ca, CertFile: t.cert, KeyFile: t.key})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAdmin, err)
	}
	return src.ClientConfig(), nil
}
