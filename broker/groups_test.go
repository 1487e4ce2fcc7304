package broker

import (
	"errors"
	"testing"
)

func TestParseSubscriptionGroup(t *testing.T) {
	cfg, err := parseSubscriptionGroup([]byte(`{"groupName":"g1","consumeEnable":false}`))
	if err != nil || cfg.GroupName != "g1" || cfg.ConsumeEnable || !cfg.ConsumeFromMinEnable || cfg.RetryMaxTimes != 16 {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, bad := range []string{`[]`, `{"groupName":"` + string(make([]byte, 300)) + `"}`, `{"groupName":"a/b"}`, `{"groupName":"g","retryQueueNums":100000}`} {
		if _, err := parseSubscriptionGroup([]byte(bad)); !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseSubscriptionGroup(f *testing.F) {
	f.Add([]byte(`{"groupName":"g","retryQueueNums":1,"retryMaxTimes":16,"brokerId":0}`))
	f.Add([]byte(`{"groupName":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg, err := parseSubscriptionGroup(body)
		if err == nil && validateGroup(cfg.GroupName) != nil {
			t.Fatalf("accepted group %q", cfg.GroupName)
		}
	})
}
