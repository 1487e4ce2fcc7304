package broker

import (
	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// ServerStats are the broker's remoting server's figures: connections,
// bytes held, requests in flight, refusals.
func (b *Broker) ServerStats() remoting.ServerStats { return b.srv.Stats() }

// ReadHealth is nil while the broker reads new requests
// (remoting.Server.ReadHealth); /readyz reports it.
func (b *Broker) ReadHealth() error { return b.srv.ReadHealth() }

// LargeBodyCodes are the requests whose body may exceed
// remoting.SmallFrameSize on a broker: sends and what carries lists of
// topics, queues, subscriptions or configuration. A request of another
// code with a larger body is refused before its body is read.
var LargeBodyCodes = []int32{
	remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
	remoting.SendReplyMessage, remoting.SendReplyMessageV2,
	remoting.ConsumerSendMsgBack, remoting.EndTransaction,
	remoting.HeartBeat, remoting.LockBatchMQ, remoting.UnlockBatchMQ,
	remoting.UpdateAndCreateTopic, remoting.UpdateAndCreateTopicList,
	remoting.UpdateAndCreateSubscriptionGroup, remoting.UpdateBrokerConfig,
	remoting.UpdateACL,
}

// largeBodyField is the ext field a large body's header must carry: the
// signature, where the ACL requires every request to be signed.
func largeBodyField(cfg Config) string {
	if cfg.ACLEnable {
		return auth.FieldSignature
	}
	return ""
}
