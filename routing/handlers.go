package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// codeStaleTerm answers a registration refused by fencing. No Java code
// means exactly that; NOT_LEADER_FOR_QUEUE reads right in a broker's log
// and no standard client ever sees it from a name server.
const codeStaleTerm = remoting.NotLeaderForQueue

// codeRefused answers a registration or unregistration the name server
// will not honour for who sent it (unsigned, wrongly signed, stale,
// replayed, or an unregister from a stranger's connection).
const codeRefused = remoting.NoPermission

// Ext field names the name server's logs and errors quote; the headers
// themselves are package protocol's.
const (
	extBrokerName       = "brokerName"
	extBrokerAddr       = "brokerAddr"
	extHeartbeatTimeout = "heartbeatTimeoutMillis"
)

// handle registers the request handlers on rs, each behind its access
// rule (acl.go).
func (s *Server) handle(rs *remoting.Server) error {
	for _, h := range []struct {
		code int32
		pool string
		f    remoting.HandlerFunc
	}{
		{remoting.RegisterBroker, PoolHeartbeat, s.serveRegister},
		{remoting.UnregisterBroker, PoolHeartbeat, s.serveUnregister},
		{remoting.GetRouteInfoByTopic, remoting.DefaultPool, s.serveRoute},
		{remoting.GetBrokerClusterInfo, remoting.DefaultPool, s.serveClusterInfo},
		{remoting.GetAllTopicListFromNameServer, remoting.DefaultPool, s.serveTopicList},
		{remoting.GetTopicsByCluster, remoting.DefaultPool, s.serveTopicsByCluster},
		{remoting.GetSystemTopicListFromNS, remoting.DefaultPool, s.serveSystemTopics},
		{remoting.DeleteTopicInNamesrv, remoting.DefaultPool, s.serveDeleteTopic},
		{remoting.PutKVConfig, remoting.DefaultPool, s.servePutKV},
		{remoting.GetKVConfig, remoting.DefaultPool, s.serveGetKV},
		{remoting.DeleteKVConfig, remoting.DefaultPool, s.serveDeleteKV},
		{remoting.GetKVListByNamespace, remoting.DefaultPool, s.serveKVList},
		{remoting.WipeWritePermOfBroker, remoting.DefaultPool, s.serveWritePerm},
		{remoting.AddWritePermOfBroker, remoting.DefaultPool, s.serveWritePerm},
	} {
		f, err := s.withACL(h.code, h.f)
		if err != nil {
			return err
		}
		rs.Handle(h.code, h.pool, f)
	}
	return nil
}

// registerHeader is the decoded ext of REGISTER_BROKER.
type registerHeader struct {
	clusterName, brokerName, brokerAddr, haServerAddr string
	brokerID                                          int64
	timeout                                           time.Duration // 0: the server's default
	compressed                                        bool
	bodyCRC                                           uint32 // 0: unchecked
}

