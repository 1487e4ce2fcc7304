package grpcapi

import (
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// The settings answered on the telemetry stream, as RocketMQ's proxy
// answers them by default.
const (
	producerMaxAttempts   = 3
	backoffInitial        = 10 * time.Millisecond
	backoffMax            = time.Second
	backoffMultiplier     = 2
	consumerMaxAttempts   = 16
	receiveBatchSize      = 32
	longPollingTimeout    = 30 * time.Second
	consumerBackoffInit   = time.Second
	consumerBackoffMax    = 10 * time.Minute
	consumerBackoffFactor = 2
)

// Telemetry answers every Settings the client sends with the settings to
// use, and keeps the stream open until the client ends it or the server
// stops. Other commands (answers to commands this server never sends) are
// ignored. The stream's reader runs on its own goroutine, owned here:
// Recv cannot be interrupted otherwise, and Stop must not wait for
// clients to hang up.
func (s *Server) Telemetry(stream v2pb.MessagingService_TelemetryServer) error {
	errc := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		errc <- s.telemetryLoop(stream)
	}()
	select {
	case err := <-errc:
		return err
	case <-s.closing:
		// Returning ends the stream; its Recv then fails and the reader
		// ends (Stop waits for it).
		return status.Error(codes.Unavailable, "the broker is shutting down")
	}
}

func (s *Server) telemetryLoop(stream v2pb.MessagingService_TelemetryServer) error {
	t := &telemetryStream{stream: stream}
	defer t.done()
	for {
		cmd, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st := cmd.GetSettings()
		if st == nil {
			continue
		}
		answer := &v2pb.TelemetryCommand{Status: okStatus(), Command: &v2pb.TelemetryCommand_Settings{Settings: s.settingsFor(st)}}
		if err := t.send(answer); err != nil {
			return err
		}
		if p := st.GetPublishing(); p != nil {
			s.publishing(t, p)
		}
	}
}

// settingsFor is the answer to a client's settings: its own, with the
// retry policy, request timeout and publishing or subscription settings
// this server wants.
func (s *Server) settingsFor(in *v2pb.Settings) *v2pb.Settings {
	out := &v2pb.Settings{
		ClientType:     in.ClientType,
		AccessPoint:    in.GetAccessPoint(),
		RequestTimeout: durationpb.New(s.cfg.RequestTimeout),
		UserAgent:      in.GetUserAgent(),
		Metric:         &v2pb.Metric{On: false},
	}
	switch ps := in.GetPubSub().(type) {
	case *v2pb.Settings_Subscription:
		sub := ps.Subscription
		fifo := false
		batch := int32(receiveBatchSize)
		attempts := int32(consumerMaxAttempts)
		if g := topicName(sub.GetGroup()); g != "" {
			attempts, fifo = s.be.maxAttempts(g), s.be.fifo(g)
		}
		out.BackoffPolicy = exponential(attempts, consumerBackoffInit, consumerBackoffMax, consumerBackoffFactor)
		out.PubSub = &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group:              sub.Group,
			Subscriptions:      sub.GetSubscriptions(),
			Fifo:               &fifo,
			ReceiveBatchSize:   &batch,
			LongPollingTimeout: durationpb.New(longPollingTimeout),
		}}
	default:
		var topics []*v2pb.Resource
		if p, ok := ps.(*v2pb.Settings_Publishing); ok {
			topics = p.Publishing.GetTopics()
		}
		out.BackoffPolicy = exponential(producerMaxAttempts, backoffInitial, backoffMax, backoffMultiplier)
		out.PubSub = &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{
			Topics:              topics,
			MaxBodySize:         int32(s.cfg.MaxBodySize),
			ValidateMessageType: true,
		}}
	}
	return out
}

func exponential(attempts int32, initial, maxBackoff time.Duration, multiplier float32) *v2pb.RetryPolicy {
	return &v2pb.RetryPolicy{
		MaxAttempts: attempts,
		Strategy: &v2pb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2pb.ExponentialBackoff{
			Initial: durationpb.New(initial), Max: durationpb.New(maxBackoff), Multiplier: multiplier,
		}},
	}
}
