package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/remoting"
)

// refusingSender answers every send as a broker with its ACL on answers an
// unsigned one.
type refusingSender struct{}

func (refusingSender) Send(context.Context, *client.Message) (client.SendResult, error) {
	return client.SendResult{}, &client.SendError{Topic: "T", Outcome: client.OutcomeFailed,
		Err: &client.BrokerError{Code: remoting.NoPermission, Remark: "acl: no accessKey in SEND_MESSAGE", Addr: "b"}}
}

func (refusingSender) Close() error { return nil }

// refusingStore refuses every lookup.
type refusingStore struct{}

func (refusingStore) ByOffset(context.Context, string, string) (string, error) {
	return "", &remoting.CodeError{Code: remoting.NoPermission, Remark: "acl: no accessKey in VIEW_MESSAGE_BY_ID"}
}

func (refusingStore) CountByKey(context.Context, string, string) (int, error) {
	return 0, errors.New("unused")
}

// TestProduceCountsRefusals: NO_PERMISSION answers are counted apart from
// other failures, with the first remark, for sends and for lookups.
func TestProduceCountsRefusals(t *testing.T) {
	res, err := Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 2, Inflight: 2, Size: 64, Count: 20,
		NewSender: func(int) (Sender, error) { return refusingSender{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused != 20 || res.RefusedRemark != "acl: no accessKey in SEND_MESSAGE" || res.Summary.Failed != 20 {
		t.Fatalf("refused %d %q, failed %d", res.Refused, res.RefusedRemark, res.Summary.Failed)
	}
	v := Verify(context.Background(), "T", []Sent{{Key: "k", Outcome: OK, Broker: "b", OffsetMsgID: "x"}}, refusingStore{})
	if v.Refused != 1 || v.Lost != 1 {
		t.Fatalf("verification %+v", v)
	}
}
