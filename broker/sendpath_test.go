package broker

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// The send path between a request and its proposal, and between the
// results and the answer, run here over a replica that only holds
// metadata: what prepareSend builds is stamped and encoded as the group's
// proposer stamps and encodes it (dledger's encodeProposal and
// appendRecords), so the records a request stores are pinned byte for
// byte in testdata/send_records.golden.

var updateSendGolden = flag.Bool("update-send-golden", false, "rewrite testdata/send_records.golden")

// sendPathReplica is a replica of metadata only: the topics the sends
// below need exist, so nothing is proposed before a send.
type sendPathReplica struct {
	Replica
	meta *metadata.State
	st   sendPathStore
}

func (r *sendPathReplica) Metadata() *metadata.State { return r.meta }
func (r *sendPathReplica) Store() MessageStore       { return r.st }
func (r *sendPathReplica) IsLeader() bool            { return true }

type sendPathStore struct {
	MessageStore
	dir string
}

func (s sendPathStore) Dir() string { return s.dir }

// sendPathNow is the clock of the send-path broker.
var sendPathNow = time.UnixMilli(1_700_000_000_000)

// newSendPathBroker is a broker (not started) over a sendPathReplica.
func newSendPathBroker(tb testing.TB) *Broker {
	tb.Helper()
	meta := metadata.New()
	const rw int32 = metadata.PermRead | metadata.PermWrite
	for i, tc := range []metadata.TopicConfig{
		{TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: rw},
		{TopicName: "%RETRY%g1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: "%DLQ%g1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: scheduleTopic, ReadQueueNums: 18, WriteQueueNums: 18, Perm: rw},
		{TopicName: timerTopic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: halfTopic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
	} {
		if _, err := meta.Apply(uint64(i+1), metadata.Op{Kind: metadata.OpPutTopic, Topic: &tc}); err != nil {
			tb.Fatal(err)
		}
	}
	g := &sendPathReplica{meta: meta, st: sendPathStore{dir: filepath.Join(tb.TempDir(), "store")}}
	b, err := New(Config{BrokerName: "broker-a", NodeID: "n0", Addr: "127.0.0.1:10911", Peers: map[string]string{"n0": "127.0.0.1:10911"},
		ClusterName: "C1", Clock: func() time.Time { return sendPathNow }}, g, NewHooks())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.timers.stop() })
	return b
}

// sendList is a send request as the remoting server hands a list code
// over (remoting.ServerConfig.ListCodes): its fields in a list, in the
// order our client writes them.
func sendList(code int32, topic string, sysFlag int32, props string, body []byte, extra ...remoting.ExtField) *remoting.Command {
	names := []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"}
	if code != remoting.SendMessage {
		for i := range names {
			names[i] = string(rune('a' + i))
		}
	}
	values := []string{"pg1", topic, "TBW102", "4", "1", strconv.Itoa(int(sysFlag)), "1699999999000", "0", props, "0",
		"false", "0", strconv.FormatBool(code == remoting.SendBatchMessage), "broker-a"}
	ext := make([]remoting.ExtField, len(names), len(names)+len(extra))
	for i := range names {
		ext[i] = remoting.ExtField{Key: names[i], Value: values[i]}
	}
	return &remoting.Command{Code: code, Language: remoting.LanguageGo, ExtList: append(ext, extra...), Body: body}
}

// sendPathCases are the requests whose records are pinned.
func sendPathCases() []struct {
	name string
	req  *remoting.Command
} {
	enc := func(p map[string]string) string { return string(message.EncodeProperties(p)) }
	body := []byte("hello, ledger")
	retry := sendList(remoting.SendMessage, "%RETRY%g1", 0, enc(map[string]string{"UNIQ_KEY": "U-R"}), body)
	for i := range retry.ExtList {
		switch retry.ExtList[i].Key {
		case "reconsumeTimes":
			retry.ExtList[i].Value = "17"
		case "queueId":
			retry.ExtList[i].Value = "0"
		}
	}
	return []struct {
		name string
		req  *remoting.Command
	}{
		{"single", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"TAGS": "t", "KEYS": "k1 k2", "UNIQ_KEY": "U-1"}), body)},
		{"single-v2", sendList(remoting.SendMessageV2, "T", 0, enc(map[string]string{"TAGS": "t", "UNIQ_KEY": "U-2", "WAIT": "true"}), body)},
		{"no-uniq-key", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"TAGS": "t"}), body)},
		{"no-properties", sendList(remoting.SendMessage, "T", 0, "", body)},
		{"unordered", sendList(remoting.SendMessage, "T", 0, "UNIQ_KEY\x01U-3\x02TAGS\x01t\x02", body)},
		{"repeated-name", sendList(remoting.SendMessage, "T", 0, "A\x011\x02A\x012\x02UNIQ_KEY\x01U-4\x02", body)},
		{"cluster-set", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"CLUSTER": "other", "UNIQ_KEY": "U-5"}), body)},
		{"last-name", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"zz": "last", "UNIQ_KEY": "U-6"}), body)},
		{"empty-values", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"A": "", "UNIQ_KEY": "U-7", "Z": ""}), nil)},
		{"request", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"UNIQ_KEY": "U-8",
			"REPLY_TO_CLIENT": "client-1", "CORRELATION_ID": "corr-1", "MSG_TYPE": "request"}), body)},
		{"batch", sendList(remoting.SendBatchMessage, "T", 0, enc(map[string]string{"WAIT": "true"}),
			append(encodeBatchItem(0, []byte("b-1"), map[string]string{"TAGS": "A", "UNIQ_KEY": "U-B1"}),
				encodeBatchItem(3, []byte("b-2"), map[string]string{"WAIT": "false", "UNIQ_KEY": "U-B2"})...))},
		{"batch-no-uniq-key", sendList(remoting.SendBatchMessage, "T", 0, "",
			append(encodeBatchItem(0, []byte("b-1"), nil), encodeBatchItem(0, []byte("b-2"), map[string]string{"TAGS": "B"})...))},
		{"half", sendList(remoting.SendMessage, "T", message.SysFlagTransactionPrepared,
			enc(map[string]string{"TRAN_MSG": "true", "UNIQ_KEY": "U-H", "TAGS": "t"}), body)},
		{"delay", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"DELAY": "3", "UNIQ_KEY": "U-D"}), body)},
		{"timer", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"TIMER_DELAY_SEC": "10", "UNIQ_KEY": "U-T"}), body)},
		{"timer-and-delay", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"TIMER_DELAY_MS": "10", "DELAY": "2", "UNIQ_KEY": "U-TD"}), body)},
		{"dead-letter", retry},
		{"bad-properties", sendList(remoting.SendMessage, "T", 0, "A\x011", body)},
		{"timer-batch", sendList(remoting.SendBatchMessage, "T", 0, "", encodeBatchItem(0, []byte("b"), map[string]string{"TIMER_DELAY_SEC": "1"}))},
		{"delayed-batch", sendList(remoting.SendBatchMessage, "T", 0, enc(map[string]string{"DELAY": "1"}), encodeBatchItem(0, []byte("b"), nil))},
		{"forwarded", sendList(remoting.SendMessage, "T", 0, enc(map[string]string{"UNIQ_KEY": "U-F"}), body,
			remoting.ExtField{Key: extForwardedFrom, Value: "[::ffff:10.1.2.3]:5555"}, remoting.ExtField{Key: extForwardHops, Value: "1"})},
	}
}

