package broker

import (
	"net/netip"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// A send whose fields a connection left in a list is read as the same
// request as with a map: its header, and the forwarding fields.
func TestSendFieldsFromList(t *testing.T) {
	h := protocol.SendMessageRequestHeaderV2{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 1, BornTimestamp: 7, Properties: "A\x011\x02"}
	ext := h.Encode()
	ext[extForwardedFrom] = "10.0.0.1:5000"
	ext[extForwardHops] = "2"
	byMap := &remoting.Command{Code: remoting.SendMessageV2, ExtFields: ext}
	byList := &remoting.Command{Code: remoting.SendMessageV2}
	for k, v := range ext {
		byList.ExtList = append(byList.ExtList, remoting.ExtField{Key: k, Value: v})
	}
	hm, errM := parseSendHeader(byMap)
	hl, errL := parseSendHeader(byList)
	if errM != nil || errL != nil || hm != hl {
		t.Fatalf("map %+v, %v; list %+v, %v", hm, errM, hl, errL)
	}
	if forwardHops(byList) != 2 || bornHost(nil, byList) != netip.MustParseAddrPort("10.0.0.1:5000") {
		t.Fatalf("list: hops %d, born %v", forwardHops(byList), bornHost(nil, byList))
	}
}
