package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
)

const benchACL = `
accounts:
  - accessKey: bench1
    secretKey: bench-secret-1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: nopub1
    secretKey: nopub-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
`

// TestBenchProduceVerifyACL runs `ledgermq bench produce --verify` against
// a 3-node group with its ACL on: with an account's keys every send is
// acknowledged and read back (the verification's lookups are signed too);
// without keys, or with an account that may not PUB, the run fails naming
// NO_PERMISSION.
func TestBenchProduceVerifyACL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(benchACL), 0o600); err != nil {
		t.Fatal(err)
	}
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.ACLEnable, c.ACLFile = true, file
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
	})
	ns := tc.NamesrvAddr()
	creds := []string{"--access-key", "bench1", "--secret-key", "bench-secret-1"}
	waitFor(t, 20*time.Second, "a first acknowledged send", func() bool {
		out, _, err := runCLI(t, append([]string{"bench", "produce", "-n", ns, "--topic", "BenchACL", "--count", "1",
			"--producers", "1", "--inflight", "1"}, creds...)...)
		return err == nil && strings.Contains(out, "acked=1 ")
	})
	out, errOut, err := runCLI(t, append([]string{"bench", "produce", "-n", ns, "--topic", "BenchACL",
		"--producers", "2", "--inflight", "4", "--count", "300", "--size", "256", "--verify"}, creds...)...)
	if err != nil {
		t.Fatalf("bench with credentials: %v\n%s\n%s", err, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^summary: sent=300 acked=300 failed=0 unknown=0 `).MatchString(out) ||
		!strings.Contains(out, "verify: lost=0 duplicates=0 unknown-stored=0 failed-stored=0") {
		t.Fatalf("stdout:\n%s", out)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"without credentials", nil, "no accessKey in SEND_MESSAGE"},
		{"an account that may not PUB", []string{"--access-key", "nopub1", "--secret-key", "nopub-secret-1"}, "No permission to PUB topic BenchACL for accessKey nopub1"},
	} {
		out, errOut, err := runCLI(t, append([]string{"bench", "produce", "-n", ns, "--topic", "BenchACL", "--count", "5",
			"--producers", "1", "--inflight", "1", "--send-timeout", "500ms", "--verify"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), "NO_PERMISSION") || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want an error naming NO_PERMISSION and %q\n%s\n%s", c.name, err, c.want, out, errOut)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
