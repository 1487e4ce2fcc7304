package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ledgermq/ledgermq/store"
)

// loadWith writes file (if name is set) into a temp dir and loads the
// configuration from it and args.
func loadWith(t *testing.T, name, file string, args ...string) (*nodeConfig, error) {
	t.Helper()
	fs := pflag.NewFlagSet("broker", pflag.ContinueOnError)
	addBrokerFlags(fs)
	if name != "" {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return loadBrokerConfig(fs, true)
}

// ignoredFileKeys are c's ignored file keys, without the environment's
// (the test's environment may hold LEDGERMQ_* variables of its own).
func ignoredFileKeys(c *nodeConfig) []string {
	var out []string
	for _, ig := range c.Ignored {
		if !strings.HasPrefix(ig, "environment variable ") {
			out = append(out, ig)
		}
	}
	return out
}

// A LEDGERMQ_* variable that names no key is listed as ignored (in
// --check-config's output and the start-up warnings); the node still starts.
func TestConfigUnknownEnvIgnored(t *testing.T) {
	t.Setenv("LEDGERMQ_LISTEN_PROT", "1")
	t.Setenv("LEDGERMQ_SOME_TOOL_SETTING", "x")
	c, err := loadWith(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var typo, tool string
	for _, ig := range c.Ignored {
		switch {
		case strings.Contains(ig, "LEDGERMQ_LISTEN_PROT"):
			typo = ig
		case strings.Contains(ig, "LEDGERMQ_SOME_TOOL_SETTING"):
			tool = ig
		}
	}
	if typo == "" || tool == "" {
		t.Fatalf("ignored %q: want both variables listed", c.Ignored)
	}
	var b strings.Builder
	if err := c.writeSettings(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "# ignored: "+tool) {
		t.Fatalf("--check-config output does not list %q:\n%s", tool, b.String())
	}
}

func settingOf(c *nodeConfig, key string) setting {
	for _, s := range c.Settings {
		if s.Key == key {
			return s
		}
	}
	return setting{}
}

func TestConfigPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		env        string
		flag       string
		wantAddr   string
		wantSource string
	}{
		{"default", "", "", "", "127.0.0.1:10911", "default"},
		{"file", "listenPort=1001", "", "", "127.0.0.1:1001", "file"},
		{"env beats file", "listenPort=1001", "1002", "", "127.0.0.1:1002", "env LEDGERMQ_LISTEN_PORT"},
		{"flag beats env", "listenPort=1001", "1002", "1003", "127.0.0.1:1003", "flag --listen-port"},
		{"flag beats file", "listen_port=1001", "", "1003", "127.0.0.1:1003", "flag --listen-port"},
		{"env beats default", "", "1002", "", "127.0.0.1:1002", "env LEDGERMQ_LISTEN_PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("LEDGERMQ_LISTEN_PORT", tt.env)
			}
			var args []string
			if tt.flag != "" {
				args = append(args, "--listen-port", tt.flag)
			}
			name := ""
			if tt.file != "" {
				name = "broker.conf"
			}
			c, err := loadWith(t, name, tt.file, args...)
			if err != nil {
				t.Fatal(err)
			}
			if c.ClientAddr != tt.wantAddr {
				t.Fatalf("client address %s, want %s", c.ClientAddr, tt.wantAddr)
			}
			if got := settingOf(c, "listen_port").Source; got != tt.wantSource {
				t.Fatalf("source %q, want %q", got, tt.wantSource)
			}
		})
	}
}

func TestConfigNamesrvEnv(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "127.0.0.1:1;127.0.0.1:2")
	c, err := loadWith(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.NamesrvAddrs, ",") != "127.0.0.1:1,127.0.0.1:2" {
		t.Fatalf("namesrv %v", c.NamesrvAddrs)
	}
	t.Setenv("LEDGERMQ_NAMESRV_ADDR", "127.0.0.1:3")
	if c, err = loadWith(t, "", ""); err != nil || strings.Join(c.NamesrvAddrs, ",") != "127.0.0.1:3" {
		t.Fatalf("namesrv %v, %v", c.NamesrvAddrs, err)
	}
}

