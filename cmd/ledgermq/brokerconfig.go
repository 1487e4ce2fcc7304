package main

// The configuration of one broker node (`ledgermq broker`).
//
// Sources, highest precedence first: command-line flags, LEDGERMQ_*
// environment variables, the --config file, defaults. Every key has one
// canonical name (table below); the file may spell it with its RocketMQ
// broker.conf name instead, matched case-insensitively. The flag of a key
// is its name with "." and "_" as "-" (raft.node_id: --raft-node-id); its
// environment variable is LEDGERMQ_ and the name upper-cased with "." as
// "_" (LEDGERMQ_RAFT_NODE_ID). namesrv_addr also reads RocketMQ's
// NAMESRV_ADDR when LEDGERMQ_NAMESRV_ADDR is unset.
//
// Rejected, with every problem listed at once: a file key that is neither a
// canonical name nor an alias, a key given twice in one file (by two of
// its names), and a value that does not parse. A few RocketMQ keys that
// have no meaning here (brokerId, brokerRole, storePathCommitLog, thread
// pool sizes, ...) are accepted and ignored with a warning, so a DLedger
// broker.conf loads as it is. A LEDGERMQ_* variable that names no key is
// ignored with a warning too, not refused: the environment is shared with
// scripts and tools that may use the prefix for their own settings, and a
// node must not fail to start because of one (a file is the node's own).
//
// Value syntax: booleans true/false; sizes in bytes; durations as Go
// durations ("500ms", "72h") or a bare number in the key's RocketMQ unit;
// lists ";"- or ","-separated (or a YAML/TOML list); peers as DLedger's
// "n0-127.0.0.1:40911;n1-127.0.0.1:40912".

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/canary"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// Errors of configuration loading, compared with errors.Is.
var (
	errUnknownKey   = errors.New("config: unknown key")
	errDuplicateKey = errors.New("config: key set twice")
	errBadValue     = errors.New("config: bad value")
	errConfigSyntax = errors.New("config: syntax error")
	errConfigFile   = errors.New("config: cannot read file")
)

// envPrefix prefixes every environment variable of a key.
const envPrefix = "LEDGERMQ_"

// keySpec is one configuration key.
type keySpec struct {
	key     string   // canonical name
	aliases []string // RocketMQ broker.conf names
	def     string   // default, as text ("" = none or derived)
	isBool  bool
	usage   string
}

