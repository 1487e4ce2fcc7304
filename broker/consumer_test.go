package broker

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func TestSubscriptionFromHeartbeat(t *testing.T) {
	m := newConsumerManager(consumerDeps{now: time.Now, sqlEnabled: true})
	hb := heartbeatData{ClientID: "c1", ConsumerDataSet: []consumerData{{GroupName: "g",
		SubscriptionDataSet: []subscriptionData{{Topic: "T", SubString: "A || B", SubVersion: 2, ExpressionType: "TAG"}, {Topic: "U", SubString: "*", SubVersion: 2}}}}}
	m.register(nil, hb, clientInfo{})
	if s, ok := m.subscription("g", "T"); !ok || s.expr != "A || B" || !slices.Equal(s.filter.tags.Tags, []string{"A", "B"}) {
		t.Fatalf("T subscription = %+v %v", s, ok)
	}
	// A later heartbeat without U drops it; a newer version of T replaces it.
	hb.ConsumerDataSet[0].SubscriptionDataSet = []subscriptionData{{Topic: "T", TagsSet: []string{"C"}, SubVersion: 3}}
	m.register(nil, hb, clientInfo{})
	if _, ok := m.subscription("g", "U"); ok {
		t.Fatal("U kept")
	}
	if s, _ := m.subscription("g", "T"); s.expr != "C" {
		t.Fatalf("T expr = %q", s.expr)
	}
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"clientID":"192.0.2.2@18978","producerDataSet":[{"groupName":"pg1"}],"consumerDataSet":[{"groupName":"cg1","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"%RETRY%cg1","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1795975709349293848,"expressionType":"TAG"},{"classFilterMode":false,"topic":"TestTopic","subString":"TagA || TagC","tagsSet":["TagA","TagC"],"codeSet":["2598919","2598921"],"subVersion":1795975709349275531,"expressionType":"TAG"}],"unitMode":false}]}`))
	f.Add([]byte(`{"clientID":"x","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","codeSet":[1,2]}]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"clientID":"x","consumerDataSet":[{"groupName":"a b"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := decodeHeartbeat(body)
		if err != nil {
			return
		}
		_ = dropInvalidGroups(hb)
		for _, cd := range hb.ConsumerDataSet {
			if validateGroup(cd.GroupName) != nil {
				t.Fatalf("invalid group %q kept", cd.GroupName)
			}
		}
		again, err := json.Marshal(hb)
		if err != nil {
			t.Fatal(err)
		}
		hb2, err := decodeHeartbeat(again)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", again, err)
		}
		if again2, _ := json.Marshal(hb2); string(again2) != string(again) {
			t.Fatalf("round trip differs:\n%s\n%s", again, again2)
		}
		m := newConsumerManager(consumerDeps{now: time.Now, sqlEnabled: true})
		m.register(nil, *hb, clientInfo{})
		for _, cd := range hb.ConsumerDataSet {
			_ = m.clientIDs(cd.GroupName)
		}
	})
}
