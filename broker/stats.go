package broker

import "github.com/ledgermq/ledgermq/remoting"

// ServerStats are the broker's remoting server's figures: connections,
// bytes held, requests in flight, refusals.
func (b *Broker) ServerStats() remoting.ServerStats { return b.srv.Stats() }
