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
