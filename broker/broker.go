package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/dedup"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/remoting"
)

// Config configures the client-facing side of one broker node.
type Config struct {
	// ClusterName and BrokerName are RocketMQ's; BrokerName is the broker
	// group (the raft group).
	ClusterName string
	BrokerName  string
	// NodeID is this node's raft id; Peers maps every node id of the group
	// to its client-facing address (followers forward sends to the
	// leader's, and a follower's brokerId is 1 + its position among the
	// sorted node ids).
	NodeID string
	Peers  map[string]string
	// Addr is where the remoting server listens; AdvertiseAddr what
	// clients dial and name servers route (default Addr): ip:port, or
	// host:port with a host name that stays the node's across restarts
	// (a Kubernetes pod's DNS name, whose IP changes).
	Addr          string
	AdvertiseAddr string
	// StoreHost is the ip:port offset message ids of this node name; it
	// must equal the raft group's StoreHost. Default: AdvertiseAddr when
	// that is ip:port; required when AdvertiseAddr is a host name, since
	// an offset message id holds an IP, never a name.
	StoreHost netip.AddrPort
	// NamesrvAddrs are the name servers this node registers with.
	NamesrvAddrs []string
	// RegisterInterval is the heartbeat to the name servers. Default 30 s.
	RegisterInterval time.Duration
	// ClusterSecret, when set, signs every registration with the name
	// servers (routing: REGISTER_BROKER, UNREGISTER_BROKER); name servers
	// configured with a secret refuse unsigned ones.
	ClusterSecret string
	// NamesrvCredentials, when set, are the account of the name servers'
	// ACL this node signs its registrations with (routing, doc.go: Access
	// control); name servers with their ACL on refuse unsigned ones.
	NamesrvCredentials auth.Credentials
	// AutoCreateTopic creates unknown topics from the TBW102 template on
	// first send (RocketMQ autoCreateTopicEnable). Default true.
	AutoCreateTopic bool
	// DuplicateWindow is how long a sent message's UNIQ_KEY is remembered:
	// a send that repeats one within it (a producer's retry) is answered
	// with the first store and not stored again. A topic's attribute
	// dedup.window shortens it or, at 0, turns it off (duplicates.go).
	// Default 2 minutes (dedup.DefaultWindow, the store's default);
	// negative turns it off everywhere. It must not exceed the store's.
	DuplicateWindow time.Duration
	// DefaultTopicQueueNums is TBW102's queue count. Default 8.
	DefaultTopicQueueNums int32
	// TraceTopic, when set, is the topic RocketMQ's clients write message
	// traces to (RocketMQ traceTopicEnable with msgTraceTopicName): the
	// leader creates it, one queue, as Java's broker does at start (trace.go).
	TraceTopic string
	// AutoCreateSubscriptionGroup (RocketMQ autoCreateSubscriptionGroup).
	// Default true.
	AutoCreateSubscriptionGroup bool
	// Listener, if set, is the bound client socket to serve (Addr must be
	// its address); otherwise the broker listens on Addr.
	Listener net.Listener
	// TLSServer, if set, makes the client port TLS only (no client
	// certificate is asked for: RocketMQ clients offer none).
	TLSServer *tls.Config
	// TLSClient, if set, is used to dial name servers and the leader
	// (verifying them against its CA, presenting this node's certificate).
	TLSClient *tls.Config
	// DelayLevels are the delays of levels 1, 2, … (RocketMQ's
	// messageDelayLevel). Default: ParseDelayLevels(DefaultDelayLevels).
	DelayLevels []time.Duration
	// DisablePropertyFilter refuses SQL92 subscriptions (RocketMQ's
	// enablePropertyFilter=false). Default: SQL92 is served.
	DisablePropertyFilter bool
	// MaxMessageSize bounds one message body. Default 4 MiB.
	MaxMessageSize int
	Logger         hclog.Logger
	Clock          func() time.Time
	// TransactionTimeout is how old a half message must be before the
	// leader checks back with its producer (RocketMQ transactionTimeOut;
	// a message's CHECK_IMMUNITY_TIME_IN_SECONDS overrides it). Default 6 s.
	TransactionTimeout time.Duration
	// TransactionCheckInterval is the period of the check-back rounds
	// (transactionCheckInterval). Default 30 s.
	TransactionCheckInterval time.Duration
	// TransactionCheckMax is how many times a transaction is checked
	// before it is discarded (transactionCheckMax). Default 15.
	TransactionCheckMax int
	// TimerMaxDelay is the longest delay a timer message may ask for
	// (RocketMQ timerMaxDelaySec); a longer one is refused with
	// MESSAGE_ILLEGAL. Default 3 days.
	TimerMaxDelay time.Duration
	// TimerDir holds this node's timer index (package timerwheel).
	// Default: timerwheel/ beside the raft group's store directory.
	TimerDir string
	// Limits bound what clients can make the broker's remoting server
	// hold: read budget, connections, requests in flight per connection,
	// header sizes. Zero values take remoting's defaults.
	Limits remoting.Limits
	// Settings are the node's effective settings (secrets redacted) by
	// key, answered to GET_BROKER_CONFIG.
	Settings map[string]string
	// GRPCEndpoint is the advertised host:port of the node's RocketMQ 5
	// gRPC port ("" when it has none), answered to GET_BROKER_CONFIG as
	// GRPCEndpointKey: how a proxy (grpcapi's cluster mode) finds the
	// port of a group's leader.
	GRPCEndpoint string
	// Observer, if set, hears every send stored and pull served (metrics).
	Observer Observer
	// ACLEnable turns on access control (RocketMQ aclEnable, acl.go):
	// every request is checked against ACLFile. A group of several nodes
	// then needs ClusterSecret: the nodes sign what they send each other.
	ACLEnable bool
	// ACLFile is RocketMQ's plain_acl.yml: how an operator edits the
	// group's rules, which are replicated through raft (aclsync.go). It is
	// checked for changes every ACLReloadInterval (default 3 s).
	ACLFile           string
	ACLReloadInterval time.Duration
	// PopMaxInflight bounds the messages a consumer group holds
	// un-acknowledged in one queue through POP (pop.go): a queue at the
	// cap hands out nothing new. Default 4096.
	PopMaxInflight int
	// PopReviveInterval is the period of the leader's sweep that sends POP
	// messages whose deliveries are used up to the dead-letter queue
	// without waiting for a receive (pop_revive.go). Default 1 s.
	PopReviveInterval time.Duration
}

