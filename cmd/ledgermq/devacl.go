package main

// `ledgermq dev --acl FILE`: the broker nodes and the name server check
// requests against FILE (RocketMQ's plain_acl.yml). The nodes sign their
// registrations with the file's first admin account (namesrv.access_key,
// namesrv.secret_key in DIR/nI.conf, mode 0600): an admin account is one
// every ACL lets register, and a local cluster has no other to hand.

import (
	"fmt"
	"path/filepath"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/auth"
)

// devACL is the dev cluster's ACL setup: the file's absolute path, the
// node config lines that turn the ACL on and sign registrations, and the
// account they sign with.
type devACL struct {
	file  string
	creds auth.Credentials
}

// loadDevACL reads the ACL file given to --acl: it must parse and list an
// admin account.
func loadDevACL(path string) (*devACL, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --acl: %w", errDevConfig, err)
	}
	f, err := acl.LoadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: --acl: %w", errDevConfig, err)
	}
	creds, ok := f.Rules().FirstAdmin()
	if !ok {
		return nil, fmt.Errorf("%w: --acl %s lists no admin account (admin: true) for the nodes to register with", errDevConfig, abs)
	}
	return &devACL{file: abs, creds: creds}, nil
}

// nodeLines are the broker config lines of every node.
func (a *devACL) nodeLines() []string {
	return []string{"acl_enable=true", "acl_file=" + escapeProperty(a.file, false),
		"namesrv.access_key=" + escapeProperty(a.creds.AccessKey, false),
		"namesrv.secret_key=" + escapeProperty(a.creds.SecretKey, false)}
}

// namesrvArgs are the name server's flags.
func (a *devACL) namesrvArgs() []string {
	return []string{"--acl-enable", "--acl-file", a.file}
}