// parseRegisterHeader reads the REGISTER_BROKER ext fields. Errors wrap
// ErrBadRequest.
func parseRegisterHeader(ext map[string]string) (registerHeader, error) {
	var p protocol.RegisterBrokerRequestHeader
	if err := p.Decode(ext); err != nil {
		return registerHeader{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if ms := p.HeartbeatTimeoutMillis; ms < 0 || ms > MaxHeartbeatTimeout.Milliseconds() {
		return registerHeader{}, fmt.Errorf("%w: %s %d outside [0, %d]", ErrBadRequest, extHeartbeatTimeout, ms, MaxHeartbeatTimeout.Milliseconds())
	}
	return registerHeader{
		clusterName: p.ClusterName, brokerName: p.BrokerName, brokerAddr: p.BrokerAddr, haServerAddr: p.HAServerAddr,
		brokerID: p.BrokerID, timeout: time.Duration(p.HeartbeatTimeoutMillis) * time.Millisecond,
		compressed: p.Compressed, bodyCRC: uint32(p.BodyCRC32),
	}, nil
}

// bodyCRC32 is Java's UtilAll.crc32: CRC-32 (IEEE) with the sign bit
// cleared.
func bodyCRC32(body []byte) uint32 { return crc32.ChecksumIEEE(body) & 0x7FFFFFFF }

// serveRegister handles REGISTER_BROKER (103) on PoolHeartbeat.
func (s *Server) serveRegister(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	res, err := s.register(req.ExtFields, req.Body, conn)
	if err != nil {
		s.counts.refused.Add(1)
	} else {
		s.counts.registrations.Add(1)
	}
	switch {
	case errors.Is(err, ErrStaleTerm):
		s.log.Warn("registration fenced", "peer", conn.RemoteAddr(), "error", err)
		return remoting.NewResponse(req, codeStaleTerm, err.Error())
	case errors.Is(err, ErrUnauthenticated):
		s.limit.Warn(s.log, "register-unauthenticated", "registration refused: not signed with the cluster secret",
			"peer", conn.RemoteAddr(), "broker", req.ExtFields[extBrokerName], "addr", req.ExtFields[extBrokerAddr], "error", err)
		return remoting.NewResponse(req, codeRefused, err.Error())
	case errors.Is(err, ErrBusy):
		s.limit.Warn(s.log, "register-busy", "registration refused: too many awaiting confirmation", "peer", conn.RemoteAddr())
		return remoting.NewResponse(req, remoting.SystemBusy, err.Error())
	case err != nil:
		return s.reject(conn, req, err)
	}
	// The connection may have closed while the request waited in the
	// queue; its close hook has then already run, so undo the member it
	// could not see.
	if !res.Pending && conn.Closed() {
		s.table.RemoveConn(conn.ID())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = (&protocol.RegisterBrokerResponseHeader{MasterAddr: res.MasterAddr, HAServerAddr: res.HAServerAddr}).Encode()
	return resp
}

// authenticate checks a request's signature and freshness when the name
// server has a secret, and reports whether the request is signed with it.
// Without a secret nothing is checked and nothing is trusted. Errors wrap
// ErrUnauthenticated.
func (s *Server) authenticate(ext map[string]string, body []byte) (bool, error) {
	if s.cfg.Secret == "" {
		return false, nil
	}
	// A request an account signed too carries the cluster signature in
	// its own field (acl.go, extClusterSig).
	ext = clusterSigned(ext)
	_, err := auth.Verify(ext, body, func(ak string) (string, bool) { return s.cfg.Secret, ak == auth.ClusterAccessKey })
	if err == nil {
		err = s.guard.Check(ext, s.clock.Now())
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return true, nil
}

// register decodes and applies one REGISTER_BROKER: its ext fields, its
// body, the connection it came on. It is the whole request path short of
// the network, so it is what the fuzz target drives. A registration that
// must be confirmed first is queued (the result says Pending) and applied
// by a confirmation worker once its node confirms it.
func (s *Server) register(ext map[string]string, rawBody []byte, conn connState) (RegisterResult, error) {
	signed, err := s.authenticate(ext, rawBody)
	if err != nil {
		return RegisterResult{}, err
	}
	h, err := parseRegisterHeader(ext)
	if err != nil {
		return RegisterResult{}, err
	}
	if h.bodyCRC != 0 {
		if got := bodyCRC32(rawBody); got != h.bodyCRC {
			return RegisterResult{}, fmt.Errorf("%w: header says %d, body has %d", ErrBodyCRC, h.bodyCRC, got)
		}
	}
	body, err := protocol.DecodeRegisterBody(rawBody, h.compressed)
	if err != nil {
		return RegisterResult{}, err
	}
	wrapper := body.TopicConfigSerializeWrapper
	now := s.clock.Now()
	reg := Registration{
		ClusterName:  h.clusterName,
		BrokerName:   h.brokerName,
		BrokerAddr:   h.brokerAddr,
		HAServerAddr: h.haServerAddr,
		BrokerID:     h.brokerID,
		DataVersion:  wrapper.DataVersion,
		Topics:       wrapper.TopicConfigTable,
		Timeout:      h.timeout,
		ConnID:       conn.ID(),
		Now:          now,
		TrustTopics:  signed || (s.cfg.Secret == "" && s.inGrace(now)),
	}
	res, err := s.table.Register(reg)
	if err != nil {
		return res, err
	}
	if res.Pending {
		if err := s.confirm.add(reg, conn); err != nil {
			return res, err
		}
		s.log.Debug("registration awaiting confirmation by the node", "broker", h.brokerName, "id", h.brokerID,
			"addr", h.brokerAddr, "term", reg.Term())
		return res, nil
	}
	s.logApplied(reg, res)
	return res, nil
}

// applyConfirmed applies a registration its node has confirmed (on a
// confirmation worker). The table fences it again: the group may have
// moved on while the node was asked.
func (s *Server) applyConfirmed(reg Registration, conn connState) {
	reg.Confirmed = true
	reg.Now = s.clock.Now()
	res, err := s.table.Register(reg)
	if err != nil {
		s.log.Warn("confirmed registration fenced", "broker", reg.BrokerName, "id", reg.BrokerID,
			"addr", reg.BrokerAddr, "term", reg.Term(), "error", err)
		return
	}
	if conn.Closed() {
		s.table.RemoveConn(conn.ID())
	}
	s.logApplied(reg, res)
}

// claimRefused logs a registration its node did not confirm.
func (s *Server) claimRefused(reg Registration, err error) {
	s.limit.Warn(s.log, "claim-refused", "registration dropped: the claimed node did not confirm it",
		"cluster", reg.ClusterName, "broker", reg.BrokerName, "id", reg.BrokerID, "addr", reg.BrokerAddr,
		"term", reg.Term(), "error", err)
}

// logApplied logs what an applied registration changed.
func (s *Server) logApplied(reg Registration, res RegisterResult) {
	for _, m := range res.Removed {
		s.log.Info("broker displaced", append(memberFields(m), "by", reg.BrokerAddr, "by_id", reg.BrokerID)...)
	}
	if res.NewMember {
		s.log.Info("broker registered", "cluster", reg.ClusterName, "broker", reg.BrokerName, "id", reg.BrokerID,
			"addr", reg.BrokerAddr, "term", reg.Term(), "topics", len(reg.Topics))
	}
	if len(res.TopicsRefused) > 0 {
		s.limit.Warn(s.log, "topics-refused", "topics served by other groups not taken from a new group (configure a cluster secret to share them)",
			"broker", reg.BrokerName, "addr", reg.BrokerAddr, "topics", res.TopicsRefused)
	}
}

// serveUnregister handles UNREGISTER_BROKER (104) on PoolHeartbeat. It is
// honoured only on a connection the member registered on, or signed with
// the cluster secret.
func (s *Server) serveUnregister(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.UnregisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	name, addr, id := h.BrokerName, h.BrokerAddr, h.BrokerID
	signed, err := s.authenticate(req.ExtFields, req.Body)
	if err == nil {
		s.confirm.drop(pendingKey{name, addr}, conn.ID(), signed)
		var m Member
		var ok bool
		if m, ok, err = s.table.Unregister(name, addr, conn.ID(), signed); ok {
			s.log.Info("broker unregistered", append(memberFields(m), "claimed_id", id)...)
		}
	}
	if err != nil {
		s.limit.Warn(s.log, "unregister-refused", "unregistration refused", "peer", conn.RemoteAddr(),
			"broker", name, "addr", addr, "error", err)
		return remoting.NewResponse(req, codeRefused, err.Error())
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// serveRoute handles GET_ROUTEINFO_BY_TOPIC (105).
func (s *Server) serveRoute(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	topic := h.Topic
	route, ok := s.table.Route(topic)
	if !ok {
		return remoting.NewResponse(req, remoting.TopicNotExist,
			"No topic route info in name server for the topic: "+topic)
	}
	// An ordered topic's broker list is the KV configuration's (Java's
	// name server answers it from namespace ORDER_TOPIC_CONFIG).
	if conf, ok := s.kv.get(protocol.NamespaceOrderTopicConfig, topic); ok {
		route.OrderTopicConf = conf
	}
	return s.jsonResponse(conn, req, route)
}

// serveClusterInfo handles GET_BROKER_CLUSTER_INFO (106).
func (s *Server) serveClusterInfo(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return s.jsonResponse(conn, req, s.table.ClusterInfo())
}

// serveTopicList handles GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
func (s *Server) serveTopicList(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return s.jsonResponse(conn, req, protocol.TopicList{TopicList: s.table.Topics()})
}

// serveTopicsByCluster handles GET_TOPICS_BY_CLUSTER (224): ext cluster;
// the answer is the TopicList of the topics the cluster's groups serve
// (empty for a cluster the name server does not know, as Java's).
func (s *Server) serveTopicsByCluster(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.GetTopicsByClusterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	topics := s.table.TopicsOfCluster(h.Cluster)
	if topics == nil {
		topics = []string{}
	}
	return s.jsonResponse(conn, req, protocol.TopicList{TopicList: topics})
}

// serveSystemTopics handles GET_SYSTEM_TOPIC_LIST_FROM_NS (304) as Java's
// name server does: the cluster names and the broker group names (tools
// hide them from topic lists), and a broker's address to ask for the
// brokers' own system topics (GET_SYSTEM_TOPIC_LIST_FROM_BROKER).
func (s *Server) serveSystemTopics(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	info := s.table.ClusterInfo()
	names := map[string]struct{}{}
	for cluster, groups := range info.ClusterAddrTable {
		names[cluster] = struct{}{}
		for _, g := range groups {
			names[g] = struct{}{}
		}
	}
	list := protocol.TopicList{TopicList: slices.Sorted(maps.Keys(names))}
	for _, name := range slices.Sorted(maps.Keys(info.BrokerAddrTable)) {
		addrs := info.BrokerAddrTable[name].BrokerAddrs
		if len(addrs) > 0 {
			list.BrokerAddr = addrs[slices.Min(slices.Collect(maps.Keys(addrs)))]
			break
		}
	}
	return s.jsonResponse(conn, req, list)
}

// serveDeleteTopic handles DELETE_TOPIC_IN_NAMESRV (216): ext topic, and
// optionally clusterName to delete it from that cluster's groups only.
func (s *Server) serveDeleteTopic(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.DeleteTopicFromNamesrvRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	topic, cluster := h.Topic, h.ClusterName
	n := s.table.DeleteTopic(topic, cluster)
	s.log.Info("topic deleted", "topic", topic, "cluster", cluster, "groups", n, "peer", conn.RemoteAddr())
	return remoting.NewResponse(req, remoting.Success, "")
}

// jsonResponse answers Success with v as a compact JSON body.
func (s *Server) jsonResponse(conn *remoting.Conn, req *remoting.Command, v any) *remoting.Command {
	body, err := json.Marshal(v)
	if err != nil {
		return s.reject(conn, req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// reject answers a request the server cannot serve with SYSTEM_ERROR and
// the reason, as Java's name server does, and logs the peer.
func (s *Server) reject(conn *remoting.Conn, req *remoting.Command, err error) *remoting.Command {
	s.log.Warn("request rejected", "peer", conn.RemoteAddr(), "request", remoting.RequestCodeName(req.Code), "error", err)
	return remoting.NewResponse(req, remoting.SystemError, err.Error())
}
