package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// traceScript runs a scenario line by line and returns everything it
// printed (the full trace: every send, delivery, drop and state change)
// and the checker's findings. dense ticks every node at every tick, as the
// simulator did before it was event-driven.
func traceScript(t *testing.T, script string, dense bool) string {
	t.Helper()
	sc := Script{dense: dense}
	var b strings.Builder
	inExpected := false
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case inExpected:
			inExpected = line != ""
			continue
		case line == "----":
			inExpected = true
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		out, err := sc.ExecLine(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		fmt.Fprintf(&b, "> %s\n%s", line, out)
	}
	if sc.sim != nil {
		fmt.Fprintf(&b, "violations: %v\nnow: %d\n", sc.sim.Checker().Violations, sc.sim.Now())
		for _, id := range sc.sim.IDs() {
			if sc.sim.Up(id) {
				if g := sc.sim.Group(id); g != nil { // names: the group, brought up to the present
					fmt.Fprintf(&b, "%s: tick %d %+v\n", id, g.Now(), sc.sim.Counted(id))
					continue
				}
				n := sc.sim.Node(id) // brought up to the present
				fmt.Fprintf(&b, "%s: tick %d %+v\n", id, n.Now(), sc.sim.Counted(id))
			}
		}
	}
	return b.String()
}

// firstDiff returns the first differing line of two traces, with context.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  ticking every node: %s\n  event-driven:       %s", i+1, x, y)
		}
	}
	return ""
}

// TestEventDrivenMatchesDense: the event-driven simulator (a node ticked
// only when its next deadline falls) produces, for random fault schedules
// of every algorithm and every fault kind, the same trace, byte for byte,
// as ticking every node at every tick, and leaves every node with the
// same tick count and counters. A deadline reported late would change
// when something happens; Skip counting wrong would show in the counters.
func TestEventDrivenMatchesDense(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 10
	}
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		for _, spec := range []string{"classic", "harsh"} {
			faults, err := ParseFaults(spec)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= uint64(runs); seed++ {
				script := ScheduleWith(alg, 5, seed, 30_000, faults)
				dense, events := traceScript(t, script, true), traceScript(t, script, false)
				if d := firstDiff(dense, events); d != "" {
					t.Fatalf("%v, %s faults, seed %d: the traces differ at %s\nscript:\n%s", alg, spec, seed, d, script)
				}
			}
		}
	}
}

// TestEventDrivenMatchesDenseScenarios does the same for every scenario
// file (election/sim/testdata/scenarios, testdata/explore-found), whose expected output
// was recorded when the simulator ticked every node.
func TestEventDrivenMatchesDenseScenarios(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/scenarios/*.txt", "testdata/explore-found/*"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d scenario files", len(files))
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dense, events := traceScript(t, string(text), true), traceScript(t, string(text), false)
		if d := firstDiff(dense, events); d != "" {
			t.Errorf("%s: the traces differ at %s", f, d)
		}
	}
}

// TestFIFOLinks: the per-receiver list of FIFO links gives the arrival
// times a map of every link ever used gives, with few senders (the list)
// and with many (the move to the map).
func TestFIFOLinks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, senders := range []int{3, maxLinks, 40} {
		s := &Sim{lastAt: map[int64]int64{}, links: make([]linkSet, 8)}
		to := &simNode{idx: 7}
		ref := map[int]int64{}
		used := false
		for i := 0; i < 20_000; i++ {
			s.now += int64(rng.IntN(2))
			from := rng.IntN(senders)
			at := s.now + int64(rng.IntN(6))
			want := max(at, ref[from])
			ref[from] = want
			if got := s.fifo(from, to, at); got != want {
				t.Fatalf("%d senders, message %d from %d at %d: arrives at %d, want %d", senders, i, from, at, got, want)
			}
			used = used || s.links[7].many
		}
		if used != (senders > maxLinks) {
			t.Errorf("%d senders: moved to the map: %v", senders, used)
		}
	}
}
