package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	c1, v1, err1 := checkScript(a)
	c2, v2, err2 := checkScript(b)
	if err1 != nil || err2 != nil || c1 != c2 || len(v1) != len(v2) {
		t.Fatalf("replay differs: %d %v %v / %d %v %v", c1, v1, err1, c2, v2, err2)
	}
}

// TestExploreFound replays the shrunk schedules the harsh explorer found
// (testdata/explore-found). A NAME.txt must run without any violation: it
// is a regression test. A NAME.txt.pending is a known defect of the core
// that is not fixed yet: it must still break the property its first line
// names ("# property: KIND"), so that a fix is noticed: then rename it to
// NAME.txt.
func TestExploreFound(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "explore-found", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in testdata/explore-found: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunScriptResult(string(data))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(path, ".pending") {
				for _, v := range res.Violations {
					t.Errorf("violation: %s", v)
				}
				return
			}
			kind, ok := strings.CutPrefix(strings.SplitN(string(data), "\n", 2)[0], "# property: ")
			if !ok || !slices.Contains(Kinds, kind) {
				t.Fatalf("first line must be \"# property: KIND\" with KIND one of %v", Kinds)
			}
			if !slices.Contains(res.Kinds, kind) {
				t.Errorf("no longer breaks %s (violations: %v): fixed? rename %s to %s",
					kind, res.Violations, path, strings.TrimSuffix(path, ".pending"))
			}
		})
	}
}

// The harsh schedules are deterministic per seed and selection, and every
// fault kind can be selected on its own.
func TestHarshScheduleIsDeterministic(t *testing.T) {
	f, err := ParseFaults("harsh")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := ScheduleWith(core.Ring, 9, 5, 30_000, f), ScheduleWith(core.Ring, 9, 5, 30_000, f); a != b {
		t.Fatal("same seed, different schedules")
	}
	for _, k := range append(slices.Clone(faultKinds), "crash,"+setupKinds[0]) {
		f, err := ParseFaults(k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for seed := uint64(1); seed <= 5; seed++ {
			if _, err := RunScriptResult(ScheduleWith(core.Bully, 5, seed, 5_000, f)); err != nil {
				t.Fatalf("%s seed %d: %v", k, seed, err)
			}
		}
	}
	if _, err := ParseFaults("crash,bogus"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

// checkScript runs a scenario script and returns how long the final
// "check" took to reach agreement (virtual ms) and every violation.
func checkScript(script string) (convergenceMs int64, violations []string, err error) {
	c, v, _, err := runScript(script)
	return c, v, err
}

// TestExploreViewOnly: with ViewOnly every schedule runs in View mode, and
// a seed's schedule is otherwise the one it is without ViewOnly (the mode
// is drawn either way), so a seed names the same faults in both.
func TestExploreViewOnly(t *testing.T) {
	for _, spec := range []string{"classic", "harsh"} {
		f, err := ParseFaults(spec)
		if err != nil {
			t.Fatal(err)
		}
		textbook := 0
		for seed := uint64(1); seed <= 40; seed++ {
			mixed := ScheduleWith(core.Bully, 9, seed, 30_000, f)
			v := f
			v.viewOnly = true
			only := ScheduleWith(core.Bully, 9, seed, 30_000, v)
			if strings.Contains(only, "mode=textbook") {
				t.Fatalf("%s seed %d: ViewOnly schedule in textbook mode", spec, seed)
			}
			if strings.Contains(mixed, "mode=textbook") {
				textbook++
			}
			if strings.Replace(mixed, "mode=textbook", "mode=view", 1) != only {
				t.Fatalf("%s seed %d: ViewOnly changed the schedule beyond its mode", spec, seed)
			}
		}
		if textbook == 0 {
			t.Fatalf("%s: no textbook schedule in 40 seeds without ViewOnly", spec)
		}
	}
	res, err := Explore(ExploreConfig{Algorithm: core.Ring, N: 5, Runs: 3, Seed: 1, Faults: "harsh", ViewOnly: true})
	if err != nil || res.Mode != "view" || res.Violations != 0 {
		t.Fatalf("Explore(ViewOnly) = %+v, %v; want mode view, 0 violations", res, err)
	}
}