// rocketmqConf is RocketMQ's DLedger sample broker-n0.conf, plus the
// client addresses of the other nodes.
const rocketmqConf = `brokerClusterName = RaftCluster
brokerName=RaftNode00
listenPort=30911
namesrvAddr=127.0.0.1:9876;127.0.0.1:9877
storePathRootDir=/tmp/rmqstore/node00
storePathCommitLog=/tmp/rmqstore/node00/commitlog
enableDLegerCommitLog=true
dLegerGroup=RaftNode00
dLegerPeers=n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913
## must be unique
dLegerSelfId=n0
sendMessageThreadPoolNums=16
flushDiskType=SYNC_FLUSH
fileReservedTime=48
deleteWhen=03;04
diskMaxUsedSpaceRatio=88
mapedFileSizeCommitLog=67108864
maxMessageSize=65536
autoCreateTopicEnable=false
autoCreateSubscriptionGroup=false
enablePropertyFilter=false
messageDelayLevel=1s 5s 2m 1d
defaultTopicQueueNums=4
flushIntervalCommitLog=200
preferredLeaderId=n1
raft.client_addrs=n1-127.0.0.1:30912;n2-127.0.0.1:30913
`

func TestConfigRocketMQAliases(t *testing.T) {
	c, err := loadWith(t, "broker.conf", rocketmqConf)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"brokerClusterName", c.ClusterName, "RaftCluster"},
		{"brokerName", c.BrokerName, "RaftNode00"},
		{"listenPort", c.ClientAddr, "127.0.0.1:30911"},
		{"namesrvAddr", strings.Join(c.NamesrvAddrs, ";"), "127.0.0.1:9876;127.0.0.1:9877"},
		{"storePathRootDir", c.DataDir, "/tmp/rmqstore/node00"},
		{"dLegerSelfId", c.NodeID, "n0"},
		{"dLegerPeers", formatPeers(c.Peers), "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"},
		{"raft bind from peers", c.RaftBind, "127.0.0.1:40911"},
		{"flushDiskType", c.FlushMode, store.FlushSync},
		{"fileReservedTime", c.FileReservedTime, 48 * time.Hour},
		{"deleteWhen", c.DeleteWhen, "03;04"},
		{"diskMaxUsedSpaceRatio", c.DiskMaxUsedSpaceRatio, 0.88},
		{"mapedFileSizeCommitLog", c.SegmentSize, int64(64 << 20)},
		{"maxMessageSize", c.MaxMessageSize, 65536},
		{"autoCreateTopicEnable", c.AutoCreateTopic, false},
		{"autoCreateSubscriptionGroup", c.AutoCreateSubGroup, false},
		{"enablePropertyFilter", c.PropertyFilter, false},
		{"messageDelayLevel", fmt.Sprint(c.DelayLevels), "[1s 5s 2m0s 24h0m0s]"},
		{"defaultTopicQueueNums", c.DefaultTopicQueueNums, int32(4)},
		{"flushIntervalCommitLog", c.FlushInterval, 200 * time.Millisecond},
		{"preferredLeaderId", c.PreferredLeader, "n1"},
		{"client addrs", c.ClientAddrs["n2"], "127.0.0.1:30913"},
		{"ignored keys", len(ignoredFileKeys(c)), 2},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	dc := c.dledgerConfig(nil)
	if dc.StoreHost.String() != "127.0.0.1:30911" || dc.Group != "RaftNode00" || dc.Store.SegmentSize != 64<<20 {
		t.Fatalf("dledger config %+v", dc)
	}
	if bc := c.brokerConfig(); bc.Peers["n1"] != "127.0.0.1:30912" || bc.AdvertiseAddr != "127.0.0.1:30911" || !bc.DisablePropertyFilter {
		t.Fatalf("broker config %+v", bc)
	}
}

