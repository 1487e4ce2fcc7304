package broker

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// brokerVersionDesc is the version ledgermq reports to admin tools
	// (the wire version remoting.Version is V5_3_3's ordinal).
	brokerVersionDesc = "V5_3_3"
	// maxQueryMessages bounds QUERY_MESSAGE's maxNum (Java
	// maxMsgsNumBatch).
	maxQueryMessages = 64
	// maxQueryBytes bounds a QUERY_MESSAGE body well below a frame.
	maxQueryBytes = 8 << 20
)

// updateAndCreateTopic serves UPDATE_AND_CREATE_TOPIC (17): ext topic,
// readQueueNums, writeQueueNums, perm, topicFilterType, topicSysFlag,
// order (defaults 8, 8, 6, SINGLE_TAG, 0, false, as the Go admin's). The
// config is proposed unless it is already in force, and the name servers
// learn it before the answer.
func (b *Broker) updateAndCreateTopic(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	topic := h.Topic
	if err := validateTopic(topic); err != nil {
		return nil, err
	}
	if topic == autoCreateTopic && !b.cfg.AutoCreateTopic {
		return nil, fmt.Errorf("%w: the topic[%s] is conflict with system topic", ErrInvalidParameter, topic)
	}
	tc := metadata.TopicConfig{TopicName: topic, TopicFilterType: protocol.FilterSingleTag, ReadQueueNums: h.ReadQueueNums,
		WriteQueueNums: h.WriteQueueNums, Perm: h.Perm, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if f := h.TopicFilterType; f != "" {
		if f != protocol.FilterSingleTag && f != protocol.FilterMultiTag {
			return nil, fmt.Errorf("%w: topicFilterType %q", ErrInvalidParameter, f)
		}
		tc.TopicFilterType = f
	}
	for _, n := range []int32{tc.ReadQueueNums, tc.WriteQueueNums} {
		if n < 0 || n > protocol.MaxQueueNums {
			return nil, fmt.Errorf("%w: queue count %d outside 0..%d", ErrInvalidParameter, n, protocol.MaxQueueNums)
		}
	}
	if tc.ReadQueueNums == 0 && tc.WriteQueueNums == 0 {
		return nil, fmt.Errorf("%w: topic %s needs at least one queue", ErrInvalidParameter, topic)
	}
	if tc.Perm < 0 || tc.Perm > metadata.PermPriority|metadata.PermRead|metadata.PermWrite|metadata.PermInherit {
		return nil, fmt.Errorf("%w: perm %d", ErrInvalidParameter, tc.Perm)
	}
	cur, ok := b.group.Metadata().Topic(topic)
	attrs, err := changedAttributes(cur.Attributes, h.Attributes)
	if err != nil {
		return nil, err
	}
	tc.Attributes = attrs
	if !ok || !sameTopic(cur, tc) {
		pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
		defer cancel()
		if err := b.group.ProposeMetadata(pctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &tc}); err != nil {
			return nil, err
		}
		b.log.Info("topic created or updated", "topic", topic, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums, "perm", tc.Perm)
		b.awaitRegister(ctx)
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

func sameTopic(a, b metadata.TopicConfig) bool {
	return a.TopicName == b.TopicName && a.ReadQueueNums == b.ReadQueueNums && a.WriteQueueNums == b.WriteQueueNums &&
		a.Perm == b.Perm && a.TopicFilterType == b.TopicFilterType && a.TopicSysFlag == b.TopicSysFlag && a.Order == b.Order &&
		maps.Equal(a.Attributes, b.Attributes)
}

// changedAttributes applies a request's attribute changes (RocketMQ 5's
// "+key=value,-key") to a topic's attributes, which an update without
// changes keeps. The values of the attributes the broker reads are
// checked (dedup.window: duplicates.go); others are kept as given.
func changedAttributes(cur map[string]string, changes string) (map[string]string, error) {
	set, remove, err := protocol.ParseAttributes(changes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	out := maps.Clone(cur)
	for _, k := range remove {
		delete(out, strings.TrimPrefix(k, "+"))
	}
	for k, v := range set {
		if k == AttrDuplicateWindow {
			if _, ok := parseWindow(v); !ok {
				return nil, fmt.Errorf("%w: attribute %s=%q is not a duration (30s, 0 or off)", ErrInvalidParameter, k, v)
			}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// deleteTopic serves DELETE_TOPIC_IN_BROKER (215): ext topic. The topic
// leaves the replicated metadata (its config and every group's offsets on
// it) and the name servers at once. Its stored queues stay on every
// replica: dropping them must happen in raft apply order on each node, or
// queue offsets of a re-created topic would differ between replicas, and
// the raft group's FSM does not do that yet (see doc.go).
func (b *Broker) deleteTopic(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	topic := h.Topic
	if err := validateTopic(topic); err != nil {
		return nil, err
	}
	if _, ok := b.group.Metadata().Topic(topic); ok {
		pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
		defer cancel()
		if err := b.group.ProposeMetadata(pctx, metadata.Op{Kind: metadata.OpDeleteTopic, Name: topic}); err != nil {
			return nil, err
		}
		b.log.Info("topic deleted", "topic", topic)
		b.awaitRegister(ctx)
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// getAllTopicConfig serves GET_ALL_TOPIC_CONFIG (21) from this node's
// replica: body {"topicConfigTable":{...},"dataVersion":{...}} (Java's
// TopicConfigSerializeWrapper), the table this node registers.
func (b *Broker) getAllTopicConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topics, dv := b.topicTable()
	w := protocol.TopicConfigWrapper{TopicConfigTable: make(map[string]protocol.TopicConfig, len(topics)), DataVersion: dv}
	for _, t := range topics {
		if t.Attributes == nil {
			t.Attributes = map[string]string{}
		}
		w.TopicConfigTable[t.TopicName] = t
	}
	return jsonResponse(req, w)
}

// runtimeInfo is the GET_BROKER_RUNTIME_INFO table. Keys are those Java's
// admin tools (mqadmin clusterList/brokerStatus, the dashboard) read;
// values are decimal strings so that the tools' Long.parseLong and
// Double.parseDouble succeed. Counters run since this node's start
// ("today morning" and "yesterday morning" are 0); TPS values are sampled
// every registration round.
func (b *Broker) runtimeInfo() map[string]string {
	p := b.prod
	now := b.cfg.Clock()
	p.mu.Lock()
	tps := p.putTPS
	p.mu.Unlock()
	st := b.group.Store()
	role := b.group.Role()
	brokerRole := "SLAVE"
	if role.Role == dledger.RoleLeader {
		brokerRole = "SYNC_MASTER"
	}
	earliest := int64(0)
	if m, err := st.MessageAt(st.MinPhysicalOffset()); err == nil {
		earliest = m.StoreTimestamp
	}
	pools := b.srv.PoolStats()
	up := now.Sub(p.bootTime)
	tpsText := strconv.FormatFloat(tps, 'f', 2, 64)
	t := map[string]string{
		"brokerVersionDesc":               brokerVersionDesc,
		"brokerVersion":                   strconv.Itoa(int(remoting.Version)),
		"brokerRole":                      brokerRole,
		"raftRole":                        role.Role,
		"raftTerm":                        strconv.FormatUint(role.Term, 10),
		"raftLeader":                      role.LeaderID,
		"bootTimestamp":                   strconv.FormatInt(p.bootTime.UnixMilli(), 10),
		"runtime":                         formatRuntime(up),
		"msgPutTotalTodayNow":             strconv.FormatInt(p.putTotal.Load(), 10),
		"msgPutTotalTodayMorning":         "0",
		"msgPutTotalYesterdayMorning":     "0",
		"msgGetTotalTodayNow":             "0",
		"msgGetTotalTodayMorning":         "0",
		"msgGetTotalYesterdayMorning":     "0",
		"putTps":                          tpsText + " " + tpsText + " " + tpsText,
		"getTransferredTps":               "0.00 0.00 0.00",
		"commitLogMinOffset":              strconv.FormatInt(st.MinPhysicalOffset(), 10),
		"commitLogMaxOffset":              strconv.FormatInt(st.MaxPhysicalOffset(), 10),
		"earliestMessageTimeStamp":        strconv.FormatInt(earliest, 10),
		"dispatchBehindBytes":             "0",
		"pageCacheLockTimeMills":          "0",
		"commitLogDiskRatio":              "0.0",
		"sendThreadPoolQueueSize":         strconv.Itoa(pools[poolSend].Queued),
		"sendThreadPoolQueueCapacity":     strconv.Itoa(pools[poolSend].QueueSize),
		"pullThreadPoolQueueSize":         strconv.Itoa(pools[poolPull].Queued),
		"pullThreadPoolQueueCapacity":     strconv.Itoa(pools[poolPull].QueueSize),
		"queryThreadPoolQueueSize":        strconv.Itoa(pools[poolAdmin].Queued),
		"queryThreadPoolQueueCapacity":    strconv.Itoa(pools[poolAdmin].QueueSize),
		"startAcceptSendRequestTimeStamp": "0",
	}
	b.addACLInfo(t)
	return t
}

// formatRuntime renders an uptime as Java's broker does.
func formatRuntime(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

// getBrokerRuntimeInfo serves GET_BROKER_RUNTIME_INFO (28) on any node.
func (b *Broker) getBrokerRuntimeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	t := protocol.KVTable{Table: b.runtimeInfo()}
	return bodyResponse(req, t.Encode)
}

// getBrokerConfig serves GET_BROKER_CONFIG (26): the node's settings as
// properties text, as Java's broker answers it (rocketmq-dashboard and
// rocketmq-exporter read it); ext version is a DataVersion. Any node
// answers with its own settings.
func (b *Broker) getBrokerConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = protocol.EncodeBrokerConfig(b.settings())
	resp.SetExt("version", fmt.Sprintf(`{"counter":0,"timestamp":%d}`, b.prod.bootTime.UnixMilli()))
	return resp
}

// GRPCEndpointKey is the key of GET_BROKER_CONFIG's answer that
// publishes Config.GRPCEndpoint. RocketMQ's tools show the answer's keys
// and read only those they know, so they pass over it.
const GRPCEndpointKey = "grpcEndpoint"

// settings is Config.Settings, or, for a broker that was given none (one
// embedded in a program rather than started from a config file), the
// RocketMQ keys of what its Config says; with GRPCEndpointKey when the
// node has a gRPC port, and the maximum message size (where it is listed)
// as the group has it.
func (b *Broker) settings() map[string]string {
	out := maps.Clone(b.configSettings())
	if b.cfg.GRPCEndpoint != "" {
		out[GRPCEndpointKey] = b.cfg.GRPCEndpoint
	}
	// The limit in force: the group's (UPDATE_BROKER_CONFIG may raise it).
	for _, k := range []string{"maxMessageSize", "max_message_size"} {
		if _, ok := out[k]; ok {
			out[k] = strconv.Itoa(b.maxMessageSize())
		}
	}
	return out
}

// configSettings is Config.Settings, or the RocketMQ keys of the Config.
func (b *Broker) configSettings() map[string]string {
	if len(b.cfg.Settings) > 0 {
		return b.cfg.Settings
	}
	c := b.cfg
	out := map[string]string{
		"brokerClusterName":           c.ClusterName,
		"brokerName":                  c.BrokerName,
		"namesrvAddr":                 strings.Join(c.NamesrvAddrs, ";"),
		"autoCreateTopicEnable":       strconv.FormatBool(c.AutoCreateTopic),
		"autoCreateSubscriptionGroup": strconv.FormatBool(c.AutoCreateSubscriptionGroup),
		"defaultTopicQueueNums":       strconv.Itoa(int(c.DefaultTopicQueueNums)),
		"maxMessageSize":              strconv.Itoa(c.MaxMessageSize),
		"enableDLegerCommitLog":       "true",
		"dLegerGroup":                 c.BrokerName,
		"dLegerSelfId":                c.NodeID,
	}
	if host, port, err := net.SplitHostPort(c.AdvertiseAddr); err == nil {
		out["brokerIP1"], out["listenPort"] = host, port
	}
	return out
}

// getSystemTopics serves GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305): the
// topics the broker writes itself (schedule, transaction and timer
// topics), the auto-create template and the cluster's reply topic, which
// tools hide from topic lists, as Java's broker answers its system topic
// set.
func (b *Broker) getSystemTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topics := []string{autoCreateTopic, b.replyTopic()}
	for t := range systemTopics {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	return jsonResponse(req, protocol.TopicList{TopicList: topics})
}

// viewMessageByID serves VIEW_MESSAGE_BY_ID (33): ext offset (the
// commitlog offset of an offset message id) → body = that stored record.
// Any replica answers: offsets are the same on every node.
func (b *Broker) viewMessageByID(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ViewMessageRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	off := h.Offset
	m, err := b.group.Store().MessageAt(off)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("can not find message by the offset %d: %v", off, err))
	}
	rec, err := message.AppendRecord(nil, m)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = rec
	return resp
}

// queryMessage serves QUERY_MESSAGE (12): ext topic, key, maxNum,
// beginTimestamp, endTimestamp → body = the matching stored records
// (by KEYS or UNIQ_KEY, newest first, at most 64 and 8 MiB), ext
// indexLastUpdateTimestamp and indexLastUpdatePhyoffset (the newest store
// time and largest offset among the results). No match is QUERY_NOT_FOUND.
func (b *Broker) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.QueryMessageRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	topic, key, maxNum, begin, end := h.Topic, h.Key, h.MaxNum, h.BeginTimestamp, h.EndTimestamp
	if maxNum <= 0 || maxNum > maxQueryMessages {
		maxNum = maxQueryMessages
	}
	msgs, err := b.group.Store().QueryByKey(topic, key, int(maxNum), begin, end)
	if err != nil {
		return errorResponse(req, err)
	}
	var body []byte
	var lastTS, lastPhy int64
	for _, m := range msgs {
		rec, err := message.AppendRecord(nil, m)
		if err != nil {
			b.log.Warn("query: cannot re-encode a stored record", "offset", m.PhysicalOffset, "error", err)
			continue
		}
		if len(body)+len(rec) > maxQueryBytes {
			break
		}
		body = append(body, rec...)
		lastTS = max(lastTS, m.StoreTimestamp)
		lastPhy = max(lastPhy, m.PhysicalOffset)
	}
	if len(body) == 0 {
		return errorResponse(req, fmt.Errorf("%w: can not find message, maybe time range not correct", ErrNotFound))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = (&protocol.QueryMessageResponseHeader{IndexLastUpdateTimestamp: lastTS, IndexLastUpdatePhyoffset: lastPhy}).Encode()
	resp.Body = body
	return resp
}