// brokerKeys is every key of `ledgermq broker`, in display order.
var brokerKeys = []keySpec{
	{key: "cluster_name", aliases: []string{"brokerClusterName"}, def: "DefaultCluster", usage: "cluster name in routes"},
	{key: "broker_name", aliases: []string{"brokerName"}, def: "broker-a", usage: "broker group name (the raft group)"},
	{key: "broker_ip", aliases: []string{"brokerIP1"}, def: "127.0.0.1", usage: "IP clients dial; with listen_port the node's client address and the store host offset message ids name"},
	{key: "advertise_host", def: "", usage: "host name clients dial instead of broker_ip (one that stays the node's across restarts: a Kubernetes pod's DNS name); broker_ip then names only the store host in offset message ids"},
	{key: "listen_port", aliases: []string{"listenPort"}, def: "10911", usage: "client port"},
	{key: "listen_addr", def: "", usage: "address to listen on (default broker_ip:listen_port; e.g. 0.0.0.0:10911)"},
	{key: "http_addr", def: "", usage: "address of the operator HTTP endpoints /livez /readyz /status /metrics (empty: off; port 0 picks one, logged)"},
	{key: "grpc_listen", def: "", usage: "address of the RocketMQ 5 gRPC port (apache.rocketmq.v2 producers; empty: off; e.g. 127.0.0.1:8081)"},
	{key: "grpc_addrs", def: "", usage: "every node's gRPC address as id-host:port;...: routes send RocketMQ 5 clients to the leader's (default: this node's, which forwards to the leader)"},
	{key: "http_pprof", def: "false", isBool: true, usage: "also serve Go's runtime profiles on http_addr under /debug/pprof/ (CPU, heap, goroutines, trace; off: they show internals)"},
	{key: "namesrv_addr", aliases: []string{"namesrvAddr"}, def: "127.0.0.1:9876", usage: "name servers, ';'-separated"},
	{key: "data_dir", aliases: []string{"storePathRootDir"}, def: "data", usage: "node data directory (raft/ and store/)"},
	{key: "auto_create_topic", aliases: []string{"autoCreateTopicEnable"}, def: "true", isBool: true, usage: "create unknown topics on first send"},
	{key: "trace_topic_enable", aliases: []string{"traceTopicEnable"}, def: "false", isBool: true, usage: "create the trace topic (trace_topic_name) that RocketMQ clients with tracing on write to"},
	{key: "trace_topic_name", aliases: []string{"msgTraceTopicName"}, def: "RMQ_SYS_TRACE_TOPIC", usage: "the trace topic created when trace_topic_enable is set"},
	{key: "auto_create_subscription_group", aliases: []string{"autoCreateSubscriptionGroup"}, def: "true", isBool: true, usage: "create unknown consumer groups"},
	{key: "enable_property_filter", aliases: []string{"enablePropertyFilter"}, def: "true", isBool: true, usage: "serve SQL92 subscriptions (RocketMQ's default is false)"},
	{key: "message_delay_level", aliases: []string{"messageDelayLevel"}, def: broker.DefaultDelayLevels, usage: "delays of levels 1, 2, … (s, m, h, d units)"},
	{key: "timer_max_delay", aliases: []string{"timerMaxDelaySec"}, def: "", usage: "longest delay a timer message (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS) may ask for; longer ones are refused; at most store.file_reserved_time (default: 72h, or store.file_reserved_time if shorter; bare number: seconds)"},
	{key: "default_topic_queue_nums", aliases: []string{"defaultTopicQueueNums"}, def: "8", usage: "queues of auto-created topics"},
	{key: "max_message_size", aliases: []string{"maxMessageSize"}, def: "4194304", usage: "largest message body in bytes"},
	{key: "gc_percent", def: "100", usage: "the Go collector's GOGC for this process: heap growth, in percent of the live heap, between collections (higher: fewer collections, more memory, and above 100 slower sends here: each new allocation lands on memory gone cold; -1 off); the GOGC environment variable, when set, wins; GOMEMLIMIT caps the heap either way"},
	{key: "register_interval", aliases: []string{"registerNameServerPeriod"}, def: "30s", usage: "name-server heartbeat (bare number: ms)"},
	{key: "remoting.read_budget", def: "268435456", usage: "bytes of requests read but not yet handled; beyond it clients are not read until handlers finish"},
	{key: "remoting.max_conns", def: "4096", usage: "client connections; more are closed at accept (-1: no limit)"},
	{key: "remoting.max_inflight_per_conn", def: "1024", usage: "requests of one connection queued or being handled; more get SYSTEM_BUSY (-1: no limit)"},
	{key: "cluster_secret", def: "", usage: "shared secret that signs registrations with the name servers (≥ 16 bytes; prefer the file or LEDGERMQ_CLUSTER_SECRET to the flag)"},
	{key: "acl_enable", aliases: []string{"aclEnable"}, def: "false", isBool: true, usage: "check every client request against acl_file (RocketMQ's plain ACL); a group of several nodes also needs cluster_secret"},
	{key: "acl_file", def: "", usage: "RocketMQ plain_acl.yml: accounts, permissions, white lists; a change is proposed to the group, whose replicated rules every node enforces"},
	{key: "namesrv.access_key", def: "", usage: "account of the name servers' ACL that signs this node's registrations (with namesrv.secret_key; needed when the name servers run --acl-enable)"},
	{key: "namesrv.secret_key", def: "", usage: "secret key of namesrv.access_key (prefer the file or LEDGERMQ_NAMESRV_SECRET_KEY to the flag)"},
	{key: "tls.enable", def: "false", isBool: true, usage: "TLS on the client port, mutual TLS on raft links, TLS to name servers and the leader (needs the three tls files)"},
	{key: "tls.cert_file", def: "", usage: "PEM certificate of this node (server and client use; re-read when it changes)"},
	{key: "tls.key_file", def: "", usage: "PEM private key of tls.cert_file"},
	{key: "tls.ca_file", def: "", usage: "PEM CA certificates that peers' certificates are verified against"},
	{key: "log_level", def: "info", usage: "trace, debug, info, warn or error"},
	{key: "log_format", def: "text", usage: "text or json (one JSON object a line)"},
	{key: "log_json", def: "false", isBool: true, usage: "log as JSON (the same as log_format=json)"},
	{key: "store.flush_disk_type", aliases: []string{"flushDiskType"}, def: "ASYNC_FLUSH", usage: "ASYNC_FLUSH or SYNC_FLUSH"},
	{key: "store.flush_interval", aliases: []string{"flushIntervalCommitLog"}, def: "500ms", usage: "async flush period (bare number: ms)"},
	{key: "store.segment_size", aliases: []string{"mappedFileSizeCommitLog", "mapedFileSizeCommitLog"}, def: "1073741824", usage: "commitlog segment size in bytes"},
	{key: "store.cache_window", def: "268435456", usage: "bytes of the commitlog's flushed tail kept in memory; older bytes leave the page cache after each flush and are read from disk (0: the kernel decides)"},
	{key: "store.preallocate", def: "false", usage: "reserve a new commitlog segment's disk blocks at creation (otherwise segments are sparse and grow as written)"},
	{key: "dedup.window", def: "2m", usage: "how long a sent message's UNIQ_KEY is remembered: a retried send within it is answered with the first store, not stored again (bare number: seconds; 0: off; a topic's attribute dedup.window shortens it)"},
	{key: "dedup.max_entries", def: "200000", usage: "most UNIQ_KEYs the duplicate window holds (about 130 bytes each; past it the oldest leave first)"},
	{key: "store.sync_report", def: "false", isBool: true, usage: "test aid of the chaos harness's power-loss nemesis: record how much of each file every fsync made durable in DATA_DIR/SYNC_REPORT"},
	{key: "store.file_reserved_time", aliases: []string{"fileReservedTime"}, def: "72h", usage: "keep commitlog segments this long (bare number: hours)"},
	{key: "store.delete_when", aliases: []string{"deleteWhen"}, def: "04", usage: "hours of day expired segments are deleted, e.g. 03;04"},
	{key: "store.disk_max_used_space_ratio", aliases: []string{"diskMaxUsedSpaceRatio"}, def: "75", usage: "percent of disk use above which old segments go"},
	{key: "raft.enabled", aliases: []string{"enableDLegerCommitLog"}, def: "true", isBool: true, usage: "must be true: the raft group is the only replication"},
	{key: "raft.group", aliases: []string{"dLegerGroup"}, def: "", usage: "raft group; must equal broker_name when set"},
	{key: "raft.node_id", aliases: []string{"dLegerSelfId"}, def: "n0", usage: "this node's id in raft.peers"},
	{key: "raft.peers", aliases: []string{"dLegerPeers"}, def: "", usage: "voters as id-host:port;... (default: this node alone at raft.bind)"},
	{key: "raft.bind", def: "", usage: "raft listen address (default: this node's raft.peers address, else 127.0.0.1:40911)"},
	{key: "raft.client_addrs", def: "", usage: "every node's client address as id-host:port;... (this node's defaults to broker_ip:listen_port)"},
	{key: "raft.timing", def: "default", usage: "failure-detection profile: default or lan"},
	{key: "raft.preferred_leader", aliases: []string{"preferredLeaderId"}, def: "", usage: "node leadership returns to when it is caught up"},
	{key: "raft.snapshot_interval", def: "120s", usage: "how often raft checks whether to snapshot (bare number: ms)"},
	{key: "raft.snapshot_threshold", def: "8192", usage: "raft entries since the last snapshot that trigger one"},
	{key: "raft.snapshot_bytes", def: "33554432", usage: "raft log bytes since the last snapshot that trigger one (keeps restarts short when entries are large batches)"},
	{key: "raft.trailing_logs", def: "10240", usage: "raft entries kept after a snapshot for followers to catch up from"},
	{key: "raft.max_inflight_entries", def: "1", usage: "raft entries of sends the leader has proposed and not yet answered: 1 makes entries largest (least CPU per message, most messages/s under load); 2 pipelines them (lower latency with few sends in flight)"},
	{key: "raft.segment_size", def: "67108864", usage: "raft log segment file size in bytes (compacted entries go a whole segment at a time)"},
	{key: "raft.log", def: "commitlog", usage: "where raft's log lives: commitlog (the CommitLog is the raft log: each message written once) or wal (a log beside the CommitLog). A node without data takes its group's layout from the members that hold data, and a new group this setting (the same on every member); a group in the wal layout switches in place, each node converting its data at one restart, once every member is configured commitlog (so at an upgrade from a release that wrote wal); a node's data, once in the commitlog layout, stays so"},
}

