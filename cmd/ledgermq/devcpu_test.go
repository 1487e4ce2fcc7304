package main

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// TestChildEnvWithCPUShare: the nodes of a dev cluster divide the
// machine's CPUs among them (at least one each), a GOMAXPROCS the user set
// is kept, and a node that would get every CPU anyway gets no setting.
func TestChildEnvWithCPUShare(t *testing.T) {
	cpus := runtime.GOMAXPROCS(0)
	base := []string{"HOME=/h", "PATH=/bin"}
	for _, nodes := range []int{1, 2, 3, 5, 64} {
		env, share := childEnvWithCPUShare(base, nodes)
		want := max(1, cpus/nodes)
		switch {
		case want >= cpus:
			if share != 0 || !slices.Equal(env, base) {
				t.Errorf("%d nodes on %d CPUs: %v, share %d; want the environment as it is", nodes, cpus, env, share)
			}
		case share != want || !slices.Equal(env, append(slices.Clone(base), "GOMAXPROCS="+strconv.Itoa(want))):
			t.Errorf("%d nodes on %d CPUs: %v, share %d; want GOMAXPROCS=%d", nodes, cpus, env, share, want)
		}
	}
	if cpus > 1 {
		env, share := childEnvWithCPUShare(base, cpus+1)
		if share != 1 || env[len(env)-1] != "GOMAXPROCS=1" {
			t.Errorf("more nodes than CPUs: %v, share %d; want GOMAXPROCS=1", env, share)
		}
	}
	set := append(slices.Clone(base), "GOMAXPROCS=7")
	if env, share := childEnvWithCPUShare(set, 3); share != 0 || !slices.Equal(env, set) {
		t.Errorf("with GOMAXPROCS set: %v, share %d; want it kept", env, share)
	}
	if env, _ := childEnvWithCPUShare(base[:1:1], 64); len(base) != 2 || base[1] != "PATH=/bin" || len(env) > 2 {
		t.Errorf("the caller's environment changed: %v / %v", base, env)
	}
}
