package grpcapi

import (
	"strings"
	"testing"
)

func TestParseAuthorization(t *testing.T) {
	sig := strings.Repeat("0A", 20)
	for _, c := range []struct {
		in, ak string
		ok     bool
	}{
		{"MQv2-HMAC-SHA1 Credential=AK1, SignedHeaders=x-mq-date-time, Signature=" + sig, "AK1", true},
		{"MQv2-HMAC-SHA1 Signature=" + strings.ToLower(sig) + ",Credential=AK2/scope,SignedHeaders=x-mq-date-time", "AK2", true},
		{"MQv2-HMAC-SHA1 Credential=AK1, SignedHeaders=x-mq-date-time, Signature=abc", "", false},
		{"MQv2-HMAC-SHA1 Credential=AK1, SignedHeaders=host, Signature=" + sig, "", false},
		{"MQv2-HMAC-SHA1 SignedHeaders=x-mq-date-time, Signature=" + sig, "", false},
		{"MQv2-HMAC-SHA1x Credential=AK1, SignedHeaders=x-mq-date-time, Signature=" + sig, "", false},
		{"Basic QUs6U0s=", "", false},
		{"", "", false},
	} {
		h, err := parseAuthorization(c.in)
		if (err == nil) != c.ok || (c.ok && h.AccessKey != c.ak) {
			t.Errorf("%q: %+v, %v", c.in, h, err)
		}
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=AK1, SignedHeaders=x-mq-date-time, Signature=" + strings.Repeat("0A", 20))
	f.Add("MQv2-HMAC-SHA1 Credential=a/b/c,,=,Signature=,SignedHeaders=;;")
	f.Add("Basic x")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseAuthorization(s)
		if err != nil {
			return
		}
		if h.AccessKey == "" || len(h.Signature) != 20 || strings.Contains(h.AccessKey, "/") {
			t.Fatalf("%q parsed as %+v", s, h)
		}
	})
}