func (c *Config) setDefaults() {
	if c.ClusterName == "" {
		c.ClusterName = "DefaultCluster"
	}
	if c.AdvertiseAddr == "" {
		c.AdvertiseAddr = c.Addr
	}
	if !c.StoreHost.IsValid() {
		if ap, err := netip.ParseAddrPort(c.AdvertiseAddr); err == nil {
			c.StoreHost = ap
		}
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = dedup.DefaultWindow
	}
	if c.RegisterInterval == 0 {
		c.RegisterInterval = 30 * time.Second
	}
	if c.DefaultTopicQueueNums == 0 {
		c.DefaultTopicQueueNums = 8
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = 4 << 20
	}
	if len(c.DelayLevels) == 0 {
		c.DelayLevels, _ = ParseDelayLevels(DefaultDelayLevels)
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.ACLReloadInterval == 0 {
		c.ACLReloadInterval = 3 * time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = defaultTransactionTimeout
	}
	if c.TransactionCheckInterval == 0 {
		c.TransactionCheckInterval = defaultTransactionCheckInterval
	}
	if c.TransactionCheckMax == 0 {
		c.TransactionCheckMax = defaultTransactionCheckMax
	}
	if c.TimerMaxDelay == 0 {
		c.TimerMaxDelay = DefaultTimerMaxDelay
	}
}

// Validate checks the configuration after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.BrokerName == "" || c.NodeID == "" || c.Addr == "" {
		errs = append(errs, errors.New("broker: BrokerName, NodeID and Addr are required"))
	}
	if _, ok := c.Peers[c.NodeID]; !ok {
		errs = append(errs, fmt.Errorf("broker: Peers must map this node %q to its client address", c.NodeID))
	}
	if c.TimerMaxDelay < 0 {
		errs = append(errs, fmt.Errorf("broker: TimerMaxDelay %v must be positive", c.TimerMaxDelay))
	}
	if c.ACLEnable && c.ACLFile == "" {
		errs = append(errs, errors.New("broker: ACLEnable needs ACLFile"))
	}
	if c.ACLEnable && len(c.Peers) > 1 && c.ClusterSecret == "" {
		errs = append(errs, errors.New("broker: ACLEnable in a group of several nodes needs ClusterSecret (the nodes sign what they forward to each other)"))
	}
	if _, _, err := net.SplitHostPort(c.AdvertiseAddr); err != nil {
		errs = append(errs, fmt.Errorf("broker: AdvertiseAddr %q must be host:port: %v", c.AdvertiseAddr, err))
	} else if !c.StoreHost.IsValid() {
		errs = append(errs, fmt.Errorf("broker: AdvertiseAddr %q is not ip:port, so StoreHost (the ip:port offset message ids name) is required", c.AdvertiseAddr))
	}
	return errors.Join(errs...)
}

