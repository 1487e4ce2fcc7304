package main

// RocketMQ 4.9's mqadmin verbs under `ledgermq admin`: every verb its
// mqadmin lists is here, served or refused.
//
// A served verb is built by the same function as its ledgermq verb (so
// both take the same flags), with what mqadmin's flags mean on top:
// mqadminVerb(use) tells the builder it makes the mqadmin name, and then
//
//   - a short flag is mqadmin's: -o is the verb's own where mqadmin has one
//     (queryMsgByOffset -o OFFSET, consumeMessage -o OFFSET, updateTopic
//     -o true|false); --output stays the output format;
//   - a boolean takes its value, as mqadmin's do (updateSubGroup -d false),
//     where ledgermq's verbs take pflag's --flag / --flag=false;
//   - a flag of mqadmin's that means nothing here (display options such as
//     topicRoute -l) is accepted and says so in its usage.
//
// A refused verb takes any words, exits 1 and says what to use instead.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// errNotServed is a refused mqadmin verb's error.
var errNotServed = errors.New("not served by ledgermq")

// mqadminEntry is one mqadmin verb: mk serves it, else instead says what
// to use and why.
type mqadminEntry struct {
	name    string
	mk      verb
	instead string
	why     string
}

// mqadminTable is every verb of RocketMQ 4.9's mqadmin (4.9.0 to 4.9.8;
// getAccessConfigSubCommand is 4.9.0's name of getAclConfig). README's
// table is this one.
func mqadminTable() []mqadminEntry {
	const (
		retention = "retention deletes expired CommitLog segments and their queues by itself (store.file_reserved_time, store.delete_when, store.disk_max_used_space_ratio); admin deleteTopic -t TOPIC removes a topic"
		latency   = "ledgermq bench latency -n NAMESRV --topic TOPIC --count N (send latency percentiles)"
		aclFile   = "the ACL is the plain_acl.yml of acl_file: edit it on any node and the group replicates it"
		aclShow   = "admin brokerStatus shows each node's aclHash and aclIndex; the rules are the plain_acl.yml of acl_file"
		nsConfig  = "a name server takes its settings from flags (ledgermq namesrv --help; --check-config prints them) and serves /status on --http"
		brConfig  = "ledgermq broker --config FILE --check-config prints a node's effective settings and where each came from (ledgermq dev writes DIR/nN.conf)"
	)
	return []mqadminEntry{
		{name: "updateTopic", mk: newTopicCreateCmd},
		{name: "deleteTopic", mk: newTopicDeleteCmd},
		{name: "updateSubGroup", mk: newGroupCreateCmd},
		{name: "deleteSubGroup", mk: newGroupDeleteCmd},
		{name: "updateBrokerConfig", instead: "change the node's config file, environment or flags and restart the nodes one at a time (admin cluster rolling-restart); " + brConfig,
			why: "a node reads its settings when it starts; brokers do not serve UPDATE_BROKER_CONFIG"},
		{name: "updateTopicPerm", instead: "admin updateTopic -t TOPIC -r R -w W -p PERM, with the queue counts admin topicRoute shows (updateTopic sets all three)",
			why: "permissions are changed by updating the topic"},
		{name: "topicRoute", mk: newTopicRouteCmd},
		{name: "topicStatus", mk: newTopicStatusCmd},
		{name: "topicClusterList", mk: newTopicClustersCmd},
		{name: "brokerStatus", mk: newBrokerStatusCmd},
		{name: "queryMsgById", mk: newMsgIDCmd},
		{name: "queryMsgByKey", mk: newMsgKeyCmd},
		{name: "queryMsgByUniqueKey", mk: newMsgIDCmd},
		{name: "queryMsgByOffset", mk: newMsgOffsetCmd},
		{name: "queryMsgTraceById", mk: newMsgTraceCmd},
		{name: "printMsg", mk: newMsgTimeCmd},
		{name: "printMsgByQueue", mk: newMsgQueueCmd},
		{name: "sendMsgStatus", instead: latency, why: "it measures sends"},
		{name: "brokerConsumeStats", mk: newBrokerConsumeStatsCmd},
		{name: "producerConnection", mk: newProducerConnectionCmd},
		{name: "consumerConnection", mk: newGroupConnectionsCmd},
		{name: "consumerProgress", mk: newGroupProgressCmd},
		{name: "consumerStatus", instead: "admin consumerConnection -g GROUP (clients, subscriptions) and admin consumerProgress -g GROUP (offsets, lag)",
			why: "the CLI does not show a consumer's running state yet (brokers relay GET_CONSUMER_RUNNING_INFO to consumers for tools that do)"},
		{name: "cloneGroupOffset", mk: newCloneOffsetCmd},
		{name: "producer", instead: "admin producerConnection -g GROUP -t TOPIC", why: "producers are listed by group"},
		{name: "clusterList", mk: newClusterListCmd},
		{name: "topicList", mk: newTopicListCmd},
		{name: "updateKvConfig", mk: newKVPutCmd},
		{name: "deleteKvConfig", mk: newKVDeleteCmd},
		{name: "wipeWritePerm", mk: func(af *adminFlags, use string) *cobra.Command { return newWritePermCmd(af, use, false) }},
		{name: "addWritePerm", mk: func(af *adminFlags, use string) *cobra.Command { return newWritePermCmd(af, use, true) }},
		{name: "resetOffsetByTime", mk: newOffsetResetCmd},
		{name: "skipAccumulatedMessage", mk: newOffsetSkipCmd},
		{name: "updateOrderConf", mk: newOrderConfCmd},
		{name: "cleanExpiredCQ", instead: retention, why: "there is nothing to clean by hand"},
		{name: "deleteExpiredCommitLog", instead: retention, why: "there is nothing to clean by hand"},
		{name: "cleanUnusedTopic", instead: retention, why: "there is nothing to clean by hand"},
		{name: "startMonitoring", instead: "each node's http address serves Prometheus /metrics (lag, rates, raft) and /readyz",
			why: "monitoring is the nodes' own endpoints"},
		{name: "statsAll", mk: newStatsAllCmd},
		{name: "allocateMQ", instead: "admin consumerConnection -g GROUP lists a group's clients; they share the queues by averaging, as RocketMQ's clients do",
			why: "queue allocation is the clients'"},
		{name: "checkMsgSendRT", instead: latency, why: "it measures sends"},
		{name: "clusterRT", instead: latency, why: "it measures sends"},
		{name: "getNamesrvConfig", instead: nsConfig, why: "name servers do not serve GET_NAMESRV_CONFIG"},
		{name: "updateNamesrvConfig", instead: nsConfig, why: "name servers do not serve UPDATE_NAMESRV_CONFIG"},
		{name: "getBrokerConfig", mk: newBrokerConfigCmd},
		{name: "getConsumerConfig", mk: newGroupConfigCmd},
		{name: "queryCq", mk: newQueryCQCmd},
		{name: "sendMessage", mk: newSendMessageCmd},
		{name: "consumeMessage", mk: newConsumeMessageCmd},
		{name: "updateAclConfig", instead: aclFile, why: "brokers do not serve UPDATE_AND_CREATE_ACL_CONFIG"},
		{name: "deleteAclConfig", instead: aclFile, why: "brokers do not serve DELETE_ACL_CONFIG"},
		{name: "updateGlobalWhiteAddr", instead: aclFile, why: "brokers do not serve UPDATE_GLOBAL_WHITE_ADDRS_CONFIG"},
		{name: "clusterAclConfigVersion", instead: aclShow, why: "brokers do not serve GET_BROKER_CLUSTER_ACL_INFO"},
		{name: "getAclConfig", instead: aclShow, why: "brokers do not serve GET_BROKER_CLUSTER_ACL_CONFIG"},
		{name: "getAccessConfigSubCommand", instead: aclShow, why: "brokers do not serve GET_BROKER_CLUSTER_ACL_CONFIG"},
		{name: "exportMetadata", instead: "admin topic list, admin topicRoute -t TOPIC and admin group list, each with -o json",
			why: "metadata is read verb by verb"},
		{name: "exportConfigs", instead: "admin getBrokerConfig -c CLUSTER -o json (each node's settings); " + brConfig,
			why: "configs are read node by node"},
		{name: "exportMetrics", instead: "each node's /metrics (Prometheus)", why: "metrics are the nodes' own endpoints"},
	}
}

