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
