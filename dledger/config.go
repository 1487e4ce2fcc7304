package dledger

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/store"
)

// Timing is a failure-detection profile.
type Timing struct {
	Name string
	// HeartbeatTimeout: a follower without leader contact this long starts
	// an election. ElectionTimeout: a candidate's timer. LeaderLease: a
	// leader that cannot reach a quorum this long steps down.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	LeaderLease      time.Duration
	// CommitTimeout bounds how long followers wait to learn a commit index
	// when the group is idle. Raft sends each follower an AppendEntries
	// this often whatever the load: 50 ms in both production profiles
	// (10 ms made the lan profile's idle nodes spend twice the CPU, and
	// cost about 6 % of CPU per message under load).
	CommitTimeout time.Duration
}

// The timing profiles. TimingDefault suits any network; TimingLAN a data
// centre LAN; TimingTest loopback tests.
var (
	TimingDefault = Timing{Name: "default", HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLease: 500 * time.Millisecond, CommitTimeout: 50 * time.Millisecond}
	TimingLAN = Timing{Name: "lan", HeartbeatTimeout: 400 * time.Millisecond, ElectionTimeout: 400 * time.Millisecond,
		LeaderLease: 300 * time.Millisecond, CommitTimeout: 50 * time.Millisecond}
	TimingTest = Timing{Name: "test", HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLease: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond}
)

// TimingByName returns a profile by name ("default", "lan", "test").
func TimingByName(name string) (Timing, error) {
	for _, t := range []Timing{TimingDefault, TimingLAN, TimingTest} {
		if t.Name == name {
			return t, nil
		}
	}
	return Timing{}, fmt.Errorf("%w: unknown timing profile %q (default, lan)", ErrBadConfig, name)
}

