package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// TestRunSummary sends with the real client to a 3-node group for a
// second and checks the summary line the side-by-side instrument reads:
// its shape, every send acknowledged, none failed or unknown.
func TestRunSummary(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	testwait.For(t, 30*time.Second, "the group's route registered", func() bool {
		r, ok := tc.Namesrv.Table().Route("TBW102")
		return ok && len(r.BrokerDatas) > 0 && len(r.BrokerDatas[0].BrokerAddrs) > 0
	})
	var out strings.Builder
	o := options{namesrv: tc.NamesrvAddr(), topic: "RealsendT", producers: 2, inflight: 8, size: 256, duration: time.Second}
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	shape := regexp.MustCompile(`^summary: sent=(\d+) acked=(\d+) failed=(\d+) unknown=(\d+) msgs/s=\d+ MB/s=[\d.]+ p50=[\d.]+ms p90=[\d.]+ms p99=[\d.]+ms p999=[\d.]+ms max=[\d.]+ms max-gap-ms=\d+$`)
	m := shape.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("summary %q has not the bench's shape", line)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(2) == 0 || n(1) != n(2) || n(3) != 0 || n(4) != 0 {
		t.Fatalf("want every send acknowledged, got %q", line)
	}
}

// TestRunRefusesBadOptions: nothing is started for options that cannot
// be honoured.
func TestRunRefusesBadOptions(t *testing.T) {
	for _, o := range []options{
		{producers: 0, inflight: 1, size: 1, duration: time.Second},
		{producers: 1, inflight: 0, size: 1, duration: time.Second},
		{producers: 1, inflight: 1, size: 0, duration: time.Second},
		{producers: 1, inflight: 1, size: 1},
	} {
		if err := run(o, &strings.Builder{}); err == nil {
			t.Errorf("run(%+v) = nil, want an error", o)
		}
	}
}
