package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

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
	// clients dial (default Addr). It must equal the raft group's
	// StoreHost, which offset message ids name.
	Addr          string
	AdvertiseAddr string
	// NamesrvAddrs are the name servers this node registers with.
	NamesrvAddrs []string
	// RegisterInterval is the heartbeat to the name servers. Default 30 s.
	RegisterInterval time.Duration
	// ClusterSecret, when set, signs every registration with the name
	// servers (routing: REGISTER_BROKER, UNREGISTER_BROKER); name servers
	// configured with a secret refuse unsigned ones.
	ClusterSecret string
	// AutoCreateTopic creates unknown topics from the TBW102 template on
	// first send (RocketMQ autoCreateTopicEnable). Default true.
	AutoCreateTopic bool
	// DefaultTopicQueueNums is TBW102's queue count. Default 8.
	DefaultTopicQueueNums int32
	// AutoCreateSubscriptionGroup (RocketMQ autoCreateSubscriptionGroup).
	// Default true.
	AutoCreateSubscriptionGroup bool
	// Listener, if set, is the bound client socket to serve (Addr must be
	// its address); otherwise the broker listens on Addr.
	Listener net.Listener
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
}

func (c *Config) setDefaults() {
	if c.ClusterName == "" {
		c.ClusterName = "DefaultCluster"
	}
	if c.AdvertiseAddr == "" {
		c.AdvertiseAddr = c.Addr
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
	if c.Clock == nil {
		c.Clock = time.Now
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
	if _, err := netip.ParseAddrPort(c.AdvertiseAddr); err != nil {
		errs = append(errs, fmt.Errorf("broker: AdvertiseAddr %q must be ip:port: %v", c.AdvertiseAddr, err))
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
		b.onDispatch(topic, queueID, maxOffset)
	}
}

// Broker serves the RocketMQ protocol for one node of a broker group.
type Broker struct {
	cfg    Config
	log    hclog.Logger
	group  *dledger.Group
	hooks  *Hooks
	srv    *remoting.Server
	client *remoting.Client // to name servers and to the leader

	// roleCh wakes the registration loop on a role change.
	roleCh chan struct{}

	// Producer and admin side (send.go, register.go, admin.go): the
	// registration bookkeeping, topic creation and put counters.
	prod *producerState

	// Consumer side (consumer.go, pull.go, offsets.go).
	consumers *consumerManager
	pulls     *pullHolder
	offsets   *offsetCommitter
	locks     *lockTable // orderly consumers' queue leases (locks.go)

	closed atomic.Bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a broker over an open raft group. Start serves it.
func New(cfg Config, g *dledger.Group, hooks *Hooks) (*Broker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:    cfg,
		log:    cfg.Logger.Named("broker").With("broker", cfg.BrokerName, "node", cfg.NodeID),
		group:  g,
		hooks:  hooks,
		roleCh: make(chan struct{}, 1),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.client = remoting.NewClient(remoting.ClientConfig{Logger: b.log.Named("client")})
	b.srv = remoting.NewServer(remoting.ServerConfig{
		Addr:     cfg.Addr,
		Listener: cfg.Listener,
		Logger:   b.log.Named("remoting"),
		Pools: map[string]remoting.PoolConfig{
			// A send worker waits for its raft commit, so the pool is wide:
			// its width bounds the proposals the batcher can coalesce.
			poolSend:      {Workers: 256, QueueSize: 8192},
			poolPull:      {Workers: 16, QueueSize: 4096},
			poolAdmin:     {Workers: 4, QueueSize: 256},
			poolHeartbeat: {Workers: 2, QueueSize: 1024},
		},
		OnConnClose: b.onConnClose,
	})
	b.initConsumerSide()
	b.registerProducerProcessors()
	b.registerConsumerProcessors()
	b.registerAdminProcessors()
	b.registerAdminStatsProcessors()
	b.registerRaftAdmin()
	b.registerLockProcessors()
	b.registerGroupProcessors()
	b.registerSendBackProcessor()
	return b, nil
}

// Worker pools: a flood of one kind of request cannot starve the others.
const (
	poolSend      = "send"
	poolPull      = "pull"
	poolAdmin     = "admin"
	poolHeartbeat = "heartbeat"
)

// Start serves clients and starts registering with the name servers.
func (b *Broker) Start() error {
	if err := b.srv.Start(); err != nil {
		return err
	}
	b.hooks.b.Store(b)
	b.startConsumerSide()
	b.wg.Add(2)
	go b.registerLoop()
	go b.scheduleLoop()
	b.log.Info("broker serving", "addr", b.srv.Addr().String(), "role", b.group.Role().Role)
	return nil
}

// Addr is the address the remoting server listens on.
func (b *Broker) Addr() net.Addr { return b.srv.Addr() }

// Close unregisters from the name servers, stops serving and waits for the
// broker's goroutines. It does not close the raft group.
func (b *Broker) Close(ctx context.Context) error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.hooks.b.Store(nil)
	b.cancel()
	b.wg.Wait()
	b.stopConsumerSide()
	b.unregisterAll(ctx)
	err := b.srv.Close(ctx)
	return errors.Join(err, b.client.Close())
}

// brokerID is this node's RocketMQ brokerId: 0 while it leads, otherwise 1
// + its position among the sorted node ids (stable across failovers).
func (b *Broker) brokerID(role dledger.RoleEvent) int64 {
	if role.Role == dledger.RoleLeader {
		return 0
	}
	ids := make([]string, 0, len(b.cfg.Peers))
	for id := range b.cfg.Peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return int64(sort.SearchStrings(ids, b.cfg.NodeID)) + 1
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
