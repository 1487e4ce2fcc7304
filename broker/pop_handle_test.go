package broker

import (
	"errors"
	"testing"
)

func TestReceiptHandleRoundTrip(t *testing.T) {
	h := ReceiptHandle{BrokerName: "broker-a", Group: "cg", Topic: "T", QueueID: 7, Offset: 1 << 40, Epoch: 3}
	got, err := DecodeReceiptHandle(h.Encode())
	if err != nil || got != h {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	s := []byte(h.Encode())
	s[len(s)/2] ^= 1
	if _, err := DecodeReceiptHandle(string(s)); !errors.Is(err, ErrInvalidReceipt) {
		t.Fatalf("a damaged handle: %v", err)
	}
}

// FuzzDecodeReceiptHandle: the decoder never panics, refuses with
// ErrInvalidReceipt, and what it accepts encodes back to itself.
func FuzzDecodeReceiptHandle(f *testing.F) {
	f.Add(ReceiptHandle{BrokerName: "broker-a", Group: "cg", Topic: "T", QueueID: 1, Offset: 2, Epoch: 1}.Encode())
	f.Add(ReceiptHandle{Group: "g", Topic: "t", Epoch: 1 << 62}.Encode())
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := DecodeReceiptHandle(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidReceipt) {
				t.Fatalf("error %v is not ErrInvalidReceipt", err)
			}
			return
		}
		again, err := DecodeReceiptHandle(h.Encode())
		if err != nil || again != h {
			t.Fatalf("re-encoding %+v: %+v %v", h, again, err)
		}
	})
}
