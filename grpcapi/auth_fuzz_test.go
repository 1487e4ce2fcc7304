package grpcapi

import (
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
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

func TestParseRelay(t *testing.T) {
	sig := strings.Repeat("0A", 20)
	good := "MQv2-HMAC-SHA1 Credential=proxyadmin, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature=" + sig
	node := "LedgerMQ-Node-HMAC-SHA256 Credential=n1, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature=" + strings.Repeat("0A", 32)
	md := func(kv ...string) metadata.MD { return metadata.Pairs(kv...) }
	for name, c := range map[string]struct {
		md             metadata.MD
		stated, ok     bool
		addr, accessKy string
	}{
		"none":    {md("authorization", "x"), false, true, "", ""},
		"good":    {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization, good), true, true, "127.0.0.2:5", "proxyadmin"},
		"mapped":  {md(mdRelayedFor, "[::ffff:127.0.0.2]:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization, good), true, true, "127.0.0.2:5", "proxyadmin"},
		"partial": {md(mdRelayedFor, "127.0.0.2:5"), true, false, "", ""},
		"twice":   {md(mdRelayedFor, "127.0.0.2:5", mdRelayedFor, "127.0.0.3:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization, good), true, false, "", ""},
		"no port": {md(mdRelayedFor, "127.0.0.2", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization, good), true, false, "", ""},
		"date":    {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "yesterday", mdRelayAuthorization, good), true, false, "", ""},
		"unsigned address": {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization,
			"MQv2-HMAC-SHA1 Credential=proxyadmin, SignedHeaders=x-ledgermq-relay-date-time, Signature="+sig), true, false, "", ""},
		"node": {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization, node), true, true, "127.0.0.2:5", "n1"},
		"node with a SHA-1 signature": {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization,
			"LedgerMQ-Node-HMAC-SHA256 Credential=n1, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+sig), true, false, "", ""},
		"proxy with a SHA-256 signature": {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization,
			"MQv2-HMAC-SHA1 Credential=proxyadmin, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+strings.Repeat("0A", 32)), true, false, "", ""},
		"node scheme run on": {md(mdRelayedFor, "127.0.0.2:5", mdRelayDateTime, "20240102T030405Z", mdRelayAuthorization,
			"LedgerMQ-Node-HMAC-SHA256x Credential=n1, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+strings.Repeat("0A", 32)), true, false, "", ""},
	} {
		r, stated, err := parseRelay(c.md)
		if stated != c.stated || (err == nil) != c.ok || (c.ok && c.stated && (r.addr.String() != c.addr || r.auth.AccessKey != c.accessKy)) {
			t.Errorf("%s: %+v stated %v, %v", name, r, stated, err)
		}
		if err == nil && stated && r.node != (name == "node") {
			t.Errorf("%s: node statement %v", name, r.node)
		}
	}
}

// A relay's statement from the network either is refused or names a
// valid address, an access key and a signature: a proxy's of 20 bytes in
// its scheme, a node's of 32 bytes in its own.
func FuzzParseRelay(f *testing.F) {
	f.Add("127.0.0.2:5", "20240102T030405Z", "MQv2-HMAC-SHA1 Credential=proxyadmin, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+strings.Repeat("0A", 20))
	f.Add("[::1]:0", "x", "MQv2-HMAC-SHA1 Credential=a/b,,=,Signature=,SignedHeaders=;;")
	f.Add("", "", "")
	f.Add("127.0.0.2:5", "20240102T030405Z", "LedgerMQ-Node-HMAC-SHA256 Credential=n1, SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+strings.Repeat("0A", 32))
	f.Add("[::ffff:127.0.0.2]:5", "20240102T030405Z", "LedgerMQ-Node-HMAC-SHA256 Credential=n1, SignedHeaders=x-ledgermq-relayed-for, Signature="+strings.Repeat("0A", 20))
	f.Fuzz(func(t *testing.T, addr, dt, authz string) {
		r, stated, err := parseRelay(metadata.Pairs(mdRelayedFor, addr, mdRelayDateTime, dt, mdRelayAuthorization, authz))
		if !stated {
			t.Fatal("a call with every entry stated nothing")
		}
		if err != nil {
			return
		}
		want, scheme := 20, "MQv2-HMAC-SHA1"
		if r.node {
			want, scheme = 32, "LedgerMQ-Node-HMAC-SHA256"
		}
		if !r.addr.IsValid() || r.auth.AccessKey == "" || len(r.auth.Signature) != want || r.forRaw != addr ||
			!strings.HasPrefix(strings.TrimSpace(authz), scheme) {
			t.Fatalf("%q %q %q parsed as %+v", addr, dt, authz, r)
		}
	})
}
