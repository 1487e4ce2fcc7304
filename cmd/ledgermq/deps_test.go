package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const modulePath = "github.com/ledgermq/ledgermq"

// testOnlyPackages are this module's packages that exist for tests: the
// fault-injecting network and the harnesses that start groups in a test
// process. The binary must link none of them.
var testOnlyPackages = []string{
	modulePath + "/internal/faultnet",
	modulePath + "/dledger/dledgertest",
	modulePath + "/broker/brokertest",
}

// TestBinaryLinksNoTestCode lists what a plain `go build ./cmd/ledgermq`
// (no build tags) links: none of the test-only packages, and no package of
// this module imports testing. Package testing itself still ends up in the
// binary, because hashicorp/raft imports it from a non-test file of its
// own (its in-memory test transport), so the check is on who imports it.
func TestBinaryLinksNoTestCode(t *testing.T) {
	// go test puts its own GOROOT/bin first on PATH, so this is the go
	// tool running the test.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".")
	// The binary as a plain build makes it: no tags from the environment.
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		seen[pkg] = true
		for _, bad := range testOnlyPackages {
			if pkg == bad {
				t.Errorf("the binary links %s", pkg)
			}
		}
		if pkg != modulePath && !strings.HasPrefix(pkg, modulePath+"/") {
			continue
		}
		for _, imp := range imports {
			if imp == "testing" || strings.HasPrefix(imp, "testing/") {
				t.Errorf("%s (linked into the binary) imports %s", pkg, imp)
			}
		}
	}
	// A listing that missed the command would pass vacuously.
	for _, want := range []string{modulePath + "/cmd/ledgermq", modulePath + "/broker", modulePath + "/dledger"} {
		if !seen[want] {
			t.Fatalf("go list -deps does not list %s; output:\n%s", want, out)
		}
	}
}