// ignoredKeys are RocketMQ keys accepted for compatibility and ignored.
var ignoredKeys = map[string]string{
	"brokerid":                  "broker ids follow the raft role",
	"brokerrole":                "roles follow the raft role",
	"storepathcommitlog":        "the commitlog lives in data_dir/store/commitlog",
	"sendmessagethreadpoolnums": "worker pools are fixed",
	"pullmessagethreadpoolnums": "worker pools are fixed",
	"halistenport":              "there is no master/slave replication",
	"brokerip2":                 "there is no master/slave replication",
}

// bareUnit is the unit of a bare number for each duration key.
var bareUnit = map[string]time.Duration{
	"register_interval":        time.Millisecond,
	"store.flush_interval":     time.Millisecond,
	"store.file_reserved_time": time.Hour,
	"timer_max_delay":          time.Second,
	"dedup.window":             time.Second,
	"raft.snapshot_interval":   time.Millisecond,
}

// flagName is the command-line flag of a key.
func flagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

// envName is the environment variable of a key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// addBrokerFlags registers a flag for every key, and --config.
func addBrokerFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "config file (.properties/.conf, .yaml/.yml, .toml or .json by extension)")
	for _, k := range brokerKeys {
		if k.isBool {
			def, _ := strconv.ParseBool(k.def)
			fs.Bool(flagName(k.key), def, k.usage)
			continue
		}
		fs.String(flagName(k.key), k.def, k.usage)
	}
}

// setting is one key's effective value and where it came from.
type setting struct {
	Key, Value, Source string
}

// nodeConfig is the resolved configuration of one broker node.
type nodeConfig struct {
	ClusterName, BrokerName string
	ClientAddr              string // advertised: advertise_host or broker_ip, and listen_port
	// StoreHost is broker_ip:listen_port, the address offset message ids
	// name (an id holds an IP, so a host name cannot be one).
	StoreHost             netip.AddrPort
	ListenAddr            string
	HTTPAddr              string
	GRPCListen            string            // grpc_listen ("" off)
	GRPCAddrs             map[string]string // grpc_addrs, this node's included when on
	HTTPProfiling         bool
	NamesrvAddrs          []string
	DataDir               string
	AutoCreateTopic       bool
	TraceTopic            string // trace_topic_name when trace_topic_enable, else ""
	AutoCreateSubGroup    bool
	PropertyFilter        bool
	DelayLevels           []time.Duration
	TimerMaxDelay         time.Duration
	DefaultTopicQueueNums int32
	MaxMessageSize        int
	Limits                remoting.Limits // remoting.read_budget, max_conns, max_inflight_per_conn
	RegisterInterval      time.Duration
	ClusterSecret         string
	ACLEnable             bool   // acl_enable
	ACLFile               string // acl_file
	// NamesrvCredentials sign registrations (namesrv.access_key, secret_key).
	NamesrvCredentials auth.Credentials
	// TLS is the node's certificate material when tls.enable is set.
	TLS      *tlsconf.Source
	LogLevel string
	LogJSON  bool

	FlushMode     store.FlushMode
	FlushInterval time.Duration
	SegmentSize   int64
	Preallocate   bool
	CacheWindow   int64
	SyncReport    bool
	// DedupWindow (0: off) and DedupMaxEntries bound the duplicate window.
	DedupWindow           time.Duration
	DedupMaxEntries       int
	FileReservedTime      time.Duration
	DeleteWhen            string
	DiskMaxUsedSpaceRatio float64

	NodeID          string
	Peers           []dledger.Peer
	RaftBind        string
	ClientAddrs     map[string]string
	Timing          dledger.Timing
	PreferredLeader string
	// Raft log compaction: raft's SnapshotInterval, SnapshotThreshold and
	// TrailingLogs, and raft-wal's segment size.
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	SnapshotBytes     int64
	TrailingLogs      uint64
	RaftSegmentSize   int
	// MaxInFlight: raft entries of sends proposed and not yet answered
	// (dledger.Config.MaxInFlight).
	MaxInFlight int
	// GCPercent is the collector's GOGC (gc_percent), unless the
	// environment sets GOGC.
	GCPercent int
	// OneLog: the CommitLog is the raft log (raft.log = commitlog).
	OneLog bool

	// Settings is every key's effective value and source; Ignored the
	// ignored RocketMQ keys of the file with the reason.
	Settings []setting
	Ignored  []string
	// Warnings are settings that work but will hurt (peerWarnings).
	Warnings []string
}

