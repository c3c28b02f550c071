package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// FuzzScript runs arbitrary text as a scenario, line by line, as
// `demo sim -script` does: a bad line must come back as an error, never as
// a panic, and whatever the commands did to the cluster (any sizes,
// timeouts, loss, partitions, crashes at triggers, ratings, resigns), the
// safety properties hold: at most one coordinator per term, a term names
// its winner, no node goes back to a lower term. Liveness and the quorum
// guard's lease are not asserted: a fuzzed script may lose every message or
// configure a quorum that is not a majority.
//
// The seeds are every command line of the scenario files in
// election/sim/testdata/scenarios and a few explorer schedules; the checked-in corpus is
// in testdata/fuzz/FuzzScript.
func FuzzScript(f *testing.F) {
	for _, s := range scenarioSeeds(f) {
		f.Add(s)
	}
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		f.Add(Schedule(alg, 4, 7, 5_000))
	}
	f.Fuzz(func(t *testing.T, script string) {
		if !boundedScript(script) {
			t.Skip("too large to run quickly")
		}
		var sc Script
		for line := range strings.SplitSeq(script, "\n") {
			_, _ = sc.ExecLine(line) // errors are expected; panics are not
		}
		if sc.Sim() == nil {
			return
		}
		for _, v := range sc.Sim().Checker().Violations {
			if isSafetyViolation(v) {
				t.Fatalf("safety violation: %s\nscript:\n%s", v, script)
			}
		}
	})
}

// boundedScript keeps a fuzzed script cheap to run: at most 2 KiB (a few
// hundred nodes at most), and no command that runs virtual time (advance
// ms=, stabilize max=, check max=) for more than 99,999 ms. Other numbers
// (delays, timeouts, seeds, terms) are left free: their extremes are what
// the fuzzer is for.
func boundedScript(s string) bool {
	return len(s) <= 2048 && !longRun.MatchString(s)
}

var longRun = regexp.MustCompile(`(ms|max)\s*=\s*\+?0*[0-9]{6}`)

// isSafetyViolation tells the checker's safety findings from liveness and
// quorum-lease ones (see checker.go).
func isSafetyViolation(v string) bool {
	for _, s := range []string{"two coordinators in term", "went back from term", "which names tag"} {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// scenarioSeeds returns the command lines of each scenario file in
// election/sim/testdata/scenarios, one script per file (expected output dropped).
func scenarioSeeds(f *testing.F) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no scenario files in testdata/scenarios: %v", err)
	}
	var out []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, commandLines(string(data)))
	}
	return out
}

// commandLines keeps the command of each datadriven block: the line before
// each "----".
func commandLines(data string) string {
	var b strings.Builder
	lines := strings.Split(data, "\n")
	for i, l := range lines {
		if l == "----" && i > 0 {
			b.WriteString(lines[i-1] + "\n")
		}
	}
	return b.String()
}
