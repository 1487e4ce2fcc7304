package acl

import (
	"errors"
	"slices"
	"testing"
)

// Describe gives the file as written; a file Parse refuses is refused.
func TestDescribe(t *testing.T) {
	d, err := Describe([]byte(`
globalWhiteRemoteAddresses: ["10.0.0.*"]
accounts:
  - accessKey: reader-key
    secretKey: reader-secret
    whiteRemoteAddress: 192.168.1.*
    defaultTopicPerm: SUB
    topicPerms: ["orders=PUB|SUB"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.GlobalWhiteAddrs, []string{"10.0.0.*"}) || len(d.Accounts) != 1 {
		t.Fatalf("described %+v", d)
	}
	a := d.Accounts[0]
	if a.AccessKey != "reader-key" || a.SecretKey != "reader-secret" || a.WhiteRemoteAddress != "192.168.1.*" ||
		a.DefaultTopicPerm != "SUB" || !slices.Equal(a.TopicPerms, []string{"orders=PUB|SUB"}) || a.Admin {
		t.Fatalf("account described as %+v", a)
	}
	if _, err := Describe([]byte("accounts:\n  - accessKey: ab\n    secretKey: cd\n")); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("a file Parse refuses: %v", err)
	}
}

// A Description parses back into the rules it was read from: the same
// accounts, the same decisions; rules Parse refuses are refused.
func TestDescriptionParse(t *testing.T) {
	d, err := Describe([]byte(`
accounts:
  - accessKey: reader-key
    secretKey: reader-secret
    defaultTopicPerm: DENY
    topicPerms: ["orders=SUB"]
`))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := d.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if !rules.HasAccount("reader-key") || rules.HasAccount("other-key") || rules.Accounts() != 1 {
		t.Fatalf("parsed %d accounts", rules.Accounts())
	}
	acc, err := rules.AuthenticateKey("127.0.0.1:1", "reader-key", "T", func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Authorize(acc, Request{Code: "T", Resources: []Resource{{Kind: Topic, Name: "orders", Perm: Sub}}}); err != nil {
		t.Fatal(err)
	}
	if err := rules.Authorize(acc, Request{Code: "T", Resources: []Resource{{Kind: Topic, Name: "orders", Perm: Pub}}}); !errors.Is(err, ErrDenied) {
		t.Fatalf("PUB on a SUB topic: %v", err)
	}
	d.Accounts[0].SecretKey = "short"
	if _, err := d.Parse(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("a secret key Parse refuses: %v", err)
	}
}