// loadBrokerConfig resolves the configuration from the flags of fs (parsed,
// with addBrokerFlags), the environment when useEnv, the --config file and
// the defaults.
func loadBrokerConfig(fs *pflag.FlagSet, useEnv bool) (*nodeConfig, error) {
	path, _ := fs.GetString("config")
	fileVals, ignored, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	var errs []error
	if useEnv {
		ignored = append(ignored, unknownEnv()...)
	}

	v := viper.New()
	nested := map[string]any{}
	for k, val := range fileVals {
		if err := nestKeys(map[string]string{k: val}, nested); err != nil {
			return nil, err
		}
	}
	if err := v.MergeConfigMap(nested); err != nil {
		return nil, fmt.Errorf("%w: %w", errConfigFile, err)
	}
	raw := map[string]string{}
	var settings []setting
	for _, k := range brokerKeys {
		v.SetDefault(k.key, k.def)
		if useEnv {
			names := []string{envName(k.key)}
			if k.key == "namesrv_addr" {
				names = append(names, "NAMESRV_ADDR")
			}
			if err := v.BindEnv(append([]string{k.key}, names...)...); err != nil {
				return nil, err
			}
		}
		if f := fs.Lookup(flagName(k.key)); f != nil {
			if err := v.BindPFlag(k.key, f); err != nil {
				return nil, err
			}
		}
		raw[k.key] = stringify(v.Get(k.key))
		shown := raw[k.key]
		if (k.key == "cluster_secret" || k.key == "namesrv.secret_key") && shown != "" {
			shown = "(set)" // never printed
		}
		settings = append(settings, setting{Key: k.key, Value: shown, Source: sourceOf(k, fs, useEnv, fileVals)})
	}
	c, perrs := resolve(raw)
	errs = append(errs, perrs...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, st := range settings {
		// A default that depends on other keys: show what it came to.
		if st.Key == "timer_max_delay" && st.Value == "" {
			settings[i].Value = durationText(c.TimerMaxDelay)
			settings[i].Source = "default: 72h, or store.file_reserved_time when shorter"
		}
	}
	c.Settings = settings
	c.Ignored = ignored
	c.Warnings = peerWarnings(c.Peers, os.Getenv("KUBERNETES_SERVICE_HOST") != "")
	return c, nil
}

// durationText is d in its largest whole unit (72h, 90m, 45s), else as Go
// prints it.
func durationText(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d > 0 && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.unit
		}
	}
	return d.String()
}

// readConfigFile decodes path (if set) and maps its keys to canonical
// names. It returns the canonical key -> text, and the ignored keys.
func readConfigFile(path string) (map[string]string, []string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errConfigFile, err)
	}
	typ := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	switch typ {
	case "properties", "props", "prop", "conf":
		typ = "properties"
	case "yaml", "yml", "toml", "json":
	default:
		return nil, nil, fmt.Errorf("%w: %s: unknown extension %q (want .properties, .conf, .yaml, .yml, .toml or .json)", errConfigFile, path, filepath.Ext(path))
	}
	reg := viper.NewCodecRegistry()
	if err := reg.RegisterCodec("properties", propertiesCodec{}); err != nil {
		return nil, nil, err
	}
	fv := viper.NewWithOptions(viper.WithCodecRegistry(reg))
	fv.SetConfigType(typ)
	if err := fv.ReadConfig(strings.NewReader(string(data))); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", errConfigFile, path, err)
	}
	return canonicalize(path, fv.AllSettings())
}

// canonicalize maps the (lower-cased, nested) keys of a decoded file to
// canonical names, rejecting unknown and duplicated keys.
func canonicalize(path string, settings map[string]any) (map[string]string, []string, error) {
	byName := map[string]string{} // lower-cased name or alias -> key
	for _, k := range brokerKeys {
		byName[k.key] = k.key
		for _, a := range k.aliases {
			byName[strings.ToLower(a)] = k.key
		}
	}
	out := map[string]string{}
	from := map[string]string{}
	var ignored []string
	var errs []error
	var names []string
	flat := map[string]any{}
	flattenInto("", settings, func(k string, v any) { flat[k] = v; names = append(names, k) })
	sort.Strings(names)
	for _, name := range names {
		if why, ok := ignoredKeys[name]; ok {
			ignored = append(ignored, fmt.Sprintf("%s (%s)", name, why))
			continue
		}
		key, ok := byName[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%w %q in %s%s", errUnknownKey, name, path, suggest(name)))
			continue
		}
		if prev, dup := from[key]; dup {
			errs = append(errs, fmt.Errorf("%w: %q and %q in %s both set %s", errDuplicateKey, prev, name, path, key))
			continue
		}
		from[key] = name
		out[key] = stringify(flat[name])
	}
	return out, ignored, errors.Join(errs...)
}

