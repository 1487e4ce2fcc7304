package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

func TestParseDelayLevels(t *testing.T) {
	def, err := ParseDelayLevels(DefaultDelayLevels)
	if err != nil || len(def) != 18 || def[0] != time.Second || def[4] != time.Minute || def[17] != 2*time.Hour {
		t.Fatalf("default table: %v %v", def, err)
	}
	if got, err := ParseDelayLevels(" 500ms 2d "); err != nil || fmt.Sprint(got) != "[500ms 48h0m0s]" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "1s x", "0s", "-1s", "1y", strings.Repeat("1s ", 65)} {
		if _, err := ParseDelayLevels(bad); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDelayLevelOf(t *testing.T) {
	b := &Broker{cfg: Config{DelayLevels: []time.Duration{time.Second, 2 * time.Second}}}
	for _, tt := range []struct {
		delay   string
		sysFlag int32
		want    int
	}{
		{"", 0, 0}, {"1", 0, 1}, {"2", 0, 2}, {"9", 0, 2}, {"0", 0, 0}, {"-3", 0, 0}, {"x", 0, 0},
		{"1", message.SysFlagTransactionPrepared, 0}, {"1", message.SysFlagTransactionCommit, 1},
	} {
		props := map[string]string{}
		if tt.delay != "" {
			props[message.PropertyDelayLevel] = tt.delay
		}
		if got := b.delayLevelOf(props, tt.sysFlag); got != tt.want {
			t.Errorf("DELAY=%q sysFlag %#x: level %d, want %d", tt.delay, tt.sysFlag, got, tt.want)
		}
	}
}

func TestUnpark(t *testing.T) {
	m := &message.Ext{Message: message.Message{Topic: scheduleTopic, Body: []byte("b"), Properties: map[string]string{
		message.PropertyRealTopic: "T", message.PropertyRealQueueID: "3", message.PropertyDelayLevel: "2", message.PropertyUniqKey: "U"}},
		ReconsumeTimes: 2, BornTimestamp: 7}
	d, ok := unpark(m)
	if !ok || d.Topic != "T" || d.QueueID != 3 || d.Properties[message.PropertyDelayLevel] != "" || d.UniqKey() != "U" ||
		d.ReconsumeTimes != 2 || d.BornTimestamp != 7 || string(d.Body) != "b" {
		t.Fatalf("unpark: %+v %v", d, ok)
	}
	for _, props := range []map[string]string{
		{},
		{message.PropertyRealTopic: "T"},
		{message.PropertyRealTopic: "T", message.PropertyRealQueueID: "-1"},
		{message.PropertyRealTopic: "T", message.PropertyRealQueueID: "x"},
		{message.PropertyRealTopic: scheduleTopic, message.PropertyRealQueueID: "0"},
		{message.PropertyRealTopic: "bad topic", message.PropertyRealQueueID: "0"},
	} {
		if _, ok := unpark(&message.Ext{Message: message.Message{Properties: props}}); ok {
			t.Errorf("unparked %v", props)
		}
	}
}
