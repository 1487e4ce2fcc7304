package acl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Rules().Accounts() != 2 || f.Path() != path {
		t.Fatalf("loaded %d accounts from %s", f.Rules().Accounts(), f.Path())
	}
	if admin, ok := f.Rules().FirstAdmin(); !ok || admin.AccessKey != "rocketmq2" || admin.SecretKey != "12345678" {
		t.Fatalf("first admin %+v %v", admin, ok)
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Fatalf("reload of an unchanged file: %v %v", changed, err)
	}
	if err := os.WriteFile(path, []byte(sample+"  - accessKey: third1\n    secretKey: third-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); !changed || err != nil || f.Rules().Accounts() != 3 {
		t.Fatalf("reload of a changed file: %v %v, %d accounts", changed, err, f.Rules().Accounts())
	}
	// An editor that truncates before it writes shows an empty file for a
	// moment: it must not take every account away.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || !errors.Is(err, ErrBadConfig) || f.Rules().Accounts() != 3 {
		t.Fatalf("reload of an empty file: %v %v, %d accounts (want the previous 3)", changed, err, f.Rules().Accounts())
	}
	if err := os.WriteFile(path, []byte("accounts: [ {accessKey: x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || !errors.Is(err, ErrBadConfig) || f.Rules().Accounts() != 3 {
		t.Fatalf("reload of a broken file: %v %v, %d accounts (want the previous 3)", changed, err, f.Rules().Accounts())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || err == nil || f.Rules().Accounts() != 3 {
		t.Fatalf("reload of a removed file: %v %v", changed, err)
	}
	if _, err := LoadFile(path); err == nil {
		t.Fatal("loaded a missing file")
	}
	a, err := Parse([]byte("accounts:\n  - accessKey: plain1\n    secretKey: plain-secret\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.FirstAdmin(); ok {
		t.Fatal("an admin in a file without one")
	}
}