// suggest names a key close to an unknown one, if any.
func suggest(name string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", ".", "", "-", "").Replace(strings.ToLower(s))
	}
	n := norm(name)
	for _, k := range brokerKeys {
		for _, cand := range append([]string{k.key}, k.aliases...) {
			if norm(cand) == n || strings.HasSuffix(norm(cand), n) && len(n) > 4 {
				return fmt.Sprintf(" (did you mean %s?)", cand)
			}
		}
	}
	return ""
}

// unknownEnv lists the LEDGERMQ_* variables that name no key, sorted, as
// ignored entries (a likely typo gets a suggestion).
func unknownEnv() []string {
	known := map[string]bool{}
	for _, k := range brokerKeys {
		known[envName(k.key)] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !known[name] {
			key := strings.ToLower(strings.TrimPrefix(name, envPrefix))
			out = append(out, fmt.Sprintf("environment variable %s (names no key%s)", name, suggest(key)))
		}
	}
	sort.Strings(out)
	return out
}

// sourceOf says which source gave k its effective value.
func sourceOf(k keySpec, fs *pflag.FlagSet, useEnv bool, file map[string]string) string {
	if f := fs.Lookup(flagName(k.key)); f != nil && f.Changed {
		return "flag --" + f.Name
	}
	if useEnv {
		if os.Getenv(envName(k.key)) != "" {
			return "env " + envName(k.key)
		}
		if k.key == "namesrv_addr" && os.Getenv("NAMESRV_ADDR") != "" {
			return "env NAMESRV_ADDR"
		}
	}
	if _, ok := file[k.key]; ok {
		return "file"
	}
	return "default"
}

// stringify renders a decoded value as the text the parsers read.
func stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = stringify(e)
		}
		return strings.Join(parts, ";")
	case []string:
		return strings.Join(x, ";")
	}
	return fmt.Sprint(v)
}