// mqadminVerbs builds every verb of mqadminTable.
func mqadminVerbs(af *adminFlags) []*cobra.Command {
	table := mqadminTable()
	out := make([]*cobra.Command, 0, len(table))
	for _, e := range table {
		if e.mk == nil {
			out = append(out, refusedVerb(e))
			continue
		}
		c := e.mk(af, e.name)
		c.GroupID = groupMqadmin
		out = append(out, c)
	}
	return out
}

// mqadminVerb reports whether use is an mqadmin name: a builder shared by
// a ledgermq verb and an mqadmin one takes mqadmin's flag meanings then.
func mqadminVerb(use string) bool {
	return slices.ContainsFunc(mqadminTable(), func(e mqadminEntry) bool { return e.name == use })
}

// mqShort is shorthand on mqadmin's verbs and none on ledgermq's.
func mqShort(use, shorthand string) string {
	if mqadminVerb(use) {
		return shorthand
	}
	return ""
}

// refusedVerb is an mqadmin verb ledgermq does not serve: any words after
// it (mqadmin's flags included) fail with what to use instead, --help
// says it too.
func refusedVerb(e mqadminEntry) *cobra.Command {
	err := fmt.Errorf("mqadmin's %s is %w: %s; instead: %s", e.name, errNotServed, e.why, e.instead)
	help := func(args []string) bool { return slices.Contains(args, "-h") || slices.Contains(args, "--help") }
	return &cobra.Command{
		Use:                e.name,
		Short:              "not served: " + e.instead,
		Long:               fmt.Sprintf("mqadmin's %s is not served by ledgermq: %s.\n\nInstead: %s.", e.name, e.why, e.instead),
		GroupID:            groupNotServed,
		DisableFlagParsing: true,
		Args: func(_ *cobra.Command, args []string) error {
			if help(args) {
				return nil
			}
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if help(args) {
				return cmd.Help()
			}
			return err
		},
	}
}