// Hooks carries the raft group's events to the broker. Create it first,
// put OnRoleChange and OnDispatch into the group's configuration
// (dledger.Config.OnRoleChange, dledger.Config.Store.OnDispatch), open the
// group, then New the broker with the same Hooks.
type Hooks struct {
	b atomic.Pointer[Broker]
}

// NewHooks returns hooks not yet attached to a broker; events before the
// broker exists are dropped (the broker reads the current role at Start).
func NewHooks() *Hooks { return &Hooks{} }

// OnRoleChange is dledger.Config.OnRoleChange.
func (h *Hooks) OnRoleChange(ev dledger.RoleEvent) {
	if b := h.b.Load(); b != nil {
		b.onRoleChange(ev)
	}
}

// OnDispatch is store.Config.OnDispatch: new messages are readable.
func (h *Hooks) OnDispatch(topic string, queueID int32, maxOffset int64) {
	if b := h.b.Load(); b != nil {
		if topic == timerTopic {
			b.timers.notify()
		}
		b.pulls.notify(pullKey{topic, queueID}, maxOffset)
		b.pop.notify(topic)
	}
}

// Broker serves the RocketMQ protocol for one node of a broker group.
type Broker struct {
	cfg    Config
	log    hclog.Logger
	obs    Observer
	group  Replica
	hooks  *Hooks
	srv    *remoting.Server
	client *remoting.Client // to name servers and to the leader

	// roleCh wakes the registration loop on a role change.
	roleCh chan struct{}

	// Producer and admin side (send.go, register.go, admin.go): the
	// registration bookkeeping, topic creation and put counters.
	prod *producerState
	// stats is RocketMQ's broker statistics (statsbook.go); it owns its
	// sampler's Start and Stop.
	stats *statsBook
	// bounds bounds each connection's send proposals (sendbound.go).
	bounds proposeBounds

	// The long-running parts, each with its own Start and Stop (parts.go;
	// doc.go lists their order). Consumer side: the client registry
	// (consumer.go), long polling (longpoll.go), the offset committer
	// (offsets.go), the orderly consumers' queue leases (locks.go).
	consumers *consumerManager
	pulls     *pullHolder
	offsets   *offsetCommitter
	locks     *lockTable
	// pop is the leader's POP bookkeeping (pop.go).
	pop *popService
	// Schedulers, active only on the writable leader: delayed delivery
	// (delay.go) and the transaction check-back (txncheck.go).
	delay    *delayScheduler
	txnCheck *leaderLoop

	// Transactions (transaction.go, txncheck.go): the leader's view of
	// the undecided ones.
	txn *txnState
	// txnAskers are the producers other front ends serve (txnask.go).
	txnAskers txnAskers

	// Timer messages (timer*.go): the index every node keeps and the
	// leader's scheduler; they own their Start/Stop.
	timers *timerService

	closed atomic.Bool
	// ctx, cancel and wg are the registration loop's (register.go): Close
	// ends it first, so that the node leaves the name servers while it
	// still serves the clients that are connected.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// acl is the access control when ACLEnable (acl.go, aclsync.go).
	acl aclGuard
	// local is every handler by request code, as installed (ServeLocal);
	// parts are the attached front ends (local.go).
	local map[int32]remoting.HandlerFunc
	// localOpen is every handler without its access check (ServeLocal of
	// an authenticated call, frontacl.go).
	localOpen map[int32]remoting.HandlerFunc
	parts     []Part
	// closeHook, if set, is called after each step of Close (tests arrange
	// requests between the steps with it).
	closeHook func(closeStep)
}