func TestConfigFormats(t *testing.T) {
	want := map[string]string{"node": "n1", "addr": "127.0.0.1:2000", "namesrv": "127.0.0.1:1;127.0.0.1:2"}
	files := []struct{ name, text string }{
		{"b.yaml", "listen_port: 2000\nnamesrv_addr: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nraft:\n  node_id: n1\n  peers: n1-127.0.0.1:3000\n"},
		{"b.yml", "listenPort: 2000\nnamesrvAddr: 127.0.0.1:1;127.0.0.1:2\ndLegerSelfId: n1\ndLegerPeers: n1-127.0.0.1:3000\n"},
		{"b.toml", "listen_port = 2000\nnamesrv_addr = \"127.0.0.1:1;127.0.0.1:2\"\n[raft]\nnode_id = \"n1\"\npeers = \"n1-127.0.0.1:3000\"\n"},
		{"b.json", `{"listen_port": 2000, "namesrv_addr": "127.0.0.1:1,127.0.0.1:2", "raft": {"node_id": "n1", "peers": "n1-127.0.0.1:3000"}}`},
		{"b.properties", "listen_port 2000\nnamesrv_addr : 127.0.0.1:1;\\\n   127.0.0.1:2\nraft.node_id=n1\nraft.peers=n1-127.0.0.1:3000\n"},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			c, err := loadWith(t, f.name, f.text)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{"node": c.NodeID, "addr": c.ClientAddr, "namesrv": strings.Join(c.NamesrvAddrs, ";")}
			if !maps.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	tests := []struct {
		name, file, text string
		env              [2]string
		args             []string
		want             error
		mention          string
	}{
		{"unknown file key", "b.conf", "listenPort=1\nlistenPrt=2\n", [2]string{}, nil, errUnknownKey, "listenprt"},
		{"unknown nested key", "b.yaml", "raft:\n  nodeid: n0\n", [2]string{}, nil, errUnknownKey, "raft.nodeid"},
		{"alias and key", "b.conf", "listenPort=1\nlisten_port=2\n", [2]string{}, nil, errDuplicateKey, "listen_port"},
		{"bad port", "", "", [2]string{}, []string{"--listen-port", "70000"}, errBadValue, "listen_port"},
		{"bad bool env", "", "", [2]string{"LEDGERMQ_AUTO_CREATE_TOPIC", "yes please"}, nil, errBadValue, "auto_create_topic"},
		{"dledger off", "b.conf", "enableDLegerCommitLog=false\n", [2]string{}, nil, errBadValue, "raft.enabled"},
		{"group mismatch", "b.conf", "brokerName=a\ndLegerGroup=b\n", [2]string{}, nil, errBadValue, "raft.group"},
		{"self not in peers", "b.conf", "dLegerSelfId=n9\ndLegerPeers=n0-127.0.0.1:1\n", [2]string{}, nil, errBadValue, "raft.peers"},
		{"missing client addrs", "b.conf", "dLegerPeers=n0-127.0.0.1:1;n1-127.0.0.1:2\n", [2]string{}, nil, errBadValue, "n1"},
		{"bad flush type", "", "", [2]string{}, []string{"--store-flush-disk-type", "SOMETIMES"}, errBadValue, "flush_disk_type"},
		{"bad delay levels", "b.conf", "messageDelayLevel=1s 2x\n", [2]string{}, nil, errBadValue, "message_delay_level"},
		{"bad timing", "", "", [2]string{}, []string{"--raft-timing", "fast"}, errBadValue, "raft.timing"},
		{"bad log format", "", "", [2]string{}, []string{"--log-format", "xml"}, errBadValue, "log_format"},
		{"acl without file", "b.conf", "aclEnable=true\n", [2]string{}, nil, errBadValue, "acl_file"},
		{"timer delay beyond retention", "b.conf", "timerMaxDelaySec=7200\nfileReservedTime=1\n", [2]string{}, nil, errBadValue, "timer_max_delay"},
		{"bad extension", "b.ini", "a=b\n", [2]string{}, nil, errConfigFile, "extension"},
		{"bad yaml", "b.yaml", "a: [\n", [2]string{}, nil, errConfigFile, "b.yaml"},
		{"bad escape", "b.conf", "brokerName=\\uZZZZ\n", [2]string{}, nil, errConfigFile, "escape"},
		{"read budget below a frame", "", "", [2]string{}, []string{"--remoting-read-budget", "1048576"}, errBadValue, "remoting.read_budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env[0] != "" {
				t.Setenv(tt.env[0], tt.env[1])
			}
			_, err := loadWith(t, tt.file, tt.text, tt.args...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

// The remoting limits reach the broker's configuration; -1 disables one.
func TestConfigRemotingLimits(t *testing.T) {
	c, err := loadWith(t, "b.conf", "remoting.max_conns=-1\n", "--remoting-read-budget", "33554432", "--remoting-max-inflight-per-conn", "64")
	if err != nil {
		t.Fatal(err)
	}
	if l := c.brokerConfig().Limits; l.ReadBudget != 32<<20 || l.MaxConns != -1 || l.MaxInFlightPerConn != 64 {
		t.Fatalf("%+v", l)
	}
	if c, err = loadWith(t, "", ""); err != nil || c.Limits.ReadBudget != 256<<20 || c.Limits.MaxConns != 4096 {
		t.Fatalf("defaults: %+v %v", c.Limits, err)
	}
}

func TestBrokerCheckConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(path, []byte(rocketmqConf), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetArgs([]string{"broker", "--check-config", "--config", path, "--broker-ip", "127.0.0.2"})
	cmd.SetOut(out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`cluster_name`, `"RaftCluster"`, "# file",
		`"127.0.0.2"`, "# flag --broker-ip",
		"client address 127.0.0.2:30911",
		"# ignored: storepathcommitlog",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out.String())
		}
	}

	cmd = newRootCmd()
	cmd.SetArgs([]string{"broker", "--check-config", "--raft-timing", "warp"})
	cmd.SetOut(&syncBuffer{})
	if err := cmd.Execute(); !errors.Is(err, errBadValue) {
		t.Fatalf("bad config: %v", err)
	}
}

func TestPropertiesParse(t *testing.T) {
	text := "# comment\n  ! also a comment\n\na=1\nb = two words  \nc:3\nd 4\n" +
		"e=line\\\n    continued\nf=tab\\there\\u0041\ng\\ key=v\\ \nh=\nk=a\\\\\r\nl=x\ra=last\n"
	got, err := parseProperties([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "last", "b": "two words", "c": "3", "d": "4", "e": "linecontinued",
		"f": "tab\thereA", "g key": "v ", "h": "", "k": `a\`, "l": "x"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func FuzzProperties(f *testing.F) {
	f.Add([]byte(rocketmqConf))
	f.Add([]byte("a=1\nb = two words  \nc:3\nd 4\ne=line\\\n  continued\nf=\\u0041\\t\ng\\ key=v\\ \n"))
	f.Add([]byte("raft.node_id=n0\nraft=1\n"))
	f.Add([]byte("\\u12"))
	f.Add([]byte("=\n:\n \\\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		flat, err := parseProperties(data)
		if err != nil {
			return
		}
		_ = nestKeys(flat, map[string]any{})
		again, err := parseProperties(encodeProperties(flat))
		if err != nil {
			t.Fatalf("re-parse of encoded %q: %v", flat, err)
		}
		if !maps.Equal(flat, again) {
			t.Fatalf("round trip: %q became %q", flat, again)
		}
	})
}

// log_format=json (or --log-format json) logs JSON, as log_json does.
func TestConfigLogFormat(t *testing.T) {
	for _, args := range [][]string{{"--log-format", "json"}, {"--log-json"}} {
		if c, err := loadWith(t, "", "", args...); err != nil || !c.LogJSON {
			t.Fatalf("%v: LogJSON=%v %v", args, c != nil && c.LogJSON, err)
		}
	}
	if c, err := loadWith(t, "b.conf", "log_format=text\n"); err != nil || c.LogJSON {
		t.Fatalf("text: %v", err)
	}
}

// timer_max_delay: a bare number is seconds (Java's timerMaxDelaySec); the
// default is 72 h, or the retention when that is shorter.
func TestConfigTimerMaxDelay(t *testing.T) {
	if c, err := loadWith(t, "b.conf", "timerMaxDelaySec=600\n"); err != nil || c.brokerConfig().TimerMaxDelay != 10*time.Minute {
		t.Fatalf("600: %v", err)
	}
	if c, err := loadWith(t, "", ""); err != nil || c.brokerConfig().TimerMaxDelay != 72*time.Hour {
		t.Fatalf("default: %v", err)
	}
	if c, err := loadWith(t, "b.conf", "fileReservedTime=24\n"); err != nil || c.brokerConfig().TimerMaxDelay != 24*time.Hour {
		t.Fatalf("retention-bound default: %v", err)
	}
}

// TestConfigMaxInFlight: raft.max_inflight_entries reaches the group's
// config (1 by default), and 0 is refused.
func TestConfigMaxInFlight(t *testing.T) {
	if c, err := loadWith(t, "", ""); err != nil || c.dledgerConfig(nil).MaxInFlight != 1 {
		t.Fatalf("default: %v", err)
	}
	if c, err := loadWith(t, "b.yaml", "raft:\n  max_inflight_entries: 2\n"); err != nil || c.dledgerConfig(nil).MaxInFlight != 2 {
		t.Fatalf("2: %v", err)
	}
	if _, err := loadWith(t, "b.yaml", "raft:\n  max_inflight_entries: 0\n"); !errors.Is(err, errBadValue) {
		t.Fatalf("0: %v, want errBadValue", err)
	}
}

// TestConfigGCPercent: gc_percent is 100 by default, -1 (off) and other
// values are taken, and what is not a number of at least -1 is refused.
func TestConfigGCPercent(t *testing.T) {
	if c, err := loadWith(t, "", ""); err != nil || c.GCPercent != 100 {
		t.Fatalf("default: %v", err)
	}
	for _, v := range []int{-1, 400, 800} {
		if c, err := loadWith(t, "b.yaml", fmt.Sprintf("gc_percent: %d\n", v)); err != nil || c.GCPercent != v {
			t.Fatalf("%d: %v", v, err)
		}
	}
	for _, v := range []string{"-2", "lots"} {
		if _, err := loadWith(t, "b.yaml", "gc_percent: "+v+"\n"); !errors.Is(err, errBadValue) {
			t.Fatalf("%s: %v, want errBadValue", v, err)
		}
	}
}

// TestConfigCacheWindow: store.cache_window reaches the store; its default
// is the store's.
func TestConfigCacheWindow(t *testing.T) {
	c, err := loadWith(t, "", "")
	if err != nil || c.storeConfig(nil).CacheWindow != store.DefaultCacheWindow {
		t.Fatalf("default: %d, %v", c.storeConfig(nil).CacheWindow, err)
	}
	for v, want := range map[string]int64{"0": 0, "1048576": 1 << 20} {
		if c, err := loadWith(t, "b.yaml", "store:\n  cache_window: "+v+"\n"); err != nil || c.storeConfig(nil).CacheWindow != want {
			t.Fatalf("%s: %v", v, err)
		}
	}
	if _, err := loadWith(t, "b.yaml", "store:\n  cache_window: -1\n"); !errors.Is(err, errBadValue) {
		t.Fatalf("-1: %v, want errBadValue", err)
	}
}

// TestConfigACL: RocketMQ's aclEnable turns the ACL on; acl_file names
// plain_acl.yml; both reach the broker's config.
func TestConfigACL(t *testing.T) {
	c, err := loadWith(t, "broker.conf", "aclEnable=true\nacl_file=/etc/ledgermq/plain_acl.yml\n")
	if err != nil {
		t.Fatal(err)
	}
	if bc := c.brokerConfig(); !bc.ACLEnable || bc.ACLFile != "/etc/ledgermq/plain_acl.yml" {
		t.Fatalf("broker config ACLEnable %v ACLFile %q", bc.ACLEnable, bc.ACLFile)
	}
	if c, err := loadWith(t, "", ""); err != nil || c.brokerConfig().ACLEnable {
		t.Fatalf("ACL on by default (%v)", err)
	}
}

// TestBrokerCheckConfigTimerMaxDelay: --check-config shows the timer
// limit the node will use, not the empty text of "derive it".
func TestBrokerCheckConfigTimerMaxDelay(t *testing.T) {
	line := regexp.MustCompile(`(?m)^timer_max_delay\s+= "([^"]*)"\s+# (.*)$`)
	for _, tt := range []struct {
		conf, want, source string
	}{
		{"", "72h", "default: 72h, or store.file_reserved_time when shorter"},
		{"fileReservedTime=24\n", "24h", "default: 72h, or store.file_reserved_time when shorter"},
		{"timerMaxDelaySec=5400\n", "5400", "file"},
	} {
		path := filepath.Join(t.TempDir(), "broker.conf")
		if err := os.WriteFile(path, []byte(tt.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, err := runCLI(t, "broker", "--check-config", "--config", path)
		if err != nil {
			t.Fatal(err)
		}
		m := line.FindStringSubmatch(out)
		if m == nil || m[1] != tt.want || !strings.HasPrefix(m[2], tt.source) {
			t.Errorf("%q: %q, want %q # %s\n%s", tt.conf, m, tt.want, tt.source, out)
		}
	}
	if got := durationText(90 * time.Minute); got != "90m" {
		t.Errorf("durationText(90m) = %s", got)
	}
}

// TestConfigAdvertiseHost: advertise_host makes a host name the client
// address (registered with name servers, the node's raft.client_addrs
// entry, what followers forward to) while broker_ip:listen_port stays the
// store host of offset message ids and the default listen address.
func TestConfigAdvertiseHost(t *testing.T) {
	const host = "broker-a-1.broker-a.mq.svc.cluster.local"
	file := "brokerName=broker-a\nbrokerIP1=10.244.1.7\nlistenPort=10911\nadvertise_host=" + host + "\n" +
		"dLegerSelfId=a1\ndLegerPeers=a0-broker-a-0.broker-a:40911;a1-broker-a-1.broker-a:40911\n" +
		"raft.bind=0.0.0.0:40911\n" +
		"raft.client_addrs=a0-broker-a-0.broker-a.mq.svc.cluster.local:10911;a1-" + host + ":10911\n"
	c, err := loadWith(t, "n.conf", file)
	if err != nil {
		t.Fatal(err)
	}
	want := host + ":10911"
	if c.ClientAddr != want || c.StoreHost.String() != "10.244.1.7:10911" || c.ListenAddr != "10.244.1.7:10911" {
		t.Fatalf("client %s store host %s listen %s", c.ClientAddr, c.StoreHost, c.ListenAddr)
	}
	bc := c.brokerConfig()
	if bc.AdvertiseAddr != want || bc.StoreHost != c.StoreHost || bc.Peers["a1"] != want {
		t.Fatalf("broker config: advertise %s store host %s peers %v", bc.AdvertiseAddr, bc.StoreHost, bc.Peers)
	}
	if dc := c.dledgerConfig(nil); dc.StoreHost != c.StoreHost || dc.AdvertiseAddr != "broker-a-1.broker-a:40911" {
		t.Fatalf("raft config: store host %s advertise %s", dc.StoreHost, dc.AdvertiseAddr)
	}
	var out strings.Builder
	if err := c.writeSettings(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "client address "+want) || !strings.Contains(out.String(), "store host 10.244.1.7:10911") {
		t.Fatalf("settings:\n%s", out.String())
	}

	// Without advertise_host the client address is broker_ip's, as before.
	c, err = loadWith(t, "n.conf", "brokerIP1=10.0.0.1\n")
	if err != nil || c.ClientAddr != "10.0.0.1:10911" || c.StoreHost.String() != "10.0.0.1:10911" {
		t.Fatalf("%+v %v", c, err)
	}

	for _, bad := range []string{"-bad.example", "a..b", "has space", "host:10911", strings.Repeat("x", 64) + ".example"} {
		if _, err := loadWith(t, "n.conf", "advertise_host="+bad+"\n"); !errors.Is(err, errBadValue) || !strings.Contains(err.Error(), "advertise_host") {
			t.Errorf("advertise_host=%q: %v", bad, err)
		}
	}
	// The node's raft.client_addrs entry must be the advertised name.
	if _, err := loadWith(t, "n.conf", "brokerIP1=10.0.0.1\nadvertise_host=n0.example\nraft.client_addrs=n0-10.0.0.1:10911\n"); err == nil || !strings.Contains(err.Error(), "raft.client_addrs") {
		t.Errorf("client_addrs entry by IP with a host name advertised: %v", err)
	}
}

// TestBrokerCheckConfigWarnsOfIPPeersOnKubernetes: on Kubernetes, raft peers
// given as pod IPs are warned of (check-config and start-up); names, and
// loopback or off Kubernetes, are not.
func TestBrokerCheckConfigWarnsOfIPPeersOnKubernetes(t *testing.T) {
	check := func(peers string, k8s bool) string {
		t.Helper()
		if k8s {
			t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
		} else {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
		}
		out := &syncBuffer{}
		cmd := newRootCmd()
		cmd.SetArgs([]string{"broker", "--check-config", "--raft-node-id", "n0", "--raft-peers", peers,
			"--raft-client-addrs", "n0-127.0.0.1:10911;n1-127.0.0.1:30912;n2-127.0.0.1:30913"})
		cmd.SetOut(out)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	ips := "n0-10.244.1.5:40911;n1-10.244.2.7:40911;n2-broker-a-2.broker-a:40911"
	out := check(ips, true)
	if !strings.Contains(out, "# warning: raft.peers n0-10.244.1.5:40911;n1-10.244.2.7:40911 are IP addresses on Kubernetes") {
		t.Fatalf("no warning for IP peers on Kubernetes:\n%s", out)
	}
	for _, tc := range []struct {
		peers string
		k8s   bool
	}{
		{ips, false},
		{"n0-broker-a-0.broker-a:40911;n1-broker-a-1.broker-a:40911", true},
		{"n0-127.0.0.1:40911;n1-127.0.0.1:40912", true},
	} {
		if out := check(tc.peers, tc.k8s); strings.Contains(out, "# warning:") {
			t.Errorf("%s (kubernetes %v): unexpected warning:\n%s", tc.peers, tc.k8s, out)
		}
	}
}
