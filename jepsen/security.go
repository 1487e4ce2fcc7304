package jepsen

// TLS and ACL of a run (--tls, --acl): the cluster runs as an operator
// would run it with both on, and every client of the harness — producers,
// consumers, the admin, the status polls, the final reads — speaks TLS
// and signs its requests. The proxies pass the TLS bytes through, so
// every network fault means what it means without TLS.

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/remoting"
)

// Security turns TLS and the ACL on for a run.
type Security struct {
	// TLS: a local CA and certificates in DIR/tls; every node's client
	// port, raft links (mutual), dials to the name server and the leader,
	// and the name server's port run TLS.
	TLS bool `json:"tls,omitempty"`
	// ACL: RocketMQ's plain ACL on every node and on the name server
	// (DIR/plain_acl.yml): an admin account the nodes register with and
	// the harness's admin requests use, and an application account
	// (publish and subscribe, no admin) the workloads use.
	ACL bool `json:"acl,omitempty"`
}

// String is how the summary names it.
func (s Security) String() string {
	switch {
	case s.TLS && s.ACL:
		return "TLS and ACL"
	case s.TLS:
		return "TLS"
	case s.ACL:
		return "ACL"
	}
	return "plaintext, no ACL"
}

// The accounts of a run's ACL file.
const (
	adminAccessKey = "jepsen-admin"
	appAccessKey   = "jepsen-app"
)

// security is what a run's cluster made of its Security.
type security struct {
	Security
	tlsFiles  tlsconf.Files
	clientTLS *tls.Config
	aclPath   string
	admin     auth.Credentials
	app       auth.Credentials
}

// setUp writes the certificates and the ACL file into dir.
func (s *security) setUp(dir string) error {
	if s.TLS {
		files, err := tlsconf.WriteDev(filepath.Join(dir, "tls"))
		if err != nil {
			return fmt.Errorf("%w: TLS certificates: %w", ErrCluster, err)
		}
		src, err := tlsconf.Load(files)
		if err != nil {
			return fmt.Errorf("%w: TLS certificates: %w", ErrCluster, err)
		}
		s.tlsFiles, s.clientTLS = files, src.ClientConfig()
	}
	if s.ACL {
		var keys [2]string
		for i := range keys {
			k, err := auth.NewSecret()
			if err != nil {
				return err
			}
			keys[i] = k
		}
		s.admin = auth.Credentials{AccessKey: adminAccessKey, SecretKey: keys[0]}
		s.app = auth.Credentials{AccessKey: appAccessKey, SecretKey: keys[1]}
		s.aclPath = filepath.Join(dir, "plain_acl.yml")
		body := fmt.Sprintf("# Written by `ledgermq jepsen run --acl`.\naccounts:\n"+
			"  - accessKey: %s\n    secretKey: %s\n    admin: true\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n"+
			"  - accessKey: %s\n    secretKey: %s\n    admin: false\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n",
			s.admin.AccessKey, s.admin.SecretKey, s.app.AccessKey, s.app.SecretKey)
		if err := vfs.WriteFileAtomic(vfs.Default, s.aclPath, []byte(body)); err != nil {
			return err
		}
		if err := os.Chmod(s.aclPath, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// nodeLines are the broker config lines of every node.
func (s *security) nodeLines() []string {
	var out []string
	if s.TLS {
		out = append(out, "tls.enable=true", "tls.cert_file="+s.tlsFiles.CertFile,
			"tls.key_file="+s.tlsFiles.KeyFile, "tls.ca_file="+s.tlsFiles.CAFile)
	}
	if s.ACL {
		out = append(out, "acl_enable=true", "acl_file="+s.aclPath,
			"namesrv.access_key="+s.admin.AccessKey, "namesrv.secret_key="+s.admin.SecretKey)
	}
	return out
}

// namesrvArgs are the name server's flags.
func (s *security) namesrvArgs() []string {
	var out []string
	if s.TLS {
		out = append(out, "--tls-cert", s.tlsFiles.CertFile, "--tls-key", s.tlsFiles.KeyFile, "--tls-ca", s.tlsFiles.CAFile)
	}
	if s.ACL {
		out = append(out, "--acl-enable", "--acl-file", s.aclPath)
	}
	return out
}

// remoting is base with the run's TLS and the admin account's signature:
// the harness's own requests (status, transfers, final reads).
func (s *security) remoting(base remoting.ClientConfig) remoting.ClientConfig {
	base.TLS = s.clientTLS
	if s.ACL {
		creds := s.admin
		base.Sign = func(req *remoting.Command) {
			if req.ExtFields == nil {
				req.ExtFields = map[string]string{}
			}
			auth.Sign(req.ExtFields, req.Body, creds)
		}
	}
	return base
}

// ClientOptions are opts and what every producer and consumer of the
// workloads adds: the name server, the run's TLS, the application account.
func (c *Cluster) ClientOptions(opts ...client.Option) []client.Option {
	out := append([]client.Option{client.WithNameServers(c.ClientNamesrv)}, opts...)
	if c.sec.clientTLS != nil {
		out = append(out, client.WithTLS(c.sec.clientTLS))
	}
	if c.sec.ACL {
		out = append(out, client.WithCredentials(c.sec.app.AccessKey, c.sec.app.SecretKey))
	}
	return out
}

// AdminOptions are the options of the harness's admin: the run's TLS, the
// admin account.
func (c *Cluster) AdminOptions() []client.AdminOption {
	out := []client.AdminOption{client.WithAdminNameServers(c.ClientNamesrv)}
	if c.sec.clientTLS != nil {
		out = append(out, client.WithAdminTLS(c.sec.clientTLS))
	}
	if c.sec.ACL {
		out = append(out, client.WithAdminCredentials(c.sec.admin.AccessKey, c.sec.admin.SecretKey))
	}
	return out
}

// Remoting is a remoting client config for the harness's raw requests
// (the register workload): base with the run's TLS and the application
// account's signature.
func (c *Cluster) Remoting(base remoting.ClientConfig) remoting.ClientConfig {
	app := c.sec
	app.admin = c.sec.app
	return app.remoting(base)
}