// resolve parses and checks every raw value.
func resolve(raw map[string]string) (*nodeConfig, []error) {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", errBadValue, key, fmt.Sprintf(format, a...)))
	}
	str := func(key string) string { return strings.TrimSpace(raw[key]) }
	boolean := func(key string) bool {
		b, err := strconv.ParseBool(str(key))
		if err != nil {
			bad(key, "%q is not true or false", raw[key])
		}
		return b
	}
	integer := func(key string, lo, hi int64) int64 {
		n, err := strconv.ParseInt(str(key), 10, 64)
		if err != nil || n < lo || n > hi {
			bad(key, "%q is not an integer in [%d, %d]", raw[key], lo, hi)
		}
		return n
	}
	duration := func(key string) time.Duration {
		s := str(key)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 1<<62/int64(bareUnit[key]) {
			return time.Duration(n) * bareUnit[key]
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			bad(key, "%q is not a positive duration", raw[key])
		}
		return d
	}
	// window is duration that also takes 0 (off).
	window := func(key string) time.Duration {
		if s := str(key); s == "0" || strings.EqualFold(s, "off") {
			return 0
		}
		return duration(key)
	}
	list := func(key string) []string {
		var out []string
		for _, p := range strings.FieldsFunc(str(key), func(r rune) bool { return r == ';' || r == ',' }) {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}

	c := &nodeConfig{
		ClusterName:           str("cluster_name"),
		BrokerName:            str("broker_name"),
		NamesrvAddrs:          list("namesrv_addr"),
		DataDir:               str("data_dir"),
		AutoCreateTopic:       boolean("auto_create_topic"),
		TraceTopic:            map[bool]string{true: str("trace_topic_name")}[boolean("trace_topic_enable")],
		AutoCreateSubGroup:    boolean("auto_create_subscription_group"),
		PropertyFilter:        boolean("enable_property_filter"),
		DefaultTopicQueueNums: int32(integer("default_topic_queue_nums", 1, 1024)),
		MaxMessageSize:        int(integer("max_message_size", 1, 1<<30)),
		RegisterInterval:      duration("register_interval"),
		ClusterSecret:         str("cluster_secret"),
		ACLEnable:             boolean("acl_enable"),
		ACLFile:               str("acl_file"),
		NamesrvCredentials:    auth.Credentials{AccessKey: str("namesrv.access_key"), SecretKey: str("namesrv.secret_key")},
		LogLevel:              strings.ToLower(str("log_level")),
		LogJSON:               boolean("log_json") || strings.EqualFold(str("log_format"), "json"),
		Preallocate:           boolean("store.preallocate"),
		CacheWindow:           integer("store.cache_window", 0, 1<<40),
		SyncReport:            boolean("store.sync_report"),
		DedupWindow:           window("dedup.window"),
		DedupMaxEntries:       int(integer("dedup.max_entries", 1, 1<<26)),
		FlushInterval:         duration("store.flush_interval"),
		SegmentSize:           integer("store.segment_size", 64<<10, 1<<40),
		FileReservedTime:      duration("store.file_reserved_time"),
		DeleteWhen:            str("store.delete_when"),
		NodeID:                str("raft.node_id"),
		PreferredLeader:       str("raft.preferred_leader"),
		SnapshotInterval:      duration("raft.snapshot_interval"),
		SnapshotThreshold:     uint64(integer("raft.snapshot_threshold", 1, 1<<40)),
		SnapshotBytes:         integer("raft.snapshot_bytes", 64<<10, 1<<40),
		TrailingLogs:          uint64(integer("raft.trailing_logs", 1, 1<<40)),
		RaftSegmentSize:       int(integer("raft.segment_size", 64<<10, 1<<34)),
		MaxInFlight:           int(integer("raft.max_inflight_entries", 1, 64)),
		GCPercent:             int(integer("gc_percent", -1, 1<<20)),
	}
	switch l := strings.ToLower(str("raft.log")); l {
	case "wal":
	case "commitlog":
		c.OneLog = true
	default:
		bad("raft.log", "%q: want wal or commitlog", l)
	}
	if c.TraceTopic != "" {
		if err := protocol.ValidateTopic(c.TraceTopic); err != nil {
			bad("trace_topic_name", "%v", err)
		}
	}
	c.Limits = remoting.Limits{
		ReadBudget:         integer("remoting.read_budget", remoting.DefaultMaxFrameSize, 1<<40),
		MaxConns:           int(integer("remoting.max_conns", -1, 1<<20)),
		MaxInFlightPerConn: int(integer("remoting.max_inflight_per_conn", -1, 1<<20)),
	}
	levels, err := broker.ParseDelayLevels(str("message_delay_level"))
	if err != nil {
		bad("message_delay_level", "%v", err)
	}
	c.DelayLevels = levels
	// A parked timer message lives in the CommitLog until it is due: a
	// longer delay than retention keeps could lose it.
	c.TimerMaxDelay = min(broker.DefaultTimerMaxDelay, c.FileReservedTime)
	if str("timer_max_delay") != "" {
		c.TimerMaxDelay = duration("timer_max_delay")
	}
	if c.TimerMaxDelay > c.FileReservedTime {
		bad("timer_max_delay", "%v is longer than store.file_reserved_time %v: parked timer messages would be deleted before they are due",
			c.TimerMaxDelay, c.FileReservedTime)
	}
	if err := auth.CheckSecret(c.ClusterSecret); err != nil {
		bad("cluster_secret", "%v", err)
	}
	if c.ACLEnable && c.ACLFile == "" {
		bad("acl_file", "acl_enable needs the ACL file (RocketMQ's plain_acl.yml)")
	}
	if (c.NamesrvCredentials.AccessKey == "") != (c.NamesrvCredentials.SecretKey == "") {
		bad("namesrv.access_key", "namesrv.access_key and namesrv.secret_key go together")
	}
	tlsFiles := tlsconf.Files{CertFile: str("tls.cert_file"), KeyFile: str("tls.key_file"), CAFile: str("tls.ca_file")}
	switch {
	case boolean("tls.enable") && (tlsFiles.CertFile == "" || tlsFiles.KeyFile == "" || tlsFiles.CAFile == ""):
		bad("tls.enable", "needs tls.cert_file, tls.key_file and tls.ca_file")
	case boolean("tls.enable"):
		src, err := tlsconf.Load(tlsFiles)
		if err != nil {
			bad("tls.cert_file", "%v", err)
		}
		c.TLS = src
	case tlsFiles.Enabled():
		// Files without the switch would run plaintext while looking
		// configured.
		bad("tls.enable", "tls files are set but tls.enable is false")
	}
	if c.ClusterName == "" || c.BrokerName == "" || c.NodeID == "" || c.DataDir == "" {
		bad("cluster_name, broker_name, raft.node_id, data_dir", "must not be empty")
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		bad("log_level", "%q is not trace, debug, info, warn or error", raw["log_level"])
	}
	if f := strings.ToLower(str("log_format")); f != "text" && f != "json" {
		bad("log_format", "%q is not text or json", raw["log_format"])
	}
	for _, a := range c.NamesrvAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("namesrv_addr", "%q is not host:port", a)
		}
	}
	if len(c.NamesrvAddrs) == 0 {
		bad("namesrv_addr", "at least one name server is required")
	}

	ip, err := netip.ParseAddr(str("broker_ip"))
	if err != nil {
		bad("broker_ip", "%q is not an IP address", raw["broker_ip"])
	}
	port := integer("listen_port", 1, 65535)
	// The client address clients dial and name servers route may be a
	// host name (advertise_host), since a Kubernetes pod keeps its DNS
	// name across restarts but not its IP. The store host stays
	// broker_ip:listen_port: offset message ids hold an IP and a port, so
	// they cannot name a host; with advertise_host, broker_ip may be the
	// pod's current IP, and an id written before a restart then names an
	// address the node no longer has (read it through another node, or by
	// its unique key).
	c.StoreHost = netip.AddrPortFrom(ip, uint16(port))
	c.ClientAddr = c.StoreHost.String()
	if h := str("advertise_host"); h != "" {
		if !validHost(h) {
			bad("advertise_host", "%q is not a host name or an IP address", raw["advertise_host"])
		}
		c.ClientAddr = net.JoinHostPort(h, strconv.Itoa(int(port)))
	}
	c.HTTPAddr = str("http_addr")
	c.GRPCListen = str("grpc_listen")
	if c.GRPCListen != "" {
		if _, _, err := net.SplitHostPort(c.GRPCListen); err != nil {
			bad("grpc_listen", "%q is not host:port", c.GRPCListen)
		}
	}
	if g, err := parsePeers(str("grpc_addrs")); err != nil {
		bad("grpc_addrs", "%v", err)
	} else {
		c.GRPCAddrs = map[string]string{}
		for _, p := range g {
			c.GRPCAddrs[p.ID] = p.Addr
		}
	}
	c.HTTPProfiling = boolean("http_pprof")
	c.ListenAddr = str("listen_addr")
	if c.ListenAddr == "" {
		c.ListenAddr = c.StoreHost.String()
	} else if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		bad("listen_addr", "%q is not host:port", c.ListenAddr)
	}

	if c.FlushMode, err = store.ParseFlushMode(str("store.flush_disk_type")); err != nil {
		bad("store.flush_disk_type", "%q is not ASYNC_FLUSH or SYNC_FLUSH", raw["store.flush_disk_type"])
	}
	if pct, err := strconv.ParseFloat(str("store.disk_max_used_space_ratio"), 64); err != nil || pct < 1 || pct > 100 {
		bad("store.disk_max_used_space_ratio", "%q is not a percentage in [1, 100]", raw["store.disk_max_used_space_ratio"])
	} else {
		c.DiskMaxUsedSpaceRatio = pct / 100
	}

	if !boolean("raft.enabled") {
		bad("raft.enabled", "ledgermq replicates only through the raft group; it cannot be false")
	}
	if g := str("raft.group"); g != "" && g != c.BrokerName {
		bad("raft.group", "%q must equal broker_name %q (the broker group is the raft group)", g, c.BrokerName)
	}
	if c.Timing, err = dledger.TimingByName(strings.ToLower(str("raft.timing"))); err != nil {
		bad("raft.timing", "%q is not default or lan", raw["raft.timing"])
	}

	peers, err := parsePeers(str("raft.peers"))
	if err != nil {
		bad("raft.peers", "%v", err)
	}
	c.RaftBind = str("raft.bind")
	if len(peers) == 0 {
		if c.RaftBind == "" {
			c.RaftBind = "127.0.0.1:40911"
		}
		peers = []dledger.Peer{{ID: c.NodeID, Addr: c.RaftBind}}
	}
	c.Peers = peers
	self := ""
	for _, p := range peers {
		if p.ID == c.NodeID {
			self = p.Addr
		}
	}
	if self == "" {
		bad("raft.peers", "this node %q is not among the peers", c.NodeID)
	} else if c.RaftBind == "" {
		c.RaftBind = self
	}
	if _, _, err := net.SplitHostPort(c.RaftBind); err != nil {
		bad("raft.bind", "%q is not host:port", c.RaftBind)
	}

	clients, err := parsePeers(str("raft.client_addrs"))
	if err != nil {
		bad("raft.client_addrs", "%v", err)
	}
	c.ClientAddrs = map[string]string{}
	for _, p := range clients {
		c.ClientAddrs[p.ID] = p.Addr
	}
	if a, ok := c.ClientAddrs[c.NodeID]; ok && a != c.ClientAddr {
		bad("raft.client_addrs", "this node's entry %s differs from its client address %s (advertise_host or broker_ip, and listen_port)", a, c.ClientAddr)
	}
	c.ClientAddrs[c.NodeID] = c.ClientAddr
	for _, p := range peers {
		if _, ok := c.ClientAddrs[p.ID]; !ok {
			bad("raft.client_addrs", "no client address for peer %q (give every node's as id-host:port;...)", p.ID)
		}
	}
	if c.PreferredLeader != "" && !containsPeer(peers, c.PreferredLeader) {
		bad("raft.preferred_leader", "%q is not among the peers", c.PreferredLeader)
	}
	if len(errs) == 0 {
		if err := c.storeConfig(nil).Validate(); err != nil {
			errs = append(errs, err)
		}
		bc := c.brokerConfig()
		if err := bc.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errs
}