// boolArg is a boolean flag that takes its value as mqadmin's do
// (-o true, -d false); pflag's booleans take none (-o=true).
type boolArg struct{ p *bool }

func (b boolArg) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}

func (b boolArg) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*b.p = v
	return nil
}

func (boolArg) Type() string { return "true|false" }

// boolFlag defines a boolean: on an mqadmin verb it takes its value
// (boolArg), on a ledgermq verb it is pflag's.
func boolFlag(f *pflag.FlagSet, use string, p *bool, name, shorthand string, def bool, usage string) {
	if mqadminVerb(use) {
		*p = def
		f.VarP(boolArg{p}, name, shorthand, usage)
		return
	}
	f.BoolVarP(p, name, shorthand, def, usage)
}

// mqNoEffect defines, on an mqadmin verb only, an mqadmin flag that
// changes nothing here (how mqadmin prints), so that mqadmin's command
// lines work; takesValue says whether mqadmin's takes a value.
func mqNoEffect(f *pflag.FlagSet, use, name, shorthand string, takesValue bool, what string) {
	if !mqadminVerb(use) {
		return
	}
	usage := "mqadmin's " + what + "; no effect here"
	if takesValue {
		f.StringP(name, shorthand, "", usage)
		return
	}
	f.BoolP(name, shorthand, false, usage)
}