// closeStep names the points between the steps of Broker.Close.
type closeStep int

const (
	// closeUnregistered: the name servers have been told the node is
	// leaving; the server still serves connected clients.
	closeUnregistered closeStep = iota + 1
	// closeDrained: the server has stopped and run the requests it had
	// queued, the loops have stopped; the offsets are not flushed yet.
	closeDrained
)

// New builds a broker over an open raft group (a *dledger.Group). Start
// serves it.
func New(cfg Config, g Replica, hooks *Hooks) (*Broker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if g.Store() == nil {
		return nil, errors.New("broker: the group's message store cannot be read (not a MessageStore)")
	}
	b := &Broker{
		cfg:    cfg,
		log:    cfg.Logger.Named("broker").With("broker", cfg.BrokerName, "node", cfg.NodeID),
		group:  g,
		hooks:  hooks,
		obs:    cfg.Observer,
		roleCh: make(chan struct{}, 1),
	}
	if b.obs == nil {
		b.obs = nopObserver{}
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.client = remoting.NewClient(remoting.ClientConfig{Logger: b.log.Named("client"), TLS: cfg.TLSClient})
	b.srv = remoting.NewServer(remoting.ServerConfig{
		Addr:     cfg.Addr,
		Listener: cfg.Listener,
		TLS:      cfg.TLSServer,
		Limits:   cfg.Limits,
		// Where the ACL is on, a request that does not even carry a
		// signature is refused a large body before it is read.
		LargeBodyCodes: LargeBodyCodes,
		LargeBodyField: largeBodyField(cfg),
		ListCodes:      listCodes(cfg),
		Logger:         b.log.Named("remoting"),
		Pools:          pools,
		OnConnClose:    b.onConnClose,
	})
	timers, err := newTimerService(timerConfig{Dir: timerDir(cfg, g.Store()), MaxDelay: cfg.TimerMaxDelay,
		Clock: cfg.Clock, Logger: b.log.Named("timer")}, timerReplica{g})
	if err != nil {
		return nil, err
	}
	b.timers = timers
	b.initConsumerSide()
	b.pop = newPopService(cfg.PopMaxInflight, g.ProposeMetadata)
	b.pop.revive = b.newPopReviver(cfg.PopReviveInterval)
	b.locks = newLockTable(cfg.Clock, LockLease)
	b.delay = newDelayScheduler(g, b.log, cfg.DelayLevels, cfg.Clock)
	b.txn = &txnState{}
	b.txnCheck = b.newTxnChecker()
	b.prod = newProducerState(cfg.Clock())
	b.stats = newStatsBook(cfg.Clock)
	if err := b.loadACL(); err != nil {
		return nil, err
	}
	if err := b.installHandlers(); err != nil {
		return nil, err
	}
	return b, nil
}

// Start serves clients and starts registering with the name servers.
func (b *Broker) Start() error {
	if err := b.srv.Start(); err != nil {
		return err
	}
	b.hooks.b.Store(b)
	b.consumers.Start()
	b.pulls.Start()
	b.offsets.Start()
	b.delay.Start()
	b.timers.start()
	b.txnCheck.Start()
	b.pop.revive.Start()
	b.locks.Start(lockSweepInterval)
	b.stats.Start()
	b.wg.Add(1)
	go b.registerLoop()
	if b.cfg.ACLEnable {
		b.wg.Add(1)
		go b.aclReloadLoop()
	}
	if err := b.startParts(); err != nil {
		return err
	}
	b.log.Info("broker serving", "addr", b.srv.Addr().String(), "role", b.group.Role().Role)
	return nil
}

// Addr is the address the remoting server listens on.
func (b *Broker) Addr() net.Addr { return b.srv.Addr() }

// Close shuts the broker down in an order that loses nothing it has
// accepted:
//
//  1. the registration loop stops and the node unregisters from every
//     name server: clients' next route lookup no longer lists it, while
//     it still answers the clients already connected;
//  2. long polling ends: held pulls are answered PULL_NOT_FOUND while
//     their connections are open (later pulls are answered at once);
//  3. the remoting server stops accepting, closes its connections and runs
//     the requests already queued (remoting.Server.Close; their answers
//     are not delivered, their effects happen);
//  4. the loops stop (the delay scheduler, the transaction check-back,
//     the POP revive sweep, the consumer manager, the timer index and scheduler, whose wheel
//     closes with a checkpoint, the statistics' sampler);
//  5. last, the offset committer flushes every commit accepted in 1–3
//     (proposed through raft on the leader, forwarded on a follower) and
//     stops; then the client to name servers and leader closes.
//
// It does not close the raft group, which must stay open until Close
// returns (the last offsets are proposed through it).
func (b *Broker) Close(ctx context.Context) error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.cancel()
	b.wg.Wait()
	b.unregisterAll(ctx)
	partsErr := b.stopParts(ctx)
	b.closeStepDone(closeUnregistered)

	b.pulls.Stop()
	srvErr := b.srv.Close(ctx)
	if srvErr != nil {
		b.log.Warn("the server did not drain in time; requests still running may commit offsets after the last flush", "error", srvErr)
	}
	b.hooks.b.Store(nil)
	b.delay.Stop()
	timerErr := b.timers.stop()
	b.txnCheck.Stop()
	b.pop.revive.Stop()
	b.consumers.Stop()
	b.locks.Stop()
	b.stats.Stop()
	b.closeStepDone(closeDrained)

	offErr := b.offsets.Stop(ctx)
	return errors.Join(partsErr, srvErr, offErr, timerErr, b.client.Close())
}