func containsPeer(peers []dledger.Peer, id string) bool {
	for _, p := range peers {
		if p.ID == id {
			return true
		}
	}
	return false
}

// formatPeers renders peers in DLedger's format.
func formatPeers(peers []dledger.Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.ID + "-" + p.Addr
	}
	return strings.Join(parts, ";")
}

// storeConfig is the message store's configuration (Dir is set by the
// raft group).
func (c *nodeConfig) storeConfig(onDispatch func(string, int32, int64)) store.Config {
	sc := store.DefaultConfig(filepath.Join(c.DataDir, "store"))
	sc.SegmentSize = c.SegmentSize
	sc.Preallocate = c.Preallocate
	sc.CacheWindow = c.CacheWindow
	sc.FlushMode = c.FlushMode
	sc.FlushInterval = c.FlushInterval
	sc.MaxMessageSize = c.MaxMessageSize
	sc.FileReservedTime = c.FileReservedTime
	sc.DeleteWhen = c.DeleteWhen
	sc.DiskMaxUsedSpaceRatio = c.DiskMaxUsedSpaceRatio
	sc.DiskRefuseRatio = max(sc.DiskRefuseRatio, c.DiskMaxUsedSpaceRatio)
	sc.OnDispatch = onDispatch
	sc.Duplicates = store.DuplicatesConfig{Off: c.DedupWindow <= 0, Window: c.DedupWindow, MaxEntries: c.DedupMaxEntries}
	return sc
}

