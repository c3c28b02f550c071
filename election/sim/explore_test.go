package sim

import (
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// TestExploreBully runs seeded fault schedules against bully and requires
// zero violations; a failure prints the seed and the replaying scenario.
func TestExploreBully(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 20
	}
	res, err := Explore(ExploreConfig{Algorithm: core.Bully, N: 5, Runs: runs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		t.Errorf("seed %d: %v\nreplay with demo sim -script:\n%s", f.Seed, f.Violations, f.Script)
	}
	t.Logf("%d runs, max convergence %dms", res.Runs, res.MaxConvergenceMs)
}

// The same seed gives the same schedule and the same outcome.
func TestScheduleIsDeterministic(t *testing.T) {
	a, b := Schedule(core.Bully, 5, 42, 30_000), Schedule(core.Bully, 5, 42, 30_000)
	if a != b {
		t.Fatal("same seed, different schedules")
	}
	c1, v1, err1 := RunScript(a)
	c2, v2, err2 := RunScript(b)
	if err1 != nil || err2 != nil || c1 != c2 || len(v1) != len(v2) {
		t.Fatalf("replay differs: %d %v %v / %d %v %v", c1, v1, err1, c2, v2, err2)
	}
}
