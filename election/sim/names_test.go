package sim

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// namedCluster builds n members in View mode with the heartbeat detector,
// hosting k spread names job-0 .. job-(k-1), settled.
func namedCluster(t *testing.T, n, k int, tweak func(*Config)) *Sim {
	t.Helper()
	var names []Name
	for i := range k {
		names = append(names, Name{Name: "job-" + strconv.Itoa(i), Placement: group.PlaceSpread})
	}
	cfg := Config{Members: members(n), Mode: core.View, HeartbeatDetector: true, ViewDelayMs: 1000, Names: names, Seed: 1}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(s.Highest()); err != nil {
		t.Fatal(err)
	}
	s.RunFor(1_000)
	if _, ok := s.Agreement(); !ok {
		t.Fatal("not settled after the bootstrap")
	}
	return s
}

// A crashed member's names are re-elected, every one of them, over the
// survivors, and the names of the living keep their coordinator and
// term; the checker finds nothing.
func TestNamesCrashReelectsAllItsNames(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		s := namedCluster(t, 9, 24, func(c *Config) { c.Algorithm = alg })
		before := map[string]core.Status{}
		lead := map[string]int{}
		for _, name := range s.Names() {
			st, _ := s.AgreementOf(name)
			before[name] = st
			lead[st.Coordinator]++
		}
		victim, most := "", 0
		for _, id := range s.IDs() {
			if lead[id] > most {
				victim, most = id, lead[id]
			}
		}
		if err := s.Crash(victim); err != nil {
			t.Fatal(err)
		}
		if !s.Settle(5_000) {
			t.Fatalf("%v: not settled 5 s after %s crashed", alg, victim)
		}
		moved := 0
		for _, name := range s.Names() {
			st, _ := s.AgreementOf(name)
			old := before[name]
			switch {
			case old.Coordinator == victim:
				moved++
				if st.Coordinator == victim || st.Term <= old.Term {
					t.Errorf("%v: %s: led by %s in %s after the crash, was %s in %s", alg, name, st.Coordinator, st.Term, old.Coordinator, old.Term)
				}
			case st.Coordinator != old.Coordinator || st.Term != old.Term:
				t.Errorf("%v: %s: moved from %s (%s) to %s (%s), but %s did not lead it", alg, name, old.Coordinator, old.Term, st.Coordinator, st.Term, victim)
			}
		}
		if moved != most || most == 0 {
			t.Errorf("%v: %d names moved, %s led %d", alg, moved, victim, most)
		}
		if v := s.Checker().Violations; len(v) > 0 {
			t.Errorf("%v: violations: %v", alg, v)
		}
	}
}

// A batch is one delivery: with every message lost, nothing arrives, and
// each batch sent counts once however many names it carries; the pairs
// count as messages of their types.
func TestNamesBatchesAreOneDelivery(t *testing.T) {
	s := namedCluster(t, 5, 8, nil)
	s.ResetCounts()
	batches := s.BatchesSent
	s.RunFor(1_000)
	sent := s.BatchesSent - batches
	hb := s.Sent[core.MsgHeartbeat]
	if sent == 0 || hb <= sent {
		t.Fatalf("in 1 s: %d batches, %d heartbeats: want more heartbeats than batches", sent, hb)
	}
	var total uint64
	for _, id := range s.IDs() {
		total += s.Batches(id)
	}
	if total < sent {
		t.Errorf("members counted %d batches, the network %d", total, sent)
	}
	s.SetNetwork(1, 0, 0)
	lost := s.Lost
	s.RunFor(100)
	if s.Lost == lost {
		t.Error("loss 1: nothing lost")
	}
}

// The checker follows every name on its own: a node made coordinator of
// one name in a term that names another member is a term-tag violation
// of that name, filed with the name; the other names, in the same
// terms, are not mixed up with it.
func TestNamesCheckerPerName(t *testing.T) {
	s := namedCluster(t, 5, 4, nil)
	if v := s.Checker().Violations; len(v) > 0 {
		t.Fatalf("violations after the start: %v", v)
	}
	// job-1's member 1 believes it won a term of member 2's tag.
	err := s.pokeNames("1", "job-1", func(n *core.Node) { n.Bootstrap("1", core.MakeTerm(9, core.Tag("2"))) })
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for i, v := range s.Checker().Violations {
		if s.Checker().Kinds[i] == KindTermTag {
			found = true
			if !strings.Contains(v, "job-1: node 1 is coordinator in term 9.2") {
				t.Errorf("violation %q: want it filed under job-1", v)
			}
		}
	}
	if !found {
		t.Fatalf("no term-tag violation: %v", s.Checker().Violations)
	}
}

