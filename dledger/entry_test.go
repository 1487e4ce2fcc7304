package dledger

import (
	"bytes"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
)

func FuzzDecodeEntry(f *testing.F) {
	rec, _ := message.AppendRecord(nil, func() *message.Ext {
		m := testMsg("T", 0, "body")
		m.StoreHost = testBorn
		return m
	}())
	f.Add(encodeMessagesEntry([][]byte{rec, rec}))
	meta, _ := encodeMetadataEntry(metadata.Op{Kind: metadata.OpDeleteTopic, Name: "x"})
	f.Add(meta)
	aclMeta, _ := encodeMetadataEntry(metadata.Op{Kind: metadata.OpACL, ACL: &metadata.ACLChange{Content: []byte("accounts: []\n")}})
	f.Add(aclMeta)
	popMeta, _ := encodeMetadataEntry(metadata.Op{Kind: metadata.OpPop, Pop: []metadata.PopChange{{Group: "g", Topic: "t", Move: true, To: 1,
		Put: []metadata.PopReceipt{{Offset: 0, Until: 1, Attempt: 1, Epoch: 1}}}}})
	f.Add(popMeta)
	both, _ := encodeMessagesOpEntry([][]byte{rec}, metadata.Op{Kind: metadata.OpDeleteTopic, Name: "x"})
	f.Add(both)
	f.Add([]byte{1})
	f.Add(encodeCheckpointEntry(10, 4096, 0xdeadbeef))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		if e.typ == entryTypeMessagesOp {
			if _, err := encodeMessagesOpEntry(e.recs, e.op); err != nil {
				t.Fatalf("a decoded op does not encode: %v", err)
			}
		}
		if e.typ == entryTypeCheckpoint {
			if again := encodeCheckpointEntry(e.from, e.to, e.sum); !bytes.Equal(again, b) {
				t.Fatalf("re-encoded checkpoint differs:\n%x\n%x", again, b)
			}
		}
		if e.typ == entryTypeMessages {
			// The records round-trip byte for byte, and each decodes.
			if again := encodeMessagesEntry(e.recs); !bytes.Equal(again, b) {
				t.Fatalf("re-encoded entry differs:\n%x\n%x", again, b)
			}
			for i, r := range e.recs {
				if _, _, err := message.DecodeRecord(r); err != nil {
					t.Fatalf("record %d passed the entry check but does not decode: %v", i, err)
				}
			}
		}
	})
}

// TestPopEntryVersion: a POP op travels in a metadata entry of version 4,
// decodes back, and is refused under any other version byte; a version-4
// entry carrying another kind is refused too.
func TestPopEntryVersion(t *testing.T) {
	op := metadata.Op{Kind: metadata.OpPop, Pop: []metadata.PopChange{{Group: "g", Topic: "t", QueueID: 1, Del: []metadata.PopDel{{Offset: 3, Epoch: 2}}}}}
	b, err := encodeMetadataEntry(op)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != popVersion {
		t.Fatalf("version byte %d", b[0])
	}
	e, err := decodeEntry(b)
	if err != nil || e.op.Kind != metadata.OpPop || len(e.op.Pop) != 1 || e.op.Pop[0].Del[0].Epoch != 2 {
		t.Fatalf("decoded %+v, %v", e.op, err)
	}
	for _, v := range []byte{entryVersion, aclVersion, popVersion + 1} {
		bad := append([]byte{v}, b[1:]...)
		if _, err := decodeEntry(bad); err == nil {
			t.Fatalf("a pop op under version byte %d decoded", v)
		}
	}
	other, _ := encodeMetadataEntry(metadata.Op{Kind: metadata.OpDeleteTopic, Name: "x"})
	if _, err := decodeEntry(append([]byte{popVersion}, other[1:]...)); err == nil {
		t.Fatal("a deleteTopic op under version byte 4 decoded")
	}
	if _, err := encodeMessagesOpEntry(nil, op); err == nil {
		t.Fatal("a pop op travelled with messages")
	}
}

// TestFIFOGroupEntryVersion: a putGroup op of a FIFO group travels in a
// metadata entry of version 5 and decodes back; under version byte 1 it
// is refused, as a plain group's putGroup is under 5, and it does not
// travel with messages.
func TestFIFOGroupEntryVersion(t *testing.T) {
	fifo := metadata.Op{Kind: metadata.OpPutGroup, Group: &metadata.SubscriptionGroup{GroupName: "g", ConsumeMessageOrderly: true}}
	b, err := encodeMetadataEntry(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != fifoVersion {
		t.Fatalf("version byte %d", b[0])
	}
	e, err := decodeEntry(b)
	if err != nil || e.op.Group == nil || !e.op.Group.ConsumeMessageOrderly {
		t.Fatalf("decoded %+v, %v", e.op, err)
	}
	if _, err := decodeEntry(append([]byte{entryVersion}, b[1:]...)); err == nil {
		t.Fatal("a FIFO group's putGroup under version byte 1 decoded")
	}
	plain, _ := encodeMetadataEntry(metadata.Op{Kind: metadata.OpPutGroup, Group: &metadata.SubscriptionGroup{GroupName: "g"}})
	if plain[0] != entryVersion {
		t.Fatalf("a plain group's putGroup has version byte %d", plain[0])
	}
	if _, err := decodeEntry(append([]byte{fifoVersion}, plain[1:]...)); err == nil {
		t.Fatal("a plain group's putGroup under version byte 5 decoded")
	}
	if _, err := encodeMessagesOpEntry(nil, fifo); err == nil {
		t.Fatal("a FIFO group's putGroup travelled with messages")
	}
}
