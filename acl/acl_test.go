package acl

import (
	"errors"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/auth"
)

const sample = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.{1,2}
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress: 192.168.9.*
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: "12345678"
    admin: true
`

func signed(ak, sk string, ext map[string]string, body []byte) map[string]string {
	auth.Sign(ext, body, auth.Credentials{AccessKey: ak, SecretKey: sk})
	return ext
}

func TestACLParse(t *testing.T) {
	a, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	acc := a.accounts["RocketMQ"]
	if a.Accounts() != 2 || acc.SecretKey != "12345678" || acc.DefaultGroup != Sub || acc.DefaultTopic != Deny ||
		acc.Topics["topicB"] != Pub|Sub || acc.Topics["topicA"] != Deny || acc.Groups["groupA"] != Deny || !a.accounts["rocketmq2"].Admin {
		t.Fatalf("parsed %+v", acc)
	}
	for name, bad := range map[string]string{
		"short key":   "accounts:\n  - accessKey: ab\n    secretKey: 12345678\n",
		"duplicate":   "accounts:\n  - {accessKey: abcdefg, secretKey: 12345678}\n  - {accessKey: abcdefg, secretKey: 12345678}\n",
		"bad perm":    "accounts:\n  - {accessKey: abcdefg, secretKey: 12345678, topicPerms: [nope]}\n",
		"bad address": "globalWhiteRemoteAddresses: [1.2.3]\n",
		"bad range":   "globalWhiteRemoteAddresses: [1.2.9-3.*]\n",
		"not yaml":    "accounts: [",
		"too big":     strings.Repeat(" ", MaxFileSize+1),
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestACLCheck(t *testing.T) {
	a, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("payload")
	good := func() map[string]string {
		return signed("RocketMQ", "12345678", map[string]string{"topic": "topicB"}, body)
	}
	pub := func(topic string) []Resource { return []Resource{{Kind: Topic, Name: topic, Perm: Pub}} }
	cases := []struct {
		name string
		req  Request
		want string // "" allowed, else a substring of the refusal
	}{
		{"signed PUB on PUB|SUB", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: pub("topicB")}, ""},
		{"signed SUB on SUB topic", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: []Resource{{Topic, "topicC", Sub}}}, ""},
		{"PUB on SUB topic", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: pub("topicC")}, "No permission to PUB topic topicC for accessKey RocketMQ"},
		{"DENY topic", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: []Resource{{Topic, "topicA", Sub}}}, "topic topicA"},
		{"default topic DENY", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: pub("other")}, "topic other"},
		{"default group SUB", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: []Resource{{Group, "g", Sub}}}, ""},
		{"DENY group", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: []Resource{{Group, "groupA", Sub}}}, "SUB group groupA"},
		{"ANY on SUB group", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Resources: []Resource{{Group, "g", Any}}}, ""},
		{"body tampered", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: []byte("x"), Resources: pub("topicB")}, "signature"},
		{"wrong secret", Request{RemoteAddr: "127.0.0.1:5", Ext: signed("RocketMQ", "wrongwrong", map[string]string{}, nil), Resources: pub("topicB")}, "signature"},
		{"unknown account", Request{RemoteAddr: "127.0.0.1:5", Ext: signed("nobody1", "12345678", map[string]string{}, nil)}, "no account"},
		{"missing credentials", Request{RemoteAddr: "127.0.0.1:5", Ext: map[string]string{"topic": "topicB"}, Code: "SEND_MESSAGE"}, "no accessKey in SEND_MESSAGE"},
		{"admin needed", Request{RemoteAddr: "127.0.0.1:5", Ext: good(), Body: body, Admin: true, Code: "UPDATE_AND_CREATE_TOPIC"}, "UPDATE_AND_CREATE_TOPIC needs an admin account"},
		{"admin account", Request{RemoteAddr: "127.0.0.1:5", Ext: signed("rocketmq2", "12345678", map[string]string{}, nil), Admin: true}, ""},
		{"global white, unsigned", Request{RemoteAddr: "10.10.103.7:9", Ext: map[string]string{}, Admin: true, Resources: pub("topicA")}, ""},
		{"global white set", Request{RemoteAddr: "192.168.0.2:9", Ext: map[string]string{}}, ""},
		{"not in global set", Request{RemoteAddr: "192.168.0.3:9", Ext: map[string]string{}}, "no accessKey"},
		{"token added after signing", Request{RemoteAddr: "127.0.0.1:5", Ext: func() map[string]string { e := good(); e[auth.FieldSecurityToken] = "tok"; return e }(), Body: body, Resources: pub("topicB")}, ""},
		{"token signed", Request{RemoteAddr: "127.0.0.1:5", Ext: signed("RocketMQ", "12345678", map[string]string{auth.FieldSecurityToken: "tok"}, body), Body: body}, ""},
		{"account white, unsigned", Request{RemoteAddr: "192.168.9.4:9", Ext: map[string]string{auth.FieldAccessKey: "RocketMQ"}}, ""},
	}
	for _, c := range cases {
		err := a.Check(c.req)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want refusal naming %q", c.name, err, c.want)
		}
	}
}

func TestACLAddrPatterns(t *testing.T) {
	for pat, hosts := range map[string]map[string]bool{
		"*":                {"1.2.3.4": true, "::1": true},
		"10.0.1-10.*":      {"10.0.5.200": true, "10.0.11.1": false, "10.1.5.1": false},
		"127.0.0.1":        {"127.0.0.1": true, "127.0.0.2": false},
		"127.0.0.1,::1":    {"::1": true, "127.0.0.1": true, "1.1.1.1": false},
		"192.168.0.{1, 3}": {"192.168.0.3": true, "192.168.0.2": false},
	} {
		m, err := parseAddr(pat)
		if err != nil {
			t.Fatalf("%s: %v", pat, err)
		}
		for h, want := range hosts {
			if m.match(h) != want {
				t.Errorf("%s matching %s: want %v", pat, h, want)
			}
		}
	}
}

// BenchmarkACLCheck is the cost of deciding one signed SEND_MESSAGE of a
// 1 KiB body (the HMAC over its fields and body, and the permission).
func BenchmarkACLCheck(b *testing.B) {
	a, err := Parse([]byte(sample))
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1024)
	ext := signed("RocketMQ", "12345678", map[string]string{"producerGroup": "pg", "topic": "topicB", "queueId": "1",
		"sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0", "properties": "UNIQ_KEY\x01abc\x02", "bname": "broker-a"}, body)
	req := Request{RemoteAddr: "127.0.0.1:5", Ext: ext, Body: body, Code: "SEND_MESSAGE", Resources: []Resource{{Topic, "topicB", Pub}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Check(req); err != nil {
			b.Fatal(err)
		}
	}
}
