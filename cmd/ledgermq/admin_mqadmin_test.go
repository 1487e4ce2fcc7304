package main

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// rocketmq49 is every verb RocketMQ 4.9's mqadmin lists (4.9.0's and
// 4.9.8's MQAdminStartup).
var rocketmq49 = strings.Fields(`updateTopic deleteTopic updateSubGroup deleteSubGroup updateBrokerConfig
	updateTopicPerm topicRoute topicStatus topicClusterList brokerStatus queryMsgById queryMsgByKey
	queryMsgByUniqueKey queryMsgByOffset printMsg printMsgByQueue sendMsgStatus brokerConsumeStats
	producerConnection consumerConnection consumerProgress consumerStatus cloneGroupOffset clusterList
	topicList updateKvConfig deleteKvConfig wipeWritePerm addWritePerm resetOffsetByTime updateOrderConf
	cleanExpiredCQ cleanUnusedTopic startMonitoring statsAll allocateMQ checkMsgSendRT clusterRT
	getNamesrvConfig updateNamesrvConfig getBrokerConfig queryCq sendMessage consumeMessage
	updateAclConfig deleteAclConfig clusterAclConfigVersion updateGlobalWhiteAddr
	getAccessConfigSubCommand queryMsgTraceById exportMetadata exportConfigs exportMetrics
	producer skipAccumulatedMessage deleteExpiredCommitLog getConsumerConfig getAclConfig`)

// served are the mqadmin verbs ledgermq serves.
var served = strings.Fields(`updateTopic deleteTopic updateSubGroup deleteSubGroup topicRoute topicStatus
	topicClusterList brokerStatus queryMsgById queryMsgByKey queryMsgByUniqueKey queryMsgByOffset printMsg
	printMsgByQueue brokerConsumeStats producerConnection consumerConnection consumerProgress
	cloneGroupOffset clusterList topicList resetOffsetByTime statsAll sendMessage
	consumeMessage queryMsgTraceById skipAccumulatedMessage getConsumerConfig getBrokerConfig
	updateKvConfig deleteKvConfig updateOrderConf wipeWritePerm addWritePerm queryCq`)

// TestAdminMqadminVerbs: every verb of RocketMQ 4.9's mqadmin is under
// admin, listed in its help, in the help group saying whether it is
// served; one not served exits non-zero, whatever follows it, naming
// what to use instead.
func TestAdminMqadminVerbs(t *testing.T) {
	admin, _, err := newRootCmd().Find([]string{"admin"})
	if err != nil {
		t.Fatal(err)
	}
	help := mustCLI(t, "admin", "--help")
	for _, v := range rocketmq49 {
		c, _, err := admin.Find([]string{v})
		if err != nil || c == admin || c.Name() != v {
			t.Errorf("%s: not an admin verb (%v)", v, err)
			continue
		}
		if !regexp.MustCompile(`(?m)^\s+` + v + `\s`).MatchString(help) {
			t.Errorf("%s: not in admin --help", v)
		}
		want := groupNotServed
		if slices.Contains(served, v) {
			want = groupMqadmin
		}
		if c.GroupID != want {
			t.Errorf("%s: help group %q, want %q", v, c.GroupID, want)
		}
		if want == groupNotServed {
			_, _, err := runCLI(t, "admin", v, "-n", "127.0.0.1:1", "-b", "broker-a")
			if !errors.Is(err, errNotServed) || !strings.Contains(err.Error(), "instead: ") {
				t.Errorf("%s: %v", v, err)
			}
		}
	}
	if n := len(mqadminTable()); n != len(rocketmq49) {
		t.Errorf("the table has %d verbs, RocketMQ 4.9 %d", n, len(rocketmq49))
	}
	// The help says which group a verb is in.
	for _, title := range []string{"RocketMQ mqadmin verbs, with mqadmin's flags:", "mqadmin verbs ledgermq does not serve"} {
		if !strings.Contains(help, title) {
			t.Errorf("admin --help lacks %q:\n%s", title, help)
		}
	}
}

// parsed finds the command of args and parses its flags, as Execute
// would, without running it.
func parsed(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	c, rest, err := newRootCmd().Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return c
}

// flagValue is a parsed flag's value as text.
func flagValue(t *testing.T, c *cobra.Command, name string) string {
	t.Helper()
	f := c.Flags().Lookup(name)
	if f == nil {
		t.Fatalf("%s has no --%s", c.CommandPath(), name)
	}
	return f.Value.String()
}

