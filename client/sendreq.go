package client

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// sendRequest is the command of one send attempt and the list of its ext
// fields. Both are recycled once the attempt is over: the remoting client
// encodes a request into its frame while it writes it and keeps nothing of
// the command afterwards, so the next send can refill the same list. A
// list rather than a map: filling it costs no hashing, and the frame is
// encoded in its order without sorting 14 keys (a broker reads the fields
// into a map, whatever their order).
type sendRequest struct {
	cmd remoting.Command
	ext [sendExtFields]remoting.ExtField
}

// sendExtFields is the number of ext fields of a send request header.
const sendExtFields = 14

var sendRequests = sync.Pool{New: func() any { return new(sendRequest) }}

// release returns r for another send; r must not be used after. Signing
// moves the fields to a map of the command's own, which goes with it.
func (r *sendRequest) release() {
	r.cmd = remoting.Command{}
	sendRequests.Put(r)
}

// request builds the attempt's command for q: SEND_MESSAGE with the long
// ext names, SEND_REPLY_MESSAGE for a reply, SEND_BATCH_MESSAGE with the
// one-letter names for a batch (the fields protocol.SendMessageRequestHeader
// and SendMessageRequestHeaderV2 build). Its header travels in RocketMQ's
// binary form (SerializeRocketMQ), which every RocketMQ broker reads and
// which costs a broker about half of what JSON does to decode
// (remoting.BenchmarkServerReadSend). The caller releases it once the
// attempt is over.
func (o *outgoing) request(q Queue) *sendRequest {
	h := o.header
	h.QueueID = q.QueueID
	h.BrokerName = q.BrokerName
	r := sendRequests.Get().(*sendRequest)
	code := remoting.SendMessage
	switch {
	case o.batch:
		code = remoting.SendMessageV2
		if h.Batch {
			code = remoting.SendBatchMessage
		}
	case o.reply:
		code = remoting.SendReplyMessage
	}
	fillSendExt(&r.ext, &h, o.batch)
	r.cmd = remoting.Command{Code: code, Language: remoting.LanguageGo, Version: remoting.Version,
		SerializeType: remoting.SerializeRocketMQ, ExtList: r.ext[:], Body: o.body}
	return r
}

// sendExtNames are the ext names of the send request header's fields,
// long (SEND_MESSAGE) and one-letter (V2), in the order fillSendExt writes
// them.
var sendExtNames = [2][sendExtFields]string{
	{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"},
	{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"},
}

// fillSendExt writes h into ext as protocol's Encode does: every field,
// under the one-letter names when short.
func fillSendExt(ext *[sendExtFields]remoting.ExtField, h *protocol.SendMessageRequestHeader, short bool) {
	names := &sendExtNames[0]
	if short {
		names = &sendExtNames[1]
	}
	for i := range ext {
		ext[i].Key = names[i]
	}
	ext[0].Value = h.ProducerGroup
	ext[1].Value = h.Topic
	ext[2].Value = h.DefaultTopic
	ext[3].Value = strconv.FormatInt(int64(h.DefaultTopicQueueNums), 10)
	ext[4].Value = strconv.FormatInt(int64(h.QueueID), 10)
	ext[5].Value = strconv.FormatInt(int64(h.SysFlag), 10)
	ext[6].Value = bornText(h.BornTimestamp)
	ext[7].Value = strconv.FormatInt(int64(h.Flag), 10)
	ext[8].Value = h.Properties
	ext[9].Value = strconv.FormatInt(int64(h.ReconsumeTimes), 10)
	ext[10].Value = strconv.FormatBool(h.UnitMode)
	ext[11].Value = strconv.FormatInt(int64(h.MaxReconsumeTimes), 10)
	ext[12].Value = strconv.FormatBool(h.Batch)
	ext[13].Value = h.BrokerName
}

// msText is a Unix millisecond time and its decimal text.
type msText struct {
	ms   int64
	text string
}

// lastBorn is the text of the latest born timestamp formatted: the sends
// of one millisecond share it rather than each format its own.
var lastBorn atomic.Pointer[msText]

// bornText is strconv.FormatInt(ms, 10), from lastBorn when it holds ms.
func bornText(ms int64) string {
	if t := lastBorn.Load(); t != nil && t.ms == ms {
		return t.text
	}
	t := &msText{ms: ms, text: strconv.FormatInt(ms, 10)}
	lastBorn.Store(t)
	return t.text
}

// systemProperties encodes the properties of a message that has no user
// properties straight to their wire form, without the map properties
// builds: DELAY, KEYS, SHARDING_KEY, TAGS and UNIQ_KEY (the ascending
// name order message.EncodeProperties writes), each when set. ok is false
// when the message needs properties' checks and errors instead (user
// properties, a negative delay level, a separator byte in a value, too
// long in all).
func (m *Message) systemProperties(uniq string) (props string, ok bool) {
	if len(m.Properties) > 0 || m.DelayLevel < 0 {
		return "", false
	}
	var delay [20]byte
	d := delay[:0]
	if m.DelayLevel > 0 {
		d = strconv.AppendInt(d, int64(m.DelayLevel), 10)
	}
	n := len(message.PropertyUniqKey) + len(uniq) + 2
	if len(d) > 0 {
		n += len(message.PropertyDelayLevel) + len(d) + 2
	}
	if len(m.Keys) > 0 {
		n += len(message.PropertyKeys) + len(m.Keys) - 1 + 2
		for _, k := range m.Keys {
			if hasSeparator(k) {
				return "", false
			}
			n += len(k)
		}
	}
	if m.ShardingKey != "" {
		if hasSeparator(m.ShardingKey) {
			return "", false
		}
		n += len(message.PropertyShardingKey) + len(m.ShardingKey) + 2
	}
	if m.Tag != "" {
		if hasSeparator(m.Tag) {
			return "", false
		}
		n += len(message.PropertyTags) + len(m.Tag) + 2
	}
	if hasSeparator(uniq) || n > message.MaxPropertiesLength {
		return "", false
	}
	var b strings.Builder
	b.Grow(n)
	item := func(name string) {
		b.WriteString(name)
		b.WriteByte(message.NameValueSeparator)
	}
	if len(d) > 0 {
		item(message.PropertyDelayLevel)
		b.Write(d)
		b.WriteByte(message.PropertySeparator)
	}
	if len(m.Keys) > 0 {
		item(message.PropertyKeys)
		for i, k := range m.Keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(k)
		}
		b.WriteByte(message.PropertySeparator)
	}
	if m.ShardingKey != "" {
		item(message.PropertyShardingKey)
		b.WriteString(m.ShardingKey)
		b.WriteByte(message.PropertySeparator)
	}
	if m.Tag != "" {
		item(message.PropertyTags)
		b.WriteString(m.Tag)
		b.WriteByte(message.PropertySeparator)
	}
	item(message.PropertyUniqKey)
	b.WriteString(uniq)
	b.WriteByte(message.PropertySeparator)
	return b.String(), true
}

// hasSeparator reports whether s holds a byte of the properties encoding.
func hasSeparator(s string) bool {
	return strings.IndexByte(s, message.NameValueSeparator) >= 0 || strings.IndexByte(s, message.PropertySeparator) >= 0
}
