package protocol

import (
	"errors"
	"strings"
	"testing"
)

// The Go client writes tag codes as strings, Java as numbers: both decode,
// and they are written as numbers.
func TestHeartbeatCodeSetBothForms(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[` +
		`{"topic":"T","tagsSet":["A","B"],"codeSet":["65",66,"x",1e99],"subVersion":1795975709351000001}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := hb.ConsumerDataSet[0].SubscriptionDataSet[0]
	if len(s.CodeSet) != 2 || s.CodeSet[0] != 65 || s.CodeSet[1] != 66 {
		t.Fatalf("codeSet %v", s.CodeSet)
	}
	if s.SubVersion != 1795975709351000001 {
		t.Fatalf("subVersion %d (precision lost)", s.SubVersion)
	}
	enc, err := hb.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(enc), `"codeSet":[65,66]`) || !strings.Contains(string(enc), `"producerDataSet":[]`) {
		t.Fatalf("encoded %s", enc)
	}
}

func TestDecodeHeartbeatRejects(t *testing.T) {
	many := `{"clientID":"c","producerDataSet":[` + strings.Repeat(`{"groupName":"p"},`, MaxHeartbeatGroups) + `{"groupName":"p"}]}`
	for name, body := range map[string]string{
		"not an object":       `[]`,
		"null":                `null`,
		"no client id":        `{"producerDataSet":[{"groupName":"p"}]}`,
		"unnamed producer":    `{"clientID":"c","producerDataSet":[{}]}`,
		"empty topic":         `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":""}]}]}`,
		"codes not an array":  `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","codeSet":{}}]}]}`,
		"too many producers":  many,
		"truncated":           `{"clientID":"c"`,
		"wrong type clientID": `{"clientID":1}`,
	} {
		if _, err := DecodeHeartbeat([]byte(body)); !errors.Is(err, ErrBadBody) {
			t.Errorf("%s: %v, want ErrBadBody", name, err)
		}
	}
}