// The explorer with names: a short run of every algorithm, every fault
// kind, finds nothing; the same seed gives the same schedule; a seed's
// faults are those it draws without names.
func TestExploreNames(t *testing.T) {
	runs := 30
	if testing.Short() {
		runs = 5
	}
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		res, err := Explore(ExploreConfig{Algorithm: alg, N: 9, Runs: runs, Seed: 1, Faults: "harsh", ViewOnly: true, Names: 8})
		if err != nil {
			t.Fatal(err)
		}
		if res.Names != 8 {
			t.Errorf("result names %d, want 8", res.Names)
		}
		for _, f := range res.Failures {
			t.Errorf("%v seed %d: %v\n%s", alg, f.Seed, f.Violations, f.Script)
		}
	}
	f, err := ParseFaults("harsh")
	if err != nil {
		t.Fatal(err)
	}
	named := f
	named.names = 8
	for seed := uint64(1); seed <= 20; seed++ {
		a, b := ScheduleWith(core.Bully, 9, seed, 30_000, named), ScheduleWith(core.Bully, 9, seed, 30_000, named)
		if a != b {
			t.Fatal("same seed, different schedules")
		}
		plain := ScheduleWith(core.Bully, 9, seed, 30_000, f)
		if namesLine.ReplaceAllString(a, "") != plain {
			t.Fatalf("seed %d: the names changed the faults:\n%s\nwithout names:\n%s", seed, a, plain)
		}
		if !strings.Contains(a, "names count=6 placement=spread") || strings.Count(a, "\nname few-") != 2 {
			t.Fatalf("seed %d: want 6 plain and 2 abstaining names:\n%s", seed, a)
		}
	}
}

// TestEventDrivenMatchesDenseNames is TestEventDrivenMatchesDense with
// names: the groups' clocks (Skip, the round instants, NextDeadline) give
// the trace of ticking every group at every tick.
func TestEventDrivenMatchesDenseNames(t *testing.T) {
	runs := 25
	if testing.Short() {
		runs = 3
	}
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		for _, spec := range []string{"classic", "harsh"} {
			faults, err := ParseFaults(spec)
			if err != nil {
				t.Fatal(err)
			}
			faults.names = 4
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

// Names declared after the cluster are added at run time; a name the
// cluster of one unnamed election is refused, as are bad declarations.
func TestNamesScriptErrors(t *testing.T) {
	var sc Script
	for _, line := range []string{"name job placement=spread", "cluster ids=(1,2,3) mode=view"} {
		if _, err := sc.ExecLine(line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	if _, err := sc.ExecLine("name late placement=spread abstain=(3)"); err != nil {
		t.Fatal(err)
	}
	sc.sim.RunFor(2_000)
	if st, ok := sc.sim.AgreementOf("late"); !ok || st.Coordinator == "3" {
		t.Errorf("late name: %+v agreed %v; want agreed, not on 3 (it abstains)", st, ok)
	}
	for _, bad := range []string{"name job", "name x placement=far", "name y abstain=(9)", "names count=0", "status name=nope", "detect 1 name=nope"} {
		if _, err := sc.ExecLine(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	var single Script
	if _, err := single.ExecLine("cluster ids=(1,2,3)"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"name x", "detect 1 name=x", "forge from=1 to=2 name=x"} {
		if _, err := single.ExecLine(bad); err == nil {
			t.Errorf("one unnamed election: %q accepted", bad)
		}
	}
}

var namesLine = regexp.MustCompile(`(?m)^names? .*\n----\n\n`)

// Liveness is checked per name: with a partition left standing, the
// sides of a name disagree, and the violation names it.
func TestNamesLivenessPerName(t *testing.T) {
	s := namedCluster(t, 5, 4, func(c *Config) { c.ViewDelayMs = 0 })
	if err := s.Partition([]string{"1", "2"}, []string{"3", "4", "5"}); err != nil {
		t.Fatal(err)
	}
	s.RunFor(1_000)
	if s.Checker().CheckLiveness(2_000, false) {
		t.Fatal("liveness held across a partition")
	}
	v := s.Checker().Violations
	if len(v) != 1 || s.Checker().Kinds[0] != KindNoAgreement || !strings.Contains(v[0], ": job-") {
		t.Errorf("violations %v (%v): want one no-agreement of a name", v, s.Checker().Kinds)
	}
}

// Shrink cuts a failing schedule with names down: the names lines are
// fault lines too (halved, or dropped when the failure does not need
// them), and the cluster line stays.
func TestShrinkNames(t *testing.T) {
	script := `names count=8 placement=spread
----

name few-0 placement=spread abstain=(1)
----

cluster algorithm=bully ids=(1,2,3,4,5) mode=view detector=on seed=3
----

advance ms=120
----

crash 2
----

advance ms=80
----

network loss=0 dup=0 reorder=0
----

partition (1,2) (3,4,5)
----

advance ms=500
----

check max=2000
----
`
	out, v, err := Shrink(script, KindNoAgreement)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 || !strings.Contains(out, "cluster algorithm=bully") || strings.Contains(out, "crash 2") {
		t.Errorf("shrunk to %v:\n%s", v, out)
	}
	if strings.Contains(out, "names count=8") {
		t.Errorf("names not shrunk:\n%s", out)
	}
	t.Logf("shrunk:\n%s", out)
}