// stampLikeProposer stamps m and encodes its record as the group's
// proposer does, with a fixed store time, store host and generated
// UNIQ_KEY.
func stampLikeProposer(tb testing.TB, m *message.Ext, gen string) []byte {
	tb.Helper()
	m.StoreTimestamp = sendPathNow.UnixMilli() + 5
	m.StoreHost = netip.MustParseAddrPort("10.0.0.9:10911")
	if !m.BornHost.IsValid() {
		m.BornHost = m.StoreHost
	}
	if m.UniqKey() == "" {
		m.SetProperty(message.PropertyUniqKey, gen)
	}
	props, err := m.EncodedProperties()
	if err != nil {
		tb.Fatal(err)
	}
	// The recorded encoding is the map's own: the stored properties and
	// what the broker reads of the map (UNIQ_KEY, KEYS) agree.
	if want := message.EncodeProperties(m.Properties); string(props) != string(want) {
		tb.Fatalf("encoded properties %q, the map %v encodes to %q", props, m.Properties, want)
	}
	rec := make([]byte, message.RecordSize(m, len(props)))
	cp := *m
	if err := message.EncodeRecordInto(rec, &cp, props); err != nil {
		tb.Fatal(err)
	}
	return rec
}

// TestSendRecordsPinned: the records the send path stores, and its
// answers, for requests of every kind, are the ones pinned.
func TestSendRecordsPinned(t *testing.T) {
	b := newSendPathBroker(t)
	var out strings.Builder
	for _, c := range sendPathCases() {
		fmt.Fprintf(&out, "== %s\n", c.name)
		p, err := b.prepareSend(context.Background(), nil, c.req)
		if err != nil {
			fmt.Fprintf(&out, "error %v\n", err)
			continue
		}
		results := make([]store.PutResult, len(p.msgs))
		for i, m := range p.msgs {
			rec := stampLikeProposer(t, m, fmt.Sprintf("GEN-%s-%d", c.name, i))
			fmt.Fprintf(&out, "record %s\n", hex.EncodeToString(rec))
			results[i] = store.PutResult{MsgID: fmt.Sprintf("OFF%d", i), QueueOffset: int64(40 + i)}
		}
		resp, err := b.sendAnswer(c.req, p, results)
		if err != nil {
			t.Fatalf("%s: answer: %v", c.name, err)
		}
		fmt.Fprintf(&out, "answer %d", resp.Code)
		ext := resp.ExtMap()
		for _, k := range slices.Sorted(maps.Keys(ext)) {
			fmt.Fprintf(&out, " %s=%s", k, ext[k])
		}
		out.WriteString("\n")
	}
	path := filepath.Join("testdata", "send_records.golden")
	if *updateSendGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// benchSendRequest is the request of the send benchmarks: a single
// message of 1 KiB as our client sends it (SEND_MESSAGE, its fields in
// a list), with a tag, keys and its UNIQ_KEY.
func benchSendRequest() *remoting.Command {
	props := message.EncodeProperties(map[string]string{"TAGS": "TagA", "KEYS": "order-1",
		"UNIQ_KEY": "7F0000010F2818B4AAC26B2B1A4C0001"})
	return sendList(remoting.SendMessage, "T", 0, string(props), make([]byte, 1024))
}

// BenchmarkPrepareSend is the leader's reading of one send request into
// the message it proposes.
func BenchmarkPrepareSend(b *testing.B) {
	br := newSendPathBroker(b)
	req := benchSendRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.prepareSend(ctx, nil, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendAnswer is the leader's bookkeeping and answer of one stored
// send.
func BenchmarkSendAnswer(b *testing.B) {
	br := newSendPathBroker(b)
	req := benchSendRequest()
	p, err := br.prepareSend(context.Background(), nil, req)
	if err != nil {
		b.Fatal(err)
	}
	results := []store.PutResult{{MsgID: "0A00000900002A9F0000000012345678", QueueOffset: 123456}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.sendAnswer(req, p, results); err != nil {
			b.Fatal(err)
		}
	}
}
