package routing

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The name server's admin requests beyond routes, as Java's
// DefaultRequestProcessor serves them: the KV configuration (kv.go) and
// the brokers' write permission in routes.

// servePutKV handles PUT_KV_CONFIG (100): ext namespace, key and value.
func (s *Server) servePutKV(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.KVConfigRequestHeader
	if err := h.DecodePut(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if err := s.kv.put(h.Namespace, h.Key, h.Value); err != nil {
		return s.reject(conn, req, err)
	}
	s.log.Info("KV config put", "namespace", h.Namespace, "key", h.Key, "value", h.Value, "peer", conn.RemoteAddr())
	return remoting.NewResponse(req, remoting.Success, "")
}

// serveGetKV handles GET_KV_CONFIG (101): ext namespace and key; the
// answer's ext value, or QUERY_NOT_FOUND.
func (s *Server) serveGetKV(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.KVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	v, ok := s.kv.get(h.Namespace, h.Key)
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound,
			"No config item, Namespace: "+h.Namespace+" Key: "+h.Key)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = (&protocol.GetKVConfigResponseHeader{Value: v}).Encode()
	return resp
}

// serveDeleteKV handles DELETE_KV_CONFIG (102): ext namespace and key (a
// key that is not there is deleted all the same, as Java's).
func (s *Server) serveDeleteKV(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.KVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if err := s.kv.delete(h.Namespace, h.Key); err != nil {
		return s.reject(conn, req, err)
	}
	s.log.Info("KV config deleted", "namespace", h.Namespace, "key", h.Key, "peer", conn.RemoteAddr())
	return remoting.NewResponse(req, remoting.Success, "")
}

// serveKVList handles GET_KVLIST_BY_NAMESPACE (219): the namespace's
// table as a KVTable body, or QUERY_NOT_FOUND when it has none.
func (s *Server) serveKVList(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.GetKVListByNamespaceRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	t, ok := s.kv.list(h.Namespace)
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound, "No config item, Namespace: "+h.Namespace)
	}
	return s.jsonResponse(conn, req, protocol.KVTable{Table: t})
}

// serveWritePerm handles WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): ext brokerName; every topic's queues of
// that group lose PERM_WRITE, or become readable and writable (6), in the
// routes this name server answers, and the answer's ext wipeTopicCount or
// addTopicCount is how many topics that touched (0 for a group it does
// not know). The change lasts until the group's leader registers a
// changed topic table or a new leader registers (RouteTable.Register),
// as in Java's name server.
func (s *Server) serveWritePerm(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.BrokerPermRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return s.reject(conn, req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	writable := req.Code == remoting.AddWritePermOfBroker
	n := s.table.SetWritePerm(h.BrokerName, writable)
	s.log.Info("write permission of broker changed", "broker", h.BrokerName, "writable", writable, "topics", n, "peer", conn.RemoteAddr())
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = map[string]string{protocol.WritePermCountField(req.Code): strconv.Itoa(n)}
	return resp
}
