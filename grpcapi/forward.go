package grpcapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// Forwarding of the consumer side: POP is served by the group's leader
// (broker/pop.go), so a node that is not the leader relays a consumer's
// ReceiveMessage, AckMessage, ChangeInvisibleDuration and
// ForwardMessageToDeadLetterQueue to the leader's gRPC port when
// Config.Peers names it (clients keep the endpoint of a route for up to
// 30 s after leadership moves). A relayed call carries forwardedHeader,
// and a node never relays such a call again: it answers from its broker.
// With the ACL on it also carries the client's address, signed with the
// cluster secret (relayauth.go), which the leader checks the call from.
// The connections to the leaders are the server's, closed by Stop.

// forwardedHeader marks a call relayed by another node of the group.
const forwardedHeader = "x-ledgermq-forwarded-by"

// leaderClient is a client of the leader's gRPC port when this node
// should relay ctx's call there (it is not the leader, it knows the
// leader's address, the call was not relayed to it), else nil. The
// returned context carries the relay's mark.
func (s *Server) leaderClient(ctx context.Context) (v2pb.MessagingServiceClient, context.Context) {
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get(forwardedHeader)) > 0 {
		return nil, ctx
	}
	id := s.cfg.Broker.LeaderID()
	if id == "" || id == s.cfg.NodeID {
		return nil, ctx
	}
	addr := s.cfg.Peers[id]
	if addr == "" || addr == s.selfEndpoint().String() {
		return nil, ctx
	}
	var peerTLS *tls.Config
	if s.cfg.TLS != nil {
		peerTLS = s.cfg.PeerTLS
		if peerTLS == nil {
			peerTLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	c, err := s.peerClient(addr, peerTLS)
	if err != nil {
		s.log.Warn("no client of the leader's gRPC port", "addr", addr, "error", err)
		return nil, ctx
	}
	out := relayContext(ctx, s.cfg.NodeID)
	// The leader sees this node's address: with the ACL on, the node
	// states the address it checked the call from, signed with the
	// cluster secret (relayauth.go), for a call that carries no signature
	// of its own (one let in by its address). A signed call is checked
	// by its signature at the leader, as before: so a leader of the
	// previous release, which knows no statement, still takes it during a
	// rolling upgrade.
	if from := checkedFrom(ctx); s.cfg.Access != nil && from.IsValid() && !signedCall(ctx) {
		out = nodeStatement(out, from, s.cfg.NodeID, time.Now(), s.cfg.Access.NodeRelaySignature)
	}
	return c, out
}

// peerClient is a client of the gRPC port at addr, over TLS when tlsCfg
// is set. The connection is kept for later calls, until Stop.
func (s *Server) peerClient(addr string, tlsCfg *tls.Config) (v2pb.MessagingServiceClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errors.New("grpcapi: the server is stopping")
	}
	conn := s.peers[addr]
	if conn == nil {
		creds := insecure.NewCredentials()
		if tlsCfg != nil {
			creds = credentials.NewTLS(tlsconf.ForAddr(tlsCfg, addr))
		}
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.cfg.MaxBodySize+1<<20)))
		if err != nil {
			return nil, fmt.Errorf("grpcapi: a client of %s: %w", addr, err)
		}
		if s.peers == nil {
			s.peers = map[string]*grpc.ClientConn{}
		}
		s.peers[addr], conn = c, c
	}
	return v2pb.NewMessagingServiceClient(conn), nil
}

// relayContext is the context of a call relayed on: it carries the
// client's signature (the broker relayed to checks it again) and, when
// by is set, the relay's mark naming the relaying node.
func relayContext(ctx context.Context, by string) context.Context {
	var out []string
	if by != "" {
		out = append(out, forwardedHeader, by)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, k := range []string{mdAuthorization, mdDateTime} {
		if v := md.Get(k); len(v) > 0 {
			out = append(out, k, v[0])
		}
	}
	return metadata.AppendToOutgoingContext(ctx, out...)
}

// closePeers closes the connections to the leaders (Stop).
func (s *Server) closePeers() {
	s.mu.Lock()
	peers := s.peers
	s.peers = nil
	s.mu.Unlock()
	for _, c := range peers {
		_ = c.Close()
	}
}

// relayStatus is the Status of a relay that failed: clients retry it.
func relayStatus(err error) *v2pb.Status {
	return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "relaying to the group's leader: %v", err)
}

// relayReceive relays a ReceiveMessage to the leader and its answers
// back; failed is called when the relay fails.
func relayReceive(ctx context.Context, c v2pb.MessagingServiceClient, req *v2pb.ReceiveMessageRequest,
	stream v2pb.MessagingService_ReceiveMessageServer, failed func()) error {
	up, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		failed()
		return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: relayStatus(err)}})
	}
	sent := false
	for {
		r, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			failed()
			if !sent {
				return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: relayStatus(err)}})
			}
			return fmt.Errorf("grpcapi: relaying a receive from the leader: %w", err)
		}
		if err := stream.Send(r); err != nil {
			return err
		}
		sent = true
	}
}

// consumerTarget is where a consumer call of consumerGroup on topic in
// broker group group goes: a client of the gRPC port to relay it to with
// the context to call it with, or nil to serve it here; or the Status
// refusing it.
func (s *Server) consumerTarget(ctx context.Context, consumerGroup, topic, group string) (v2pb.MessagingServiceClient, context.Context, *v2pb.Status) {
	c, fctx, err := s.be.consumerRelay(ctx, consumerGroup, topic, group)
	switch {
	case errors.Is(err, broker.ErrUnauthenticated), errors.Is(err, acl.ErrDenied):
		// Refused by the rules of the group the call goes to: the
		// caller is known (it passed the port's check), so FORBIDDEN.
		return nil, ctx, newStatus(v2pb.Code_FORBIDDEN, "%v", err)
	case err != nil:
		return nil, ctx, popStatus(err)
	case c == nil && s.be.popper() == nil:
		return nil, ctx, newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "no broker group serves %s here", topic)
	}
	return c, fctx, nil
}

// handleGroup is the broker group a receipt handle was given by ("" when
// the handle does not parse: the broker refuses it).
func handleGroup(handle string) string {
	h, err := broker.DecodeReceiptHandle(handle)
	if err != nil {
		return ""
	}
	return h.BrokerName
}

// signedCall reports whether the incoming call carries a request
// signature (the authorization metadata) of its own.
func signedCall(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(mdAuthorization)) > 0
}
