package acl

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ledgermq/ledgermq/auth"
)

// Perm is a permission bit set, RocketMQ's values.
type Perm uint8

// Permissions (RocketMQ's Permission: DENY 1, ANY 2, PUB 4, SUB 8).
const (
	Deny Perm = 1 << 0
	Any  Perm = 1 << 1
	Pub  Perm = 1 << 2
	Sub  Perm = 1 << 3
)

// String is the permission as plain_acl.yml spells it.
func (p Perm) String() string {
	switch {
	case p&Deny != 0:
		return "DENY"
	case p&(Pub|Sub) == Pub|Sub:
		return "PUB|SUB"
	case p&Pub != 0:
		return "PUB"
	case p&Sub != 0:
		return "SUB"
	case p&Any != 0:
		return "ANY"
	}
	return "DENY"
}

// parsePerm reads a permission; anything unknown is DENY, as RocketMQ.
func parsePerm(s string) Perm {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "PUB":
		return Pub
	case "SUB":
		return Sub
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub
	}
	return Deny
}

// allows is RocketMQ's checkPermission: DENY wins, ANY asks for PUB or
// SUB, otherwise the needed bit must be owned.
func allows(owned, needed Perm) bool {
	if owned&Deny != 0 {
		return false
	}
	if needed&Any != 0 {
		return owned&(Pub|Sub) != 0
	}
	return needed&owned != 0
}

// Limits of a parsed file: an operator's typo must not exhaust memory.
const (
	MaxFileSize   = 4 << 20
	MaxAccounts   = 10000
	MinKeyLen     = 6
	maxAddrRules  = 10000
	maxPermsTotal = 1000000
)

// Sentinel errors, compared with errors.Is.
var (
	// ErrBadConfig: the ACL file does not parse or breaks a rule.
	ErrBadConfig = errors.New("acl: bad configuration")
	// ErrDenied: the request is refused (the broker answers
	// NO_PERMISSION, 16, with the error's text as remark).
	ErrDenied = errors.New("acl")
)

// Account is one accounts entry of plain_acl.yml.
type Account struct {
	AccessKey    string
	SecretKey    string
	Admin        bool
	White        addrMatcher
	DefaultTopic Perm
	DefaultGroup Perm
	Topics       map[string]Perm
	Groups       map[string]Perm
}

// ACL is a parsed plain_acl.yml. It is immutable: a reload builds a new one.
type ACL struct {
	globalWhite addrMatcher
	accounts    map[string]*Account
	// firstAdmin is the first admin account in file order (FirstAdmin).
	firstAdmin *Account
}

// Parse reads RocketMQ's plain_acl.yml.
func Parse(data []byte) (*ACL, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: file of %d bytes, at most %d", ErrBadConfig, len(data), MaxFileSize)
	}
	var f Description
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if len(f.Accounts) > MaxAccounts || len(f.GlobalWhiteAddrs) > maxAddrRules {
		return nil, fmt.Errorf("%w: %d accounts, %d white addresses", ErrBadConfig, len(f.Accounts), len(f.GlobalWhiteAddrs))
	}
	a := &ACL{accounts: make(map[string]*Account, len(f.Accounts))}
	for _, w := range f.GlobalWhiteAddrs {
		m, err := parseAddr(w)
		if err != nil {
			return nil, err
		}
		a.globalWhite = append(a.globalWhite, m...)
	}
	perms := 0
	for i, fa := range f.Accounts {
		if len(fa.AccessKey) < MinKeyLen || len(fa.SecretKey) < MinKeyLen {
			return nil, fmt.Errorf("%w: account %d: accessKey and secretKey need at least %d characters", ErrBadConfig, i, MinKeyLen)
		}
		if _, dup := a.accounts[fa.AccessKey]; dup {
			return nil, fmt.Errorf("%w: accessKey %q listed twice", ErrBadConfig, fa.AccessKey)
		}
		white, err := parseAddr(fa.WhiteRemoteAddress)
		if err != nil {
			return nil, fmt.Errorf("account %q: %w", fa.AccessKey, err)
		}
		perms += len(fa.TopicPerms) + len(fa.GroupPerms)
		if perms > maxPermsTotal {
			return nil, fmt.Errorf("%w: more than %d topic and group permissions", ErrBadConfig, maxPermsTotal)
		}
		acc := &Account{
			AccessKey: fa.AccessKey, SecretKey: fa.SecretKey, Admin: fa.Admin, White: white,
			DefaultTopic: parsePerm(fa.DefaultTopicPerm), DefaultGroup: parsePerm(fa.DefaultGroupPerm),
		}
		if acc.Topics, err = parseResourcePerms(fa.TopicPerms); err != nil {
			return nil, fmt.Errorf("account %q topicPerms: %w", fa.AccessKey, err)
		}
		if acc.Groups, err = parseResourcePerms(fa.GroupPerms); err != nil {
			return nil, fmt.Errorf("account %q groupPerms: %w", fa.AccessKey, err)
		}
		a.accounts[fa.AccessKey] = acc
		if acc.Admin && a.firstAdmin == nil {
			a.firstAdmin = acc
		}
	}
	return a, nil
}

