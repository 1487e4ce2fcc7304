//go:build unix

package jepsen

import (
	"context"

	"github.com/ledgermq/ledgermq/client"
)

// Sender sends the queue workload's messages for one producer process,
// one at a time (WorkloadConfig.NewSender makes one per producer).
type Sender interface {
	// Send sends m (Topic, Body, Keys and ShardingKey set) once, with
	// retries of its own, and records the outcome in e: Outcome (OK,
	// Unknown or Failed); for OK also Queue, Offset, MsgID (the
	// UNIQ_KEY), Node (the node that acknowledged, "" if not known),
	// Group (runs of two or more groups only), Attempts and MaybeDup; for
	// the others Error (shortened to a line). It returns once the outcome
	// is known or its own timeout has passed.
	Send(m *client.Message, e *Event)
	// Close releases the sender after its last Send.
	Close()
}

// ShortError is err's text cut to the length a history event keeps.
func ShortError(err error) string { return shorten(err.Error()) }

// ourSender is the default Sender: our client.Producer.
type ourSender struct {
	w *workload
	p *client.Producer
}

// newOurSender is the default Sender of a queue producer: a
// client.Producer with the workload's send timeout and 2 retries.
func newOurSender(w *workload) (Sender, error) {
	p, err := client.NewProducer(w.c.ClientOptions(client.WithGroup(producerGroup),
		client.WithSendTimeout(w.cfg.SendTimeout), client.WithRetries(2))...)
	if err != nil {
		return nil, err
	}
	return &ourSender{w: w, p: p}, nil
}

func (s *ourSender) Send(m *client.Message, e *Event) {
	// The send's own timeout bounds it.
	res, err := s.p.Send(context.Background(), m)
	s.w.noteOutcome(e, res, err)
	if e.Outcome == OK {
		e.Offset = res.QueueOffset
	}
}

func (s *ourSender) Close() { _ = s.p.Close() }
