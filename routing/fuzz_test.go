package routing

import (
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
)

// FuzzRegister drives the whole REGISTER_BROKER path short of the network
// (ext fields, checksum, body, fencing) with hostile values: no panic, an
// error of this package or success, and a table whose routes stay
// consistent with its members.
func FuzzRegister(f *testing.F) {
	good, err := RegisterCommand(brokerReq(0, 0, 3, topic("T", 4)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("0", addr(0), "0", "", "false", good.Body)
	f.Add("1", addr(1), good.ExtFields["bodyCrc32"], "30000", "false", good.Body)
	f.Add("-1", "nowhere", "x", "-1", "true", []byte("{"))
	z, err := (&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigWrapper{
		TopicConfigTable: map[string]protocol.TopicConfig{"A": topic("A", 1)}}}).Encode(true)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("9223372036854775807", "[::1]:1", "0", "86400001", "TRUE", z)
	f.Fuzz(func(t *testing.T, brokerID, brokerAddr, crc, timeout, compressed string, body []byte) {
		s, err := NewServer(Config{Clock: NewManualClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{
			"clusterName": "c", "brokerName": "b", "haServerAddr": "",
			"brokerId": brokerID, "brokerAddr": brokerAddr, "bodyCrc32": crc,
			"compressed": compressed,
		}
		if timeout != "" {
			ext["heartbeatTimeoutMillis"] = timeout
		}
		// A leader at term 3 is there first, so fencing is exercised too.
		if _, err := s.table.Register(reg(0, 0, 3, topic("T", 4))); err != nil {
			t.Fatal(err)
		}
		_, err = s.register(ext, body, fakeConn(2))
		if err != nil && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrBadBody) &&
			!errors.Is(err, ErrBodyCRC) && !errors.Is(err, ErrStaleTerm) {
			t.Fatalf("unexpected error class: %v", err)
		}
		tb := s.Table()
		for _, name := range tb.Topics() {
			r, ok := tb.Route(name)
			if !ok || len(r.QueueDatas) != len(r.BrokerDatas) || len(r.BrokerDatas) == 0 {
				t.Fatalf("topic %q listed without a consistent route: %+v", name, r)
			}
			for _, bd := range r.BrokerDatas {
				if len(bd.BrokerAddrs) == 0 {
					t.Fatalf("topic %q routed to an empty group", name)
				}
			}
		}
		for _, m := range tb.Members() {
			if m.BrokerID < 0 || checkAddr(m.Addr) != nil {
				t.Fatalf("member registered with id %d at %q", m.BrokerID, m.Addr)
			}
		}
		ctx := ctxGuard(t)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
