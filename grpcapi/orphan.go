package grpcapi

import (
	"sync"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// Orphaned transactions. A producer's telemetry stream (its Settings name
// the topics it publishes to) is one of the producers the broker's
// transaction check-back asks about half messages sent over gRPC (group
// ProducerGroup): a check of a half message whose topic the stream's
// producer publishes to is sent on the stream as a
// RecoverOrphanedTransactionCommand — the message as it was sent, and the
// transaction id of its half copy, which the client's transaction checker
// answers with an EndTransaction from SOURCE_SERVER_CHECK. The stream
// stops being asked when it ends. The check-back runs on the group's
// leader, so it reaches the streams open on the leader's port (clients
// open theirs at the endpoints routes name: the leader's); in cluster
// mode the proxy is no producer the brokers know, and orphaned
// transactions of its clients are not recovered.

// telemetryStream is one client's telemetry stream: Send is not safe for
// concurrent use, and the check-back sends from its own goroutine.
type telemetryStream struct {
	stream v2pb.MessagingService_TelemetryServer

	sendMu sync.Mutex
	mu     sync.Mutex
	topics map[string]bool // the topics the producer publishes to
	remove func()          // takes the producer off the check-back's list
}

func (t *telemetryStream) send(cmd *v2pb.TelemetryCommand) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.stream.Send(cmd)
}

// publishing notes the topics of a producer's Settings and, the first
// time, puts the producer on the check-back's list.
func (s *Server) publishing(t *telemetryStream, p *v2pb.Publishing) {
	topics := map[string]bool{}
	for _, r := range p.GetTopics() {
		topics[r.GetName()] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.topics = topics
	if t.remove == nil {
		t.remove = s.be.addTxnAsker(func(c broker.TxnCheck) bool { return s.recoverOrphan(t, c) })
	}
}

// recoverOrphan sends the check of c on t when t's producer publishes to
// c's topic.
func (s *Server) recoverOrphan(t *telemetryStream, c broker.TxnCheck) bool {
	t.mu.Lock()
	mine := t.topics[c.Msg.Topic]
	t.mu.Unlock()
	if !mine {
		return false
	}
	m, err := toClientMessage(broker.Popped{Msg: c.Msg}, nil, 0)
	if err != nil {
		s.cfg.Logger.Warn("transaction check not sent: the half message does not convert", "msg", c.Msg.UniqKey(), "error", err)
		return false
	}
	// A check is no delivery: no receipt, invisible time or attempt.
	m.SystemProperties.ReceiptHandle, m.SystemProperties.InvisibleDuration, m.SystemProperties.DeliveryAttempt = nil, nil, nil
	cmd := &v2pb.TelemetryCommand{Status: okStatus(), Command: &v2pb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2pb.RecoverOrphanedTransactionCommand{
			Message:       m,
			TransactionId: formatTxnID(c.OffsetMsgID, c.QueueOffset, s.cfg.BrokerName),
		}}}
	if err := t.send(cmd); err != nil {
		s.cfg.Logger.Debug("transaction check not sent on the telemetry stream", "msg", c.Msg.UniqKey(), "error", err)
		return false
	}
	return true
}

// done takes t's producer off the check-back's list.
func (t *telemetryStream) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.remove != nil {
		t.remove()
		t.remove = nil
	}
}
