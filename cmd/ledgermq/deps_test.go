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
	out := goList(t, "-deps", ".")
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

// goList runs `go list -f '{{.ImportPath}} {{.Imports}}' args` as a plain
// build sees it (no tags from the environment) and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	// go test puts its own GOROOT/bin first on PATH, so this is the go
	// tool running the test.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}, args...)...)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return out
}

// TestInternalFloors keeps internal/ in its two floors (internal/doc.go):
// a ground package imports no package of this module, and a harness
// (internal/harness/…) is imported only by the command, the chaos harness
// and tests — never by a package the broker is built from — so no low
// package reaches up.
func TestInternalFloors(t *testing.T) {
	out := goList(t, modulePath+"/...")
	ground, harness := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		rel := strings.TrimPrefix(pkg, modulePath+"/")
		switch {
		case strings.HasPrefix(rel, "internal/harness/"):
			harness++
		case strings.HasPrefix(rel, "internal/"):
			ground++
			for _, imp := range imports {
				if strings.HasPrefix(imp, modulePath+"/") {
					t.Errorf("ground package %s imports %s", pkg, imp)
				}
			}
		}
		if mayUseHarness(rel) {
			continue
		}
		for _, imp := range imports {
			if strings.HasPrefix(imp, modulePath+"/internal/harness/") {
				t.Errorf("%s imports the harness %s", pkg, imp)
			}
		}
	}
	// A listing that missed the floors would pass vacuously.
	if ground < 5 || harness < 3 {
		t.Fatalf("listed %d ground and %d harness packages; output:\n%s", ground, harness, out)
	}
}

// mayUseHarness: the command, the chaos harness, the measuring tools
// under scripts/ and the harnesses themselves (non-test files; the tests
// of every package may use them).
func mayUseHarness(rel string) bool {
	for _, top := range []string{"cmd/", "jepsen", "scripts/", "internal/harness/"} {
		if strings.HasPrefix(rel, top) {
			return true
		}
	}
	return false
}
