package client

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// Message is what a producer sends. The client never modifies it, so one
// Message may be sent several times (each send is a new message with its
// own UNIQ_KEY unless Properties sets one).
type Message struct {
	Topic string
	Body  []byte
	// Tag is the TAGS property, the key consumers filter on.
	Tag string
	// Keys are the KEYS property (space-joined), indexed for queries.
	Keys []string
	// ShardingKey orders messages: every message with the same key goes
	// to the same queue (HashSelector), so a consumer sees them in send
	// order, as long as the topic's queues do not change. It also travels
	// as the SHARDING_KEY property, as rocketmq-client-go sends it.
	ShardingKey string
	// DelayLevel delays delivery (1..18: 1 s … 2 h); 0 is no delay.
	DelayLevel int
	// Flag is the user flag, stored as is.
	Flag int32
	// Properties are user properties. Names and values may not contain
	// the bytes \x01 and \x02.
	Properties map[string]string
}

// Queue names one message queue: a queue of a topic on a broker group.
type Queue struct {
	Topic      string
	BrokerName string
	QueueID    int32
}

func (q Queue) String() string { return fmt.Sprintf("%s@%s#%d", q.Topic, q.BrokerName, q.QueueID) }

// SendStatus is how a stored message was acknowledged (RocketMQ's
// SendStatus). Every status means stored.
type SendStatus int

const (
	SendOK SendStatus = iota
	// SendFlushDiskTimeout: stored, the synchronous flush timed out (10).
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored, replication timed out (12).
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored, no replica to copy it to (11).
	SendSlaveNotAvailable
)

func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SendStatus(" + strconv.Itoa(int(s)) + ")"
}

// SendResult describes an acknowledged send.
type SendResult struct {
	Status SendStatus
	// MsgID is the message's UNIQ_KEY (the first one of a batch); a
	// consumer sees it as the message id. Retries keep it, so copies of a
	// message stored twice share it.
	MsgID string
	// MsgIDs are the UNIQ_KEYs of every message of a batch (one item for
	// a single message).
	MsgIDs []string
	// OffsetMsgID is the broker's id of the stored record: store host and
	// commitlog offset (the first one of a batch); OffsetMsgIDs has one
	// per message of a batch.
	OffsetMsgID   string
	OffsetMsgIDs  []string
	Queue         Queue
	QueueOffset   int64 // of the (first) message in Queue
	TransactionID string
	Region        string
	// Addr is the broker address that acknowledged the send.
	Addr string
	// Attempts counts the attempts on the wire, this one included.
	Attempts int
	// Earlier lists the attempts before the one that succeeded (nil when
	// the first did).
	Earlier []Attempt
	// Duplicate says the broker group had stored this message (its topic
	// and UNIQ_KEY) already within its duplicate window, by an earlier
	// attempt of this send or an earlier send with the same UNIQ_KEY, and
	// answered with that first store (Queue, QueueOffset and OffsetMsgID
	// are its) instead of storing the message again. Only ledgermq's
	// brokers say so.
	Duplicate bool
	// DedupWindow is the duplicate window the broker group applied to the
	// acknowledged attempt: a send of the same topic and UNIQ_KEY to that
	// group within DedupWindow of a stored one is answered with that store
	// rather than stored again. 0: no window (the group's is off, or the
	// broker is not ledgermq's or older than the window).
	DedupWindow time.Duration
	// started is the Attempt.Start of the acknowledged attempt.
	started time.Time
}

// MaybeDuplicated reports whether the message may be stored more than
// once (every copy with the same MsgID): true when an earlier attempt's
// outcome was unknown and no duplicate window covered the retry. An
// unknown attempt is covered when the acknowledged attempt went to the
// same broker group (Queue.BrokerName), that group's answer carried a
// duplicate window (DedupWindow > 0), and the acknowledged attempt
// started less than DedupWindow after the unknown one started, on the
// client's clock (Attempt.Start): had the unknown attempt stored the
// message, the group answered the retry with that store. An unknown
// attempt to another broker group, an answer without a window, or a retry
// after the window is not covered.
func (r *SendResult) MaybeDuplicated() bool {
	for _, a := range r.Earlier {
		if a.Outcome == OutcomeUnknown && !r.covers(a) {
			return true
		}
	}
	return false
}

// covers reports whether the duplicate window of the acknowledged attempt
// covers the earlier attempt a (MaybeDuplicated).
func (r *SendResult) covers(a Attempt) bool {
	if r.DedupWindow <= 0 || a.Queue.BrokerName != r.Queue.BrokerName ||
		a.Start.IsZero() || r.started.IsZero() {
		return false
	}
	return r.started.Sub(a.Start) < r.DedupWindow
}

// validateTopic checks a topic name as brokers do (protocol.ValidateTopic),
// so a bad one fails before it reaches the wire.
func validateTopic(topic string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if topic == protocol.DefaultTopic {
		return fmt.Errorf("%w: topic %s is the auto-create template", ErrInvalidMessage, topic)
	}
	return nil
}

// properties returns the message's properties as sent: the user's, then
// TAGS, KEYS, DELAY, SHARDING_KEY and UNIQ_KEY (kept when the user set
// one, else uniq), validated.
func (m *Message) properties(uniq string, extra map[string]string) (map[string]string, error) {
	p := make(map[string]string, len(m.Properties)+len(extra)+5)
	for k, v := range m.Properties {
		p[k] = v
	}
	for k, v := range extra {
		p[k] = v
	}
	if m.Tag != "" {
		p[message.PropertyTags] = m.Tag
	}
	if len(m.Keys) > 0 {
		p[message.PropertyKeys] = strings.Join(m.Keys, " ")
	}
	if m.DelayLevel < 0 {
		return nil, fmt.Errorf("%w: delay level %d < 0", ErrInvalidMessage, m.DelayLevel)
	}
	if m.DelayLevel > 0 {
		p[message.PropertyDelayLevel] = strconv.Itoa(m.DelayLevel)
	}
	if m.ShardingKey != "" {
		p[message.PropertyShardingKey] = m.ShardingKey
	}
	if p[message.PropertyUniqKey] == "" {
		p[message.PropertyUniqKey] = uniq
	}
	if err := message.ValidateProperties(p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if n := message.PropertiesLen(p); n > message.MaxPropertiesLength {
		return nil, fmt.Errorf("%w: properties of %d bytes are longer than %d", ErrInvalidMessage, n, message.MaxPropertiesLength)
	}
	return p, nil
}