// TestAdminShortO: -o is mqadmin's on the mqadmin verbs that have one
// (offset, order, offline) and the output format everywhere else;
// --output is the output format on every verb.
func TestAdminShortO(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		flag, want string
		output     string
	}{
		{[]string{"admin", "queryMsgByOffset", "-t", "T", "-b", "broker-a", "-i", "1", "-o", "5"}, "offset", "5", "text"},
		{[]string{"admin", "queryMsgByOffset", "-t", "T", "-o", "5", "--output", "json"}, "offset", "5", "json"},
		{[]string{"admin", "consumeMessage", "-t", "T", "-b", "broker-a", "-i", "0", "-o", "7"}, "offset", "7", "text"},
		{[]string{"admin", "updateTopic", "-t", "T", "-o", "true"}, "order", "true", "text"},
		{[]string{"admin", "cloneGroupOffset", "-s", "a", "-d", "b", "-t", "T", "-o", "false"}, "offline", "false", "text"},
		{[]string{"admin", "msg", "offset", "-t", "T", "--offset", "5", "-o", "json"}, "offset", "5", "json"},
		{[]string{"admin", "topic", "create", "-t", "T", "--order", "-o", "json"}, "order", "true", "json"},
		{[]string{"admin", "topicStatus", "-t", "T", "-o", "json"}, "topic", "T", "json"},
		{[]string{"admin", "-o", "table", "clusterList"}, "cluster", "", "table"},
		// mqadmin's booleans take their value.
		{[]string{"admin", "updateSubGroup", "-g", "G", "-d", "false", "-m", "false"}, "broadcast", "false", "text"},
		{[]string{"admin", "resetOffsetByTime", "-g", "G", "-t", "T", "-s", "now", "-f", "false"}, "force", "false", "text"},
	} {
		c := parsed(t, tt.args...)
		if got := flagValue(t, c, tt.flag); got != tt.want {
			t.Errorf("%s: --%s %q, want %q", strings.Join(tt.args, " "), tt.flag, got, tt.want)
		}
		if got := flagValue(t, c, "output"); got != tt.output {
			t.Errorf("%s: --output %q, want %q", strings.Join(tt.args, " "), got, tt.output)
		}
	}
	// Before, -o was the output format on every verb.
	if _, _, err := runCLI(t, "admin", "queryMsgByOffset", "-n", "127.0.0.1:1", "-t", "T", "-o", "5"); err == nil || strings.Contains(err.Error(), "--output") {
		t.Errorf("queryMsgByOffset -o 5 read as the output format: %v", err)
	}
}

// TestClientDefaults: admin and bench take the name servers from
// NAMESRV_ADDR, else the local one, and both read --output text, table
// and json.
func TestClientDefaults(t *testing.T) {
	for _, env := range []string{"", "10.0.0.1:9876;10.0.0.2:9876"} {
		t.Setenv("NAMESRV_ADDR", env)
		want := env
		if env == "" {
			want = localNamesrv
		}
		for _, args := range [][]string{{"admin", "topicList"}, {"admin", "raft", "status"}, {"bench", "produce"}, {"bench", "consume"}} {
			if got := flagValue(t, parsed(t, args...), "namesrv"); got != want {
				t.Errorf("NAMESRV_ADDR=%q %s: -n %q, want %q", env, strings.Join(args, " "), got, want)
			}
		}
	}
	for _, v := range []string{"text", "table", "json"} {
		if _, err := outputJSON(v); err != nil {
			t.Errorf("--output %s: %v", v, err)
		}
		bf := &benchFlags{output: v}
		if err := bf.checkOutput(); err != nil || bf.output != map[bool]string{true: "json", false: "text"}[v == "json"] {
			t.Errorf("bench --output %s: %q %v", v, bf.output, err)
		}
	}
	if _, err := outputJSON("yaml"); err == nil {
		t.Error("--output yaml accepted")
	}
}

// TestREADMEMqadminTable: README's table of mqadmin's verbs names every
// one of them.
func TestREADMEMqadminTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## mqadmin's verbs")
	if i < 0 {
		t.Fatal("README has no section on mqadmin's verbs")
	}
	s = s[i+3:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	for _, e := range mqadminTable() {
		if !strings.Contains(s, "`"+e.name+"`") {
			t.Errorf("README's table lacks %s", e.name)
		}
	}
}
