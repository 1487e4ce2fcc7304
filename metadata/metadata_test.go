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
	b, _ := s.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = New().Unmarshal(b)
	})
}
