package client

import "hash/fnv"

// QueueSelector chooses the queue of a message among the topic's writable
// queues (sorted by broker name, then queue id; never empty). It is how
// ordered messages are sent: a selector that maps a key to a queue keeps
// that key's messages in order. It is called from the goroutine of the
// send, so it must be safe for concurrent use.
type QueueSelector interface {
	Select(msg *Message, queues []Queue) Queue
}

// QueueSelectorFunc adapts a function to QueueSelector.
type QueueSelectorFunc func(msg *Message, queues []Queue) Queue

// Select calls f.
func (f QueueSelectorFunc) Select(msg *Message, queues []Queue) Queue { return f(msg, queues) }

// HashSelector picks queues[fnv1a32(ShardingKey) mod len(queues)], as
// rocketmq-client-go's hash selector does; a message without a key goes
// to the first queue.
func HashSelector() QueueSelector { return hashSelector{} }

type hashSelector struct{}

func (hashSelector) Select(msg *Message, queues []Queue) Queue {
	h := fnv.New32a()
	_, _ = h.Write([]byte(msg.ShardingKey))
	return queues[h.Sum32()%uint32(len(queues))]
}
