package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNamesrvACLFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(devACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yml")
	if err := os.WriteFile(broken, []byte("accounts: [ {accessKey: x"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "namesrv", "--check-config", "--acl-enable", "--acl-file", file)
	if err != nil || !strings.Contains(out, `acl="`+file+`"`) {
		t.Fatalf("check-config with the ACL: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "namesrv", "--check-config"); err != nil || strings.Contains(out, "acl=") {
		t.Fatalf("check-config without the ACL: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--acl-enable"}, {"--acl-file", file}, {"--acl-enable", "--acl-file", broken}} {
		if _, _, err := runCLI(t, append([]string{"namesrv", "--check-config"}, args...)...); err == nil {
			t.Errorf("namesrv %v accepted", args)
		}
	}
}

func TestBrokerNamesrvCredentials(t *testing.T) {
	c, err := loadWith(t, "b.conf", "namesrv.access_key=broker-node\nnamesrv.secret_key=broker-secret\n")
	if err != nil {
		t.Fatal(err)
	}
	if bc := c.brokerConfig(); bc.NamesrvCredentials.AccessKey != "broker-node" || bc.NamesrvCredentials.SecretKey != "broker-secret" {
		t.Fatalf("broker config credentials %+v", bc.NamesrvCredentials)
	}
	if s := settingOf(c, "namesrv.secret_key"); s.Value != "(set)" {
		t.Fatalf("the secret key is shown as %q", s.Value)
	}
	if _, err := loadWith(t, "b.conf", "namesrv.access_key=broker-node\n"); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("an access key without its secret: %v", err)
	}
}