func (b *Broker) closeStepDone(s closeStep) {
	if b.closeHook != nil {
		b.closeHook(s)
	}
}

// brokerID is this node's RocketMQ brokerId: 0 while it leads (RocketMQ
// clients send to brokerId 0), otherwise its own follower id (followerID).
// The others keep theirs when leadership moves: the leader's own slot is
// just empty while it leads.
func (b *Broker) brokerID(role dledger.RoleEvent) int64 {
	if role.Role == dledger.RoleLeader {
		return 0
	}
	return followerID(b.cfg.NodeID, b.cfg.Peers)
}

// followerID is the broker id node registers under while it does not lead:
// its own for life, whoever leads. As RocketMQ derives it in DLedger mode,
// it is the number a node id ends in plus one (n0 → 1, n2 → 3, n10 → 11),
// so it depends on nothing but the node's own id and survives membership
// changes. When some node id of the group does not end in a number (or two
// end in the same one) it is 1 + the node's position among the sorted node
// ids, which is stable as long as the group's membership is.
func followerID(node string, peers map[string]string) int64 {
	nums := map[int64]bool{}
	numbered := true
	for id := range peers {
		n, ok := nodeNumber(id)
		if !ok || nums[n] {
			numbered = false
			break
		}
		nums[n] = true
	}
	if n, ok := nodeNumber(node); ok && numbered {
		return n + 1
	}
	ids := make([]string, 0, len(peers))
	for id := range peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return int64(sort.SearchStrings(ids, node)) + 1
}

// nodeNumber returns the decimal number a node id ends in ("n12" → 12).
func nodeNumber(id string) (int64, bool) {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	if i == len(id) || len(id)-i > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(id[i:], 10, 64)
	return n, err == nil
}

// leaderAddr is the client-facing address of the group's leader, or "".
func (b *Broker) leaderAddr() string {
	return b.cfg.Peers[b.group.Role().LeaderID]
}

func (b *Broker) onRoleChange(dledger.RoleEvent) {
	select {
	case b.roleCh <- struct{}{}:
	default:
	}
}
