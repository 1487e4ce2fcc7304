package broker

import (
	"strconv"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/metadata"
)

// Exactly-once sends. The group keeps a window of the (topic, UNIQ_KEY)
// pairs it stored recently (dledger's ProposeSend, store/duplicates.go);
// a producer's send is proposed with the window below, so that a retry of
// a send whose answer was lost in a failover is answered with the first
// store instead of being stored again. Every RocketMQ client keeps a
// message's UNIQ_KEY across its retries.
//
// The window is Config.DuplicateWindow, shortened per topic by the topic
// attribute dedup.window (a Go duration such as 30s, or bare seconds; 0,
// off or false turns it off for the topic). An attribute that does not
// parse leaves the broker's window. A consumer's send-back is proposed
// with the window of its %RETRY% (or %DLQ%) topic: a message sent back
// keeps its UNIQ_KEY from one attempt to the next, and the window knows
// a retry by the UNIQ_KEY with its reconsume count (store.DuplicateKey),
// so a repeated send-back (the consumer lost the answer), or the
// consumer's own send to %RETRY% after a send-back it believed failed,
// stores the retry once.

// AttrDuplicateWindow is the topic attribute that sets a topic's window.
const AttrDuplicateWindow = "dedup.window"

// sendWindow is the duplicate window of a send to tc.
func (b *Broker) sendWindow(tc metadata.TopicConfig) time.Duration {
	w := b.cfg.DuplicateWindow
	if w <= 0 {
		return 0
	}
	v, ok := tc.Attributes[AttrDuplicateWindow]
	if !ok {
		v, ok = tc.Attributes["+"+AttrDuplicateWindow]
	}
	if !ok {
		return w
	}
	if d, ok := parseWindow(v); ok {
		return min(d, w)
	}
	return w
}

// dupSpan is the window a send's answer reports: the send's, or less
// while the group's window holds its maximum count of keys and so reaches
// back less far (store.DuplicateSpan).
func (b *Broker) dupSpan(window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	if s, ok := b.group.Store().(interface {
		DuplicateSpan(time.Duration) time.Duration
	}); ok {
		return s.DuplicateSpan(window)
	}
	return window
}

// parseWindow reads a window attribute: a Go duration, bare seconds, or
// off (0, off, false).
func parseWindow(v string) (time.Duration, bool) {
	v = strings.TrimSpace(strings.ToLower(v))
	switch v {
	case "off", "false", "none":
		return 0, true
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n < 1<<32 {
		return time.Duration(n) * time.Second, true
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, true
	}
	return 0, false
}
