package metadata

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

func TestApplyIsIdempotentAndDeterministic(t *testing.T) {
	ops := []Op{
		{Kind: OpPutTopic, Topic: &TopicConfig{TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		{Kind: OpPutGroup, Group: &SubscriptionGroup{GroupName: "g", ConsumeEnable: true, RetryMaxTimes: 16}},
		{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "A", QueueID: 1, Offset: 10}, {Group: "g", Topic: "A", QueueID: 2, Offset: 3}}},
		{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "A", QueueID: 1, Offset: 12}}},
		{Kind: OpPutTopic, Topic: &TopicConfig{TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "B", QueueID: 0, Offset: 5}}},
		{Kind: OpDeleteTopic, Name: "B"},
	}
	a, b := New(), New()
	for i, op := range ops {
		wire, err := EncodeOp(op)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeOp(wire)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := a.Apply(uint64(i+1), back); !ok || err != nil {
			t.Fatalf("op %d: %v %v", i, ok, err)
		}
		// b sees every entry twice, as after a restart.
		b.Apply(uint64(i+1), op)
		if ok, _ := b.Apply(uint64(i+1), op); ok {
			t.Fatalf("op %d applied twice", i)
		}
	}
	ma, _ := a.Marshal()
	mb, _ := b.Marshal()
	if string(ma) != string(mb) {
		t.Fatalf("replicas differ:\n%s\n%s", ma, mb)
	}
	if o, ok := a.Offset("g", "A", 1); !ok || o != 12 {
		t.Fatalf("offset %d %v", o, ok)
	}
	if _, ok := a.Topic("B"); ok {
		t.Fatal("deleted topic still there")
	}
	if _, ok := a.Offset("g", "B", 0); ok {
		t.Fatal("offsets of a deleted topic kept")
	}
	if a.AppliedIndex() != uint64(len(ops)) {
		t.Fatalf("applied %d", a.AppliedIndex())
	}
}

func TestSaveLoad(t *testing.T) {
	s := New()
	s.Apply(7, Op{Kind: OpPutTopic, Topic: &TopicConfig{TopicName: "A", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, Attributes: map[string]string{"+x": "1"}}})
	s.Apply(8, Op{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "A", QueueID: 1, Offset: 99}}})
	p := filepath.Join(t.TempDir(), "metadata.json")
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Load(p); err != nil {
		t.Fatal(err)
	}
	if r.AppliedIndex() != 8 || !reflect.DeepEqual(r.Topics(), s.Topics()) {
		t.Fatalf("loaded %d %+v", r.AppliedIndex(), r.Topics())
	}
	if o, _ := r.Offset("g", "A", 1); o != 99 {
		t.Fatalf("offset %d", o)
	}
	if err := New().Load(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Fatalf("missing file: %v", err)
	}
}

func TestBadOps(t *testing.T) {
	for _, op := range []Op{
		{Kind: "nope"},
		{Kind: OpPutTopic},
		{Kind: OpPutTopic, Topic: &TopicConfig{}},
		{Kind: OpPutGroup, Group: &SubscriptionGroup{}},
		{Kind: OpDeleteTopic},
		{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "t", QueueID: -1}}},
	} {
		if _, err := EncodeOp(op); !errors.Is(err, ErrBadOp) {
			t.Errorf("%+v: %v", op, err)
		}
		if _, err := New().Apply(1, op); !errors.Is(err, ErrBadOp) {
			t.Errorf("apply %+v: %v", op, err)
		}
	}
	if _, err := DecodeOp([]byte("{")); !errors.Is(err, ErrBadOp) {
		t.Fatal(err)
	}
}

func FuzzDecodeOp(f *testing.F) {
	b, _ := EncodeOp(Op{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "t", Offset: 1}}})
	f.Add(b)
	f.Add([]byte(`{"kind":"putTopic","topic":{"topicName":"x"}}`))
	f.Add([]byte(`{"kind":"settings","bootstrap":true,"settings":{"segmentSize":65536,"maxMessageSize":1024,"unitsPerQueueFile":1,"indexSlots":1,"indexEntries":2}}`))
	f.Add([]byte(`{"kind":"formatVersion","version":2}`))
	f.Add([]byte(`{"kind":"raftLog"}`))
	f.Add([]byte(`{"kind":"acl","acl":{"content":"YWNjb3VudHM6IFtdCg==","modified":5,"ifNewer":true,"node":"n0"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		op, err := DecodeOp(b)
		if err != nil {
			return
		}
		s := New()
		if _, err := s.Apply(1, op); err != nil {
			t.Fatalf("a decoded op failed to apply: %v", err)
		}
	})
}

func FuzzUnmarshalState(f *testing.F) {
	s := New()
	s.Apply(1, Op{Kind: OpCommitOffsets, Offsets: []OffsetCommit{{Group: "g", Topic: "t", Offset: 1}}})
	s.Apply(2, Op{Kind: OpACL, ACL: &ACLChange{Content: []byte("accounts: []\n"), Modified: 1}})
	b, _ := s.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = New().Unmarshal(b)
	})
}

func TestSettingsOps(t *testing.T) {
	s := New()
	if _, ok := s.Settings(); ok || s.FormatVersion() != 1 {
		t.Fatal("a new state has settings or a format version above 1")
	}
	a := Settings{SegmentSize: 1 << 20, MaxMessageSize: 4096, UnitsPerQueueFile: 10, IndexSlots: 4, IndexEntries: 8, DelayLevels: "1s"}
	b := a
	b.SegmentSize = 2 << 20
	for i, op := range []Op{
		{Kind: OpSettings, Bootstrap: true, Settings: &a},
		{Kind: OpSettings, Bootstrap: true, Settings: &b}, // a second bootstrap changes nothing
		{Kind: OpFormatVersion, Version: 3},
		{Kind: OpFormatVersion, Version: 2}, // never lowered
		{Kind: OpRaftLog},
		{Kind: OpRaftLog}, // a group switches once
	} {
		if _, err := s.Apply(uint64(i+1), op); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok := s.Settings(); !ok || got != a || s.FormatVersion() != 3 || s.OneLogSince() != 5 {
		t.Fatalf("settings %+v %v, version %d, one log since %d", got, ok, s.FormatVersion(), s.OneLogSince())
	}
	raw, _ := s.Marshal()
	again := New()
	if err := again.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if got, _ := again.Settings(); got != a || again.FormatVersion() != 3 || again.OneLogSince() != 5 {
		t.Fatalf("after a round trip: %+v, version %d, one log since %d", got, again.FormatVersion(), again.OneLogSince())
	}
	if d := a.Diff(b); len(d) != 1 || d[0].Key != "segmentSize" || d[0].Group != "1048576" || d[0].Node != "2097152" {
		t.Fatalf("diff %+v", d)
	}
	bad := a
	bad.MaxMessageSize = int(a.SegmentSize)
	if _, err := EncodeOp(Op{Kind: OpSettings, Settings: &bad}); !errors.Is(err, ErrBadOp) {
		t.Fatalf("a message size that does not fit a segment: %v", err)
	}
	if _, err := DecodeOp([]byte(`{"kind":"settings"}`)); !errors.Is(err, ErrBadOp) {
		t.Fatalf("settings op without settings: %v", err)
	}
}
