package routing

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// Defaults of Config.
const (
	// DefaultAddr is RocketMQ's name-server port on every interface.
	DefaultAddr = ":9876"
	// DefaultScanInterval is the period of the expiry scan.
	DefaultScanInterval = 10 * time.Second
	// MaxHeartbeatTimeout bounds a registration's heartbeatTimeoutMillis.
	MaxHeartbeatTimeout = 24 * time.Hour
	// DefaultReadBudget is the name server's read budget: its requests
	// are small (a registration of 10 000 topics is about 2 MiB), so it
	// holds far less than a broker's.
	DefaultReadBudget = 64 << 20
	// DefaultConfirmTimeout bounds one attempt to confirm a claim with
	// the claimed node.
	DefaultConfirmTimeout = time.Second
	// DefaultTopicGrace is how long after start unsigned registrations may
	// share topics freely: the brokers of a running cluster re-register
	// with a restarted name server in any order within it.
	DefaultTopicGrace = time.Minute
)

// Config configures a Server. Zero values mean the defaults, so Config{}
// is valid; DefaultConfig spells them out.
type Config struct {
	// Addr is the TCP address to listen on; "127.0.0.1:0" picks a port.
	// Default DefaultAddr.
	Addr string
	// BrokerExpiry is how long a member stays registered without a
	// heartbeat, unless its registration carries heartbeatTimeoutMillis.
	// At least 1ms; default 120s.
	BrokerExpiry time.Duration
	// ScanInterval is the period of the expiry scan: a member is removed
	// between BrokerExpiry and BrokerExpiry+ScanInterval after its last
	// heartbeat. At least 1ms, at most BrokerExpiry; default 10s.
	ScanInterval time.Duration
	// Clock gives heartbeat times and drives the scan. Default
	// SystemClock(); tests pass a ManualClock.
	Clock Clock
	// Logger receives registrations, expiries, fencing decisions and
	// rejected requests. Default: a null logger.
	Logger hclog.Logger
	// Limits bound what peers can make the remoting server hold. Zero
	// values take remoting's defaults, except ReadBudget:
	// DefaultReadBudget.
	Limits remoting.Limits

	// Secret is the cluster secret (at least auth.MinSecretLen bytes).
	// When set, REGISTER_BROKER and UNREGISTER_BROKER must be signed with
	// it (package auth) and fresh (SignWindow); others are refused with
	// NO_PERMISSION. Empty: no signature is required (doc.go says what
	// the name server then still checks).
	Secret string
	// SignWindow is how far a signed request's SignTime may be from this
	// name server's clock. Default auth.DefaultWindow (5 min).
	SignWindow time.Duration
	// Checker confirms a registration with the node it names before the
	// registration changes routes. Default: RaftStatusChecker, which asks
	// the node for RAFT_STATUS (4001). Tests pass a fake.
	Checker Checker
	// ConfirmTimeout bounds one attempt of the default Checker. Default
	// DefaultConfirmTimeout.
	ConfirmTimeout time.Duration
	// TopicGrace is how long after Start unsigned registrations may share
	// topics without the rule of doc.go (Topics). Default
	// DefaultTopicGrace; negative: none.
	TopicGrace time.Duration

	// ACLEnable turns on access control (RocketMQ's aclEnable; off by
	// default): requests are checked against ACLFile, RocketMQ's
	// plain_acl.yml, as doc.go (Access control) says. A file that does
	// not parse stops NewServer.
	ACLEnable bool
	// ACLFile is the plain_acl.yml the ACL reads; it is re-read when its
	// modification time or size changes (every ACLReloadInterval, default
	// DefaultACLReloadInterval), and a file that no longer parses keeps
	// the previous rules.
	ACLFile           string
	ACLReloadInterval time.Duration

	// KVConfigPath is the file the KV configuration (PUT_KV_CONFIG and
	// the like; Java's kvConfigPath) is kept in, written atomically on
	// every change and read at start. Empty: the table is kept in memory
	// only, and a restart forgets it.
	KVConfigPath string

	// TLSServer, if set, makes the name server's port TLS only (no
	// client certificate is asked for).
	TLSServer *tls.Config
	// TLSClient, if set, is how the default Checker dials brokers to
	// confirm registrations (brokers whose client port is TLS).
	TLSClient *tls.Config
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{
		Addr:         DefaultAddr,
		BrokerExpiry: DefaultBrokerExpiry,
		ScanInterval: DefaultScanInterval,
		Clock:        SystemClock(),
		Logger:       hclog.NewNullLogger(),

		SignWindow:     auth.DefaultWindow,
		ConfirmTimeout: DefaultConfirmTimeout,
		TopicGrace:     DefaultTopicGrace,

		ACLReloadInterval: DefaultACLReloadInterval,
	}
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.BrokerExpiry == 0 {
		c.BrokerExpiry = d.BrokerExpiry
	}
	if c.ScanInterval == 0 {
		c.ScanInterval = min(d.ScanInterval, c.BrokerExpiry)
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.SignWindow == 0 {
		c.SignWindow = d.SignWindow
	}
	if c.ConfirmTimeout == 0 {
		c.ConfirmTimeout = d.ConfirmTimeout
	}
	if c.TopicGrace == 0 {
		c.TopicGrace = d.TopicGrace
	}
	if c.ACLReloadInterval == 0 {
		c.ACLReloadInterval = d.ACLReloadInterval
	}
	return c
}

// Validate reports the first setting that is out of bounds, after zero
// values have been replaced by their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.BrokerExpiry < time.Millisecond:
		return fmt.Errorf("routing: config: BrokerExpiry %v below 1ms", c.BrokerExpiry)
	case c.BrokerExpiry > MaxHeartbeatTimeout:
		return fmt.Errorf("routing: config: BrokerExpiry %v above %v", c.BrokerExpiry, MaxHeartbeatTimeout)
	case c.ScanInterval < time.Millisecond:
		return fmt.Errorf("routing: config: ScanInterval %v below 1ms", c.ScanInterval)
	case c.ScanInterval > c.BrokerExpiry:
		return errors.New("routing: config: ScanInterval above BrokerExpiry")
	case c.SignWindow < time.Second:
		return fmt.Errorf("routing: config: SignWindow %v below 1s", c.SignWindow)
	case c.ConfirmTimeout < time.Millisecond:
		return fmt.Errorf("routing: config: ConfirmTimeout %v below 1ms", c.ConfirmTimeout)
	case c.ACLEnable && c.ACLFile == "":
		return errors.New("routing: config: ACLEnable needs ACLFile (RocketMQ's plain_acl.yml)")
	case !c.ACLEnable && c.ACLFile != "":
		return errors.New("routing: config: ACLFile without ACLEnable: the file would be ignored")
	case c.ACLReloadInterval < time.Millisecond:
		return fmt.Errorf("routing: config: ACLReloadInterval %v below 1ms", c.ACLReloadInterval)
	}
	if err := auth.CheckSecret(c.Secret); err != nil {
		return fmt.Errorf("routing: config: %w", err)
	}
	return nil
}

// String renders the effective configuration on one line.
func (c Config) String() string {
	c = c.withDefaults()
	secret := "none"
	if c.Secret != "" {
		secret = "set"
	}
	extra := ""
	if c.ACLEnable {
		extra += fmt.Sprintf(" acl=%q", c.ACLFile)
	}
	if c.TLSServer != nil {
		extra += " tls=on"
	}
	if c.KVConfigPath != "" {
		extra += fmt.Sprintf(" kvConfig=%q", c.KVConfigPath)
	}
	return fmt.Sprintf("routing{addr=%q brokerExpiry=%v scanInterval=%v clusterSecret=%s signWindow=%v confirmTimeout=%v topicGrace=%v%s}",
		c.Addr, c.BrokerExpiry, c.ScanInterval, secret, c.SignWindow, c.ConfirmTimeout, c.TopicGrace, extra)
}
