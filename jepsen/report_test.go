//go:build unix

package jepsen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportSaysExactlyOnce: the report names the exactly-once check
// when the run made it, beside the verdict that carries its figure.
func TestReportSaysExactlyOnce(t *testing.T) {
	plan := Plan{Seed: 3, Nodes: 3, Time: Duration(10 * time.Second)}
	for _, on := range []bool{false, true} {
		res := &RunResult{Result: Check(healthy().evs, CheckInput{Nodes: three, ExactlyOnce: on}), Mechanism: MechanismProxy}
		path := filepath.Join(t.TempDir(), "report.html")
		if err := WriteReport(path, plan, healthy().evs, res); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		html := string(b)
		if strings.Contains(html, "exactly-once checked") != on || strings.Contains(html, "exactly-once-duplicates=0") != on ||
			!strings.Contains(html, "verdict: PASS acked=4 ") {
			t.Fatalf("exactly-once %v: report\n%s", on, html)
		}
	}
}
