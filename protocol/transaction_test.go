package protocol

import (
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// What rocketmq-client-go sends when it answers a check (captured).
func TestEndTransactionCaptured(t *testing.T) {
	var h EndTransactionRequestHeader
	err := h.Decode(map[string]string{"producerGroup": "pg", "commitOrRollback": "8", "fromTransactionCheck": "true",
		"commitLogOffset": "1241", "tranStateTableOffset": "0", "msgId": "C0A8000100002A9F", "transactionId": "C0A8000100002A9F", "bname": ""})
	if err != nil {
		t.Fatal(err)
	}
	want := EndTransactionRequestHeader{ProducerGroup: "pg", CommitLogOffset: 1241, CommitOrRollback: TransactionCommit,
		FromTransactionCheck: true, MsgID: "C0A8000100002A9F", TransactionID: "C0A8000100002A9F"}
	if h != want {
		t.Fatalf("decoded %+v, want %+v", h, want)
	}
	req := h.Request("boom")
	if req.Code != remoting.EndTransaction || req.Remark != "boom" || req.ExtFields["commitOrRollback"] != "8" {
		t.Fatalf("request %+v", req)
	}
}

func TestEndTransactionRejects(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"producerGroup": "pg", "tranStateTableOffset": "0", "commitLogOffset": "0",
			"commitOrRollback": "8", "msgId": "m"}
	}
	for name, c := range map[string]struct {
		edit func(map[string]string)
		want error
	}{
		"no group":        {func(m map[string]string) { delete(m, "producerGroup") }, remoting.ErrMissingField},
		"no msgId":        {func(m map[string]string) { delete(m, "msgId") }, remoting.ErrMissingField},
		"no state":        {func(m map[string]string) { delete(m, "commitOrRollback") }, remoting.ErrMissingField},
		"state 4":         {func(m map[string]string) { m["commitOrRollback"] = "4" }, remoting.ErrBadHeader},
		"negative offset": {func(m map[string]string) { m["commitLogOffset"] = "-1" }, remoting.ErrBadHeader},
		"bad number":      {func(m map[string]string) { m["tranStateTableOffset"] = "x" }, remoting.ErrBadHeader},
	} {
		m := base()
		c.edit(m)
		var h EndTransactionRequestHeader
		if err := h.Decode(m); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestCheckTransactionStateRoundTrip(t *testing.T) {
	h := CheckTransactionStateRequestHeader{TranStateTableOffset: 3, CommitLogOffset: 1241, MsgID: "u", TransactionID: "u",
		OffsetMsgID: "7F00", Topic: "T", BrokerName: "broker-a"}
	req := h.Request([]byte("rec"))
	var got CheckTransactionStateRequestHeader
	if err := got.Decode(req.ExtFields); err != nil || got != h || req.Code != remoting.CheckTransactionState {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if err := got.Decode(map[string]string{"commitLogOffset": "1"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("missing tranStateTableOffset: %v", err)
	}
}
