package protocol

import (
	"errors"
	"testing"
)

// TestSubscriptionGroupConfigWire pins the JSON field names Java's mqadmin
// and our admin use, and the defaults of the fields a body leaves out.
func TestSubscriptionGroupConfigWire(t *testing.T) {
	c := DefaultSubscriptionGroupConfig("g")
	got, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,` +
		`"consumeMessageOrderly":false,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,` +
		`"notifyConsumerIdsChangedEnable":true}`
	if string(got) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", got, want)
	}
	d, err := DecodeSubscriptionGroupConfig([]byte(`{"groupName":"g","consumeEnable":false,"retryMaxTimes":3,"groupSysFlag":0}`))
	if err != nil {
		t.Fatal(err)
	}
	exp := DefaultSubscriptionGroupConfig("g")
	exp.ConsumeEnable, exp.RetryMaxTimes = false, 3
	if *d != exp {
		t.Fatalf("decoded %+v, want %+v", *d, exp)
	}
	if m := d.Metadata(); SubscriptionGroupConfigOf(m) != exp {
		t.Fatalf("metadata round trip %+v", m)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"groupName":1}`, `{"retryQueueNums":2147483648}`} {
		if _, err := DecodeSubscriptionGroupConfig([]byte(bad)); !errors.Is(err, ErrBadBody) {
			t.Errorf("%q: %v, want ErrBadBody", bad, err)
		}
	}
	w, err := DecodeSubscriptionGroupWrapper([]byte(`{"subscriptionGroupTable":{"g":{"groupName":"g"}},"dataVersion":{"counter":41}}`))
	if err != nil {
		t.Fatal(err)
	}
	if w.SubscriptionGroupTable["g"] != DefaultSubscriptionGroupConfig("g") || w.DataVersion.Counter != 41 {
		t.Fatalf("wrapper %+v", w)
	}
}

// TestKVTableWire pins the runtime-info body's shape.
func TestKVTableWire(t *testing.T) {
	got, err := (&KVTable{Table: map[string]string{"b": "2", "a": "1"}}).Encode()
	if err != nil || string(got) != `{"table":{"a":"1","b":"2"}}` {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := DecodeKVTable([]byte(`{"table":{"a":1}}`)); !errors.Is(err, ErrBadBody) {
		t.Fatalf("number value: %v", err)
	}
}
