package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/internal/harness/bench"
	"github.com/ledgermq/ledgermq/message"
)

// grpcSender is a bench producer that sends through a RocketMQ 5 gRPC
// endpoint (a node's gRPC port, or `ledgermq proxy`), one SendMessage
// call per message, as the 5.x clients send: for `bench produce --grpc`,
// the gRPC send rate beside the remoting one in the same run. Each
// producer has a connection of its own; its in-flight sends share it
// (HTTP/2 streams).
type grpcSender struct {
	conn *grpc.ClientConn
	cli  v2pb.MessagingServiceClient
	ids  *message.UniqIDGenerator
}

// newGRPCSender dials endpoint (plain TCP: bench --grpc takes no TLS).
func newGRPCSender(endpoint string) (bench.Sender, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("bench: gRPC endpoint %s: %w", endpoint, err)
	}
	return &grpcSender{conn: conn, cli: v2pb.NewMessagingServiceClient(conn),
		ids: message.NewUniqIDGenerator(netip.AddrFrom4([4]byte{127, 0, 0, 1}), os.Getpid(), time.Now)}, nil
}

// errGRPCTransport marks a call that failed on the wire: the send may have
// been stored.
var errGRPCTransport = errors.New("the gRPC call failed")

// Send sends m as one NORMAL message (its keys and tag kept); a call that
// fails on the wire is an unknown outcome, a status other than OK a
// failed send.
func (s *grpcSender) Send(ctx context.Context, m *client.Message) (client.SendResult, error) {
	id := s.ids.Next()
	sp := &v2pb.SystemProperties{MessageId: id, Keys: m.Keys, BornTimestamp: timestamppb.Now(),
		BodyEncoding: v2pb.Encoding_IDENTITY, MessageType: v2pb.MessageType_NORMAL}
	if m.Tag != "" {
		sp.Tag = &m.Tag
	}
	resp, err := s.cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: m.Topic}, SystemProperties: sp, Body: m.Body}}})
	if err != nil {
		return client.SendResult{}, fmt.Errorf("%w: %w: %w", client.ErrUnknownOutcome, errGRPCTransport, err)
	}
	if st := resp.GetStatus(); st.GetCode() != v2pb.Code_OK {
		return client.SendResult{}, fmt.Errorf("bench: send refused: %v %s", st.GetCode(), st.GetMessage())
	}
	r := client.SendResult{Status: client.SendOK, MsgID: id, MsgIDs: []string{id}}
	if e := resp.GetEntries(); len(e) == 1 {
		r.QueueOffset = e[0].GetOffset()
	}
	return r, nil
}

// Close closes the connection.
func (s *grpcSender) Close() error { return s.conn.Close() }
