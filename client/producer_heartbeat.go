package client

import (
	"context"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// producerHeartbeat sends a transactional producer's or a requester's
// HEART_BEAT (34, with
// its group in producerDataSet) to the leader of every broker group it
// sends to: at once the first time it uses a leader, then every
// DefaultHeartbeatInterval to every leader of its cached routes. A broker
// checks back only with producers it has heard from, on their connection.
//
// Its one goroutine is stopped by close.
type producerHeartbeat struct {
	p    *Producer
	body []byte
	// clientID is the id the heartbeats carry (a requester's REPLY_TO_CLIENT).
	clientID string

	mu   sync.Mutex
	told map[string]bool // leaders heard from since the last round

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newProducerHeartbeat(p *Producer) *producerHeartbeat {
	hb := protocol.HeartbeatData{ClientID: clientID(p.opts.consumer.instance), ProducerDataSet: []protocol.ProducerData{{GroupName: p.opts.group}}}
	body, _ := hb.Encode() // strings only: cannot fail
	ctx, cancel := context.WithCancel(context.Background())
	h := &producerHeartbeat{p: p, body: body, clientID: hb.ClientID, told: map[string]bool{}, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go h.loop()
	return h
}

func (h *producerHeartbeat) loop() {
	defer close(h.done)
	t := time.NewTicker(DefaultHeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			h.round()
		}
	}
}

// round heartbeats every leader of the cached routes.
func (h *producerHeartbeat) round() {
	seen := map[string]bool{}
	for _, topic := range h.p.core.routes.topics() {
		info, err := h.p.core.routes.get(h.ctx, topic)
		if err != nil {
			continue
		}
		for _, addr := range info.leaders {
			if !seen[addr] {
				seen[addr] = true
				h.send(h.ctx, addr)
			}
		}
	}
}

// ensure heartbeats addr now unless it was told before.
func (h *producerHeartbeat) ensure(ctx context.Context, addr string) {
	h.mu.Lock()
	told := h.told[addr]
	h.mu.Unlock()
	if !told && addr != "" {
		h.send(ctx, addr)
	}
}

func (h *producerHeartbeat) send(ctx context.Context, addr string) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, err := h.p.core.rc.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, h.body))
	if err != nil || resp.Code != remoting.Success {
		h.p.opts.logger.Debug("producer heartbeat failed", "addr", addr, "error", err, "resp", resp)
		return
	}
	h.mu.Lock()
	h.told[addr] = true
	h.mu.Unlock()
}

func (h *producerHeartbeat) close() {
	h.cancel()
	<-h.done
}