// parseResourcePerms reads "name=PERM" entries.
func parseResourcePerms(list []string) (map[string]Perm, error) {
	out := make(map[string]Perm, len(list))
	for _, e := range list {
		name, perm, ok := strings.Cut(e, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: %q is not name=PERM", ErrBadConfig, e)
		}
		out[name] = parsePerm(perm)
	}
	return out, nil
}

// Kind is what a resource names.
type Kind uint8

// Resource kinds.
const (
	Topic Kind = iota
	Group
)

func (k Kind) String() string {
	if k == Group {
		return "group"
	}
	return "topic"
}

// Resource is one thing a request touches and the permission it needs.
type Resource struct {
	Kind Kind
	Name string
	Perm Perm
}

// Request is what Check decides on.
type Request struct {
	// RemoteAddr is the peer's address, host or host:port.
	RemoteAddr string
	// Ext and Body are the request's, as signed (Signature and AccessKey
	// included; fields the receiver added removed).
	Ext  map[string]string
	Body []byte
	// Code names the request in refusals.
	Code string
	// Admin: the request needs an admin account.
	Admin     bool
	Resources []Resource
}

// Check decides req the way RocketMQ's plain ACL does: a globally
// white-listed address passes; otherwise the AccessKey must name an
// account; an address on the account's white list passes; otherwise the
// signature must verify, then the admin flag and every resource's
// permission are checked. A refusal wraps ErrDenied and names what was
// refused.
func (a *ACL) Check(req Request) error {
	acc, err := a.Authenticate(req)
	if err != nil || acc == nil {
		return err
	}
	return a.Authorize(acc, req)
}

// Authenticate is the first half of Check, which needs neither the admin
// flag nor the resources (a caller can refuse a request whose body it has
// not parsed yet): a nil account with no error means a white-listed
// address, which needs no further check.
func (a *ACL) Authenticate(req Request) (*Account, error) {
	return a.AuthenticateKey(req.RemoteAddr, req.Ext[auth.FieldAccessKey], req.Code, func(secretKey string) error {
		return verify(req.Ext, req.Body, secretKey)
	})
}

// AuthenticateKey is Authenticate for a request signed some other way
// (the RocketMQ 5 gRPC port's authorization header): the white lists as
// Authenticate applies them, then check, given the account's secret key,
// verifies the signature. An empty accessKey is refused.
func (a *ACL) AuthenticateKey(remoteAddr, accessKey, code string, check func(secretKey string) error) (*Account, error) {
	host := hostOf(remoteAddr)
	if a.globalWhite.match(host) {
		return nil, nil
	}
	if accessKey == "" {
		return nil, fmt.Errorf("%w: no accessKey in %s from %s", ErrDenied, code, host)
	}
	acc, ok := a.accounts[accessKey]
	if !ok {
		return nil, fmt.Errorf("%w: no account for accessKey %s", ErrDenied, accessKey)
	}
	if acc.White.match(host) {
		return nil, nil
	}
	if err := check(acc.SecretKey); err != nil {
		return nil, fmt.Errorf("%w: signature of %s for accessKey %s: %w", ErrDenied, code, accessKey, err)
	}
	return acc, nil
}

// Authorize is the second half of Check for the account Authenticate
// returned: the admin flag and every resource's permission.
func (a *ACL) Authorize(acc *Account, req Request) error {
	ak := acc.AccessKey
	if req.Admin && !acc.Admin {
		return fmt.Errorf("%w: %s needs an admin account, accessKey %s is not one", ErrDenied, req.Code, ak)
	}
	for _, r := range req.Resources {
		owned, listed := acc.Topics[r.Name], false
		def := acc.DefaultTopic
		if r.Kind == Group {
			owned, listed = acc.Groups[r.Name]
			def = acc.DefaultGroup
		} else {
			_, listed = acc.Topics[r.Name]
		}
		if !listed {
			owned = def
		}
		if !allows(owned, r.Perm) {
			return fmt.Errorf("%w: No permission to %s %s %s for accessKey %s", ErrDenied, r.Perm, r.Kind, r.Name, ak)
		}
	}
	return nil
}

// Accounts is how many accounts the file lists.
func (a *ACL) Accounts() int { return len(a.accounts) }

// HasAccount tells whether the file lists an account of accessKey.
func (a *ACL) HasAccount(accessKey string) bool {
	_, ok := a.accounts[accessKey]
	return ok
}

// verify checks the signature over every ext field but Signature (Java's
// clients, SecurityToken included) and, failing that when a SecurityToken
// is present, without it: rocketmq-client-go adds the token after signing.
func verify(ext map[string]string, body []byte, secret string) error {
	secretOf := func(string) (string, bool) { return secret, true }
	_, err := auth.Verify(ext, body, secretOf)
	if _, tok := ext[auth.FieldSecurityToken]; err == nil || !tok {
		return err
	}
	rest := make(map[string]string, len(ext))
	for k, v := range ext {
		if k != auth.FieldSecurityToken {
			rest[k] = v
		}
	}
	if _, err2 := auth.Verify(rest, body, secretOf); err2 == nil {
		return nil
	}
	return err
}