// Peer is one member of the group.
type Peer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// Config configures one node of a broker group.
type Config struct {
	// Group is the broker group's name (RocketMQ brokerName).
	Group string
	// NodeID is this node's stable id ("n0"); never an address.
	NodeID string
	// Peers are the group's initial voters, this node included. They are
	// used only to bootstrap a group that has no state yet.
	Peers []Peer
	// BindAddr is where the raft transport listens; AdvertiseAddr what the
	// peers dial (default BindAddr). Peers' and the advertise address may
	// name hosts: they are resolved at each connection, never once for
	// good (dial.go).
	BindAddr      string
	AdvertiseAddr string
	// Resolver resolves the host names of peers' addresses at each
	// connection to them. Default net.DefaultResolver; ignored with
	// StreamLayer.
	Resolver Resolver
	// DataDir holds raft/ (log, snapshots) and store/.
	DataDir string
	// Timing is the failure-detection profile.
	Timing Timing
	// StoreHost is the group's identity stamped as every message's store
	// host (the client-facing broker address).
	StoreHost netip.AddrPort
	// Store configures the message store; its Dir is set to DataDir/store.
	Store store.Config
	// FS is the file system of the group's own files: the snapshot store
	// (its directories, pinned links, staged segments and manifests),
	// raft's stable state, the boot record, the drain and join markers.
	// Default the OS's (vfs.Default); the message store takes it too when
	// Store.FS is not set. Raft's log in two-log mode (raft-wal) does not
	// go through it.
	FS vfs.FS
	// Stores opens the message store (required): the group replicates
	// into what it returns (storage.go). dledger/messagestore.Opener
	// opens the product's store.
	Stores StoreOpener
	// MaxBatchBytes and MaxBatchMessages bound one raft entry of
	// coalesced proposals. Defaults 1 MiB and 1024.
	MaxBatchBytes    int
	MaxBatchMessages int
	// QueueDepth bounds waiting proposals (default 4096); beyond it Propose
	// answers ErrBusy. MaxInFlight bounds raft entries proposed and not yet
	// answered (default 1): the next entry is closed only when one is
	// answered, so proposals queue up meanwhile and entries grow under
	// load. Every entry costs an fsync on each node (~0.1 ms of CPU each on
	// a virtual disk) and a network round whatever its size, so few large
	// entries beat many small ones: 1 makes entries largest, and under load
	// gives both the most messages per second and the least CPU per message
	// (4 producers × 64 in flight, alternating A/B: +16 % msgs/s, -21 % CPU
	// per message against 2); 2 lets the leader write one entry while the
	// followers write the other, which helps only when few sends are in
	// flight (1 producer × 16: up to 17 % more msgs/s than 1); more than 2
	// mostly makes entries smaller.
	QueueDepth  int
	MaxInFlight int
	// Faults, if set, breaks the write path on purpose (faults.go): a
	// jepsenbroken build only. It reaches the store too.
	Faults Faults
	// ApplyTimeout bounds one proposal. Default 10 s.
	ApplyTimeout time.Duration
	// SnapshotInterval, SnapshotThreshold and TrailingLogs are raft's.
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotBytes also takes a snapshot once this many bytes of entries
	// were appended to the raft log since the last one (snapshots.go).
	// Default 32 MiB; negative: only raft's own triggers. A start reads
	// every entry after the last snapshot (raft looks for membership
	// changes among them): about 7 ms per MiB, so this bounds that part
	// of a restart to a quarter of a second.
	SnapshotBytes int64
	// OneLog makes the CommitLog the raft log: each message is written and
	// fsynced once per node (onelog.go, store/entries.go). A new node's
	// data is created so; a node of a group in the two-log layout says
	// that it wants one log, and once every member does, the leader
	// switches the group and each node converts its data in place
	// (convert.go). A node whose data is in the one-log layout runs it
	// whatever this says.
	OneLog bool
	// RaftSegmentSize is the size of the raft log's segment files (0:
	// raft-wal's default, 64 MiB). Entries compacted after a snapshot stay
	// readable until their whole segment is deleted: a lagging follower
	// catches up from the log while that segment lives and through a
	// snapshot afterwards.
	RaftSegmentSize int
	// PreferredLeader, if set, is the node leadership moves back to once it
	// is up and caught up.
	PreferredLeader string
	// StreamLayer, if set, carries raft traffic instead of a plain TCP
	// listener on BindAddr (tests use a fault-injecting one).
	StreamLayer raft.StreamLayer
	// TLS, if set, runs the raft port (raft traffic and node info) over
	// mutual TLS: Server must require and verify client certificates
	// (tlsconf's ServerConfig(true)), Client presents this node's. A peer
	// without a certificate of the cluster's CA can neither dial nor be
	// dialled. Ignored with StreamLayer.
	TLS *RaftTLS
	// OnRoleChange is called on every role change, from the group's role
	// goroutine, after the change is in effect. It must not block.
	OnRoleChange func(RoleEvent)
	// LogObserver, if set, hears every raft log append (for metrics).
	LogObserver LogObserver
	// DelayLevels is the broker's delay level table (messageDelayLevel) in
	// its canonical text, recorded in the group's settings by the first
	// leader and compared on every node; "" leaves it out. A node whose
	// table differs stops once and adopts the group's when it restarts
	// (Group.Settings).
	DelayLevels string
	// VerifyInterval is how often the leader proposes a replica checkpoint
	// (a checksum of the CommitLog bytes written since the previous one,
	// which every replica compares with its own). Default 5 s; negative
	// disables the verifier.
	VerifyInterval time.Duration
	// VerifyFiles makes every checkpoint's checksum read its CommitLog
	// range back from the files, which also sees a byte changed on disk
	// after it was written, at the cost of reading every byte written
	// once more on every node. Default: the sums kept as the bytes are
	// written (commitlog.Log.Checksum).
	VerifyFiles bool
	// MaxFormatVersion, if set, makes this node claim and apply at most
	// this format version, as an older binary would (rolling-upgrade
	// tests). 0: what this binary supports.
	MaxFormatVersion uint32
	// Clock stamps store times on the leader. Default time.Now.
	Clock func() time.Time
	// BootID names the machine's current boot (boot.go): a node whose log
	// was not flushed when it stopped abstains from votes when it differs.
	// Default: the kernel's boot id.
	BootID func() string
	Logger hclog.Logger

	// convertStop, set by tests, stops a conversion to one log after the
	// step it returns true for (a crash there; convert.go).
	convertStop func(convertStep) bool
	// beforeObserve, set by tests, runs between raft's start and the
	// registration of the role observer: what raft does in that window
	// raises no observation.
	beforeObserve func(nodeID string, r *raft.Raft)
}

