package broker

import (
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// Requesters. A reply is pushed over the connection of the requester its
// REPLY_TO_CLIENT names. Java's broker finds that connection only among
// producer heartbeats, so a request sent before the requester's first
// heartbeat reached the leader gets its reply stored but never pushed,
// and the requester times out. rocketmq-client-go sends that heartbeat
// only when the name server does not know the request's topic yet, and
// otherwise 1 s after start and every 30 s: its first request to an
// existing topic right after start always lost its reply. The leader
// therefore also remembers the connection each request message (a send
// whose properties carry REPLY_TO_CLIENT and CORRELATION_ID) came over
// directly from its client, and pushes there when no heartbeat names the
// requester. Entries go with their connection or after clientExpiry, as
// heartbeats do, and there are at most maxRequesters of them (a request
// from a new requester beyond that is stored and answered as before; its
// reply waits for a heartbeat).

// maxRequesters bounds the requesters remembered from request messages.
const maxRequesters = 4096

// noteRequest remembers conn as the requester's when the properties of a
// message sent over it make it a request (see above).
func (m *consumerManager) noteRequest(conn *remoting.Conn, props map[string]string) {
	id := props[message.PropertyReplyToClient]
	if id == "" || conn == nil || props[message.PropertyCorrelationID] == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.requesters[id]
	if c == nil {
		if len(m.requesters) >= maxRequesters {
			return
		}
		c = &clientConn{id: id}
		m.requesters[id] = c
	}
	c.conn, c.lastSeen = conn, m.now()
}