// dledgerConfig is the raft group's configuration, wired to hooks.
func (c *nodeConfig) dledgerConfig(hooks *broker.Hooks) dledger.Config {
	var advertise string
	for _, p := range c.Peers {
		if p.ID == c.NodeID {
			advertise = p.Addr
		}
	}
	dc := dledger.Config{
		Group:           c.BrokerName,
		NodeID:          c.NodeID,
		Peers:           c.Peers,
		BindAddr:        c.RaftBind,
		AdvertiseAddr:   advertise,
		DataDir:         c.DataDir,
		Timing:          c.Timing,
		StoreHost:       c.StoreHost,
		Store:           c.storeConfig(nil),
		Stores:          messagestore.Opener{},
		PreferredLeader: c.PreferredLeader,

		SnapshotInterval:  c.SnapshotInterval,
		SnapshotThreshold: c.SnapshotThreshold,
		SnapshotBytes:     c.SnapshotBytes,
		TrailingLogs:      c.TrailingLogs,
		MaxInFlight:       c.MaxInFlight,
		RaftSegmentSize:   c.RaftSegmentSize,
		OneLog:            c.OneLog,
		// The delay table is a group-wide setting: its canonical text is
		// recorded and compared by the raft group.
		DelayLevels: delayLevelsText(c.DelayLevels),
	}
	if canary.Built { // a jepsenbroken build only: the write path's broken behaviours
		dc.Faults = canary.WritePath{SyncFlush: dc.Store.FlushMode == store.FlushSync}
	}
	if c.TLS != nil {
		// ServerConfig fails only without a certificate, which Load
		// refused already.
		srv, _ := c.TLS.ServerConfig(true)
		dc.TLS = &dledger.RaftTLS{Server: srv, Client: c.TLS.ClientConfig()}
	}
	if hooks != nil {
		dc.OnRoleChange = hooks.OnRoleChange
		dc.Store.OnDispatch = hooks.OnDispatch
	}
	return dc
}

// delayLevelsText is the canonical text of a delay table (Go durations).
func delayLevelsText(levels []time.Duration) string {
	parts := make([]string, len(levels))
	for i, d := range levels {
		parts[i] = d.String()
	}
	return strings.Join(parts, " ")
}

// brokerConfig is the client-facing broker's configuration.
func (c *nodeConfig) brokerConfig() broker.Config {
	var srvTLS, cliTLS *tls.Config
	if c.TLS != nil {
		srvTLS, _ = c.TLS.ServerConfig(false)
		cliTLS = c.TLS.ClientConfig()
	}
	return broker.Config{
		TLSServer:                   srvTLS,
		TLSClient:                   cliTLS,
		ClusterName:                 c.ClusterName,
		BrokerName:                  c.BrokerName,
		NodeID:                      c.NodeID,
		Peers:                       c.ClientAddrs,
		Addr:                        c.ListenAddr,
		AdvertiseAddr:               c.ClientAddr,
		StoreHost:                   c.StoreHost,
		NamesrvAddrs:                c.NamesrvAddrs,
		RegisterInterval:            c.RegisterInterval,
		ClusterSecret:               c.ClusterSecret,
		ACLEnable:                   c.ACLEnable,
		ACLFile:                     c.ACLFile,
		NamesrvCredentials:          c.NamesrvCredentials,
		AutoCreateTopic:             c.AutoCreateTopic,
		DuplicateWindow:             cmp.Or(c.DedupWindow, -1), // 0 (off) is the broker's default otherwise
		TraceTopic:                  c.TraceTopic,
		DefaultTopicQueueNums:       c.DefaultTopicQueueNums,
		AutoCreateSubscriptionGroup: c.AutoCreateSubGroup,
		DisablePropertyFilter:       !c.PropertyFilter,
		DelayLevels:                 c.DelayLevels,
		TimerMaxDelay:               c.TimerMaxDelay,
		MaxMessageSize:              c.MaxMessageSize,
		Limits:                      c.Limits,
		Settings:                    c.settingsMap(),
	}
}

// settingsMap is the effective settings by key (secrets already shown
// only as "(set)"), for GET_BROKER_CONFIG.
func (c *nodeConfig) settingsMap() map[string]string {
	m := make(map[string]string, len(c.Settings))
	for _, s := range c.Settings {
		m[s.Key] = s.Value
	}
	return m
}

// writeSettings prints the effective configuration, one key a line, with
// its source, then the ignored keys.
func (c *nodeConfig) writeSettings(w io.Writer) error {
	width := 0
	for _, s := range c.Settings {
		width = max(width, len(s.Key))
	}
	for _, s := range c.Settings {
		if _, err := fmt.Fprintf(w, "%-*s = %-24s # %s\n", width, s.Key, strconv.Quote(s.Value), s.Source); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(c.ClientAddrs))
	for id := range c.ClientAddrs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	clients := make([]string, len(ids))
	for i, id := range ids {
		clients[i] = id + "-" + c.ClientAddrs[id]
	}
	if _, err := fmt.Fprintf(w, "# effective: client address %s, listening on %s, raft bind %s\n# effective: raft peers %s; client addresses %s; timing %s\n",
		c.ClientAddr, c.ListenAddr, c.RaftBind, formatPeers(c.Peers), strings.Join(clients, ";"), c.Timing.Name); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "# effective: store host %s (offset message ids)\n", c.StoreHost); err != nil {
		return err
	}
	for _, ig := range c.Ignored {
		if _, err := fmt.Fprintf(w, "# ignored: %s\n", ig); err != nil {
			return err
		}
	}
	for _, wn := range c.Warnings {
		if _, err := fmt.Fprintf(w, "# warning: %s\n", wn); err != nil {
			return err
		}
	}
	return nil
}