func (c *Config) setDefaults() {
	if c.Timing.HeartbeatTimeout == 0 {
		c.Timing = TimingDefault
	}
	if c.AdvertiseAddr == "" {
		c.AdvertiseAddr = c.BindAddr
	}
	if c.Store.Dir == "" && c.Store.SegmentSize == 0 {
		c.Store = store.DefaultConfig("")
	}
	if c.MaxBatchBytes == 0 {
		// One entry must hold the largest message the store accepts.
		c.MaxBatchBytes = max(1<<20, c.Store.MaxMessageSize+256<<10)
	}
	if c.MaxBatchMessages == 0 {
		c.MaxBatchMessages = 1024
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = 4096
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 1
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 10 * time.Second
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 120 * time.Second
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = 32 << 20
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.BootID == nil {
		c.BootID = machineBootID
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.VerifyInterval == 0 {
		c.VerifyInterval = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Store.Dir == "" && c.Store.SegmentSize == 0 {
		c.Store = store.DefaultConfig("")
	}
	c.FS = vfs.Or(c.FS)
	if c.Store.FS == nil {
		c.Store.FS = c.FS
	}
}

// RaftTLS is the TLS of the raft port: a server side for the connections
// it accepts and a client side for those it dials.
type RaftTLS struct {
	Server, Client *tls.Config
}

// Validate checks the configuration (after defaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+f, append([]any{ErrBadConfig}, a...)...))
	}
	if c.Group == "" || c.NodeID == "" {
		bad("Group and NodeID are required")
	}
	if c.DataDir == "" {
		bad("DataDir is required")
	}
	if c.Stores == nil {
		bad("Stores is required (the message store's opener)")
	}
	if c.TLS != nil && c.StreamLayer == nil && (c.TLS.Server == nil || c.TLS.Client == nil) {
		bad("TLS needs both a server and a client config")
	}
	if c.StreamLayer == nil && c.BindAddr == "" {
		bad("BindAddr is required")
	}
	if !c.StoreHost.IsValid() {
		bad("StoreHost is required (the client-facing address)")
	}
	seen := map[string]bool{}
	for _, p := range c.Peers {
		if p.ID == "" || p.Addr == "" || seen[p.ID] {
			bad("peer %+v: ids must be unique and addresses set", p)
		}
		seen[p.ID] = true
	}
	if len(c.Peers) > 0 && !seen[c.NodeID] {
		bad("Peers must include this node (%s)", c.NodeID)
	}
	t := c.Timing
	if t.HeartbeatTimeout < 5*time.Millisecond || t.ElectionTimeout < t.HeartbeatTimeout || t.LeaderLease > t.HeartbeatTimeout {
		bad("timing %+v: need ElectionTimeout >= HeartbeatTimeout >= LeaderLease", t)
	}
	if c.RaftSegmentSize != 0 && c.RaftSegmentSize < 64<<10 {
		bad("RaftSegmentSize %d < 64 KiB", c.RaftSegmentSize)
	}
	if c.MaxFormatVersion != 0 && (c.MaxFormatVersion < formatVersionMin || c.MaxFormatVersion > formatVersionMax) {
		bad("MaxFormatVersion %d: this binary supports %d to %d", c.MaxFormatVersion, formatVersionMin, formatVersionMax)
	}
	if c.MaxBatchBytes < 64<<10 || c.MaxBatchMessages < 1 || c.QueueDepth < 1 || c.MaxInFlight < 1 {
		bad("batch and queue bounds must be positive (MaxBatchBytes >= 64 KiB)")
	}
	return errors.Join(errs...)
}
