package sim

import (
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// A slow spell (round trips of 120-280 ms, above the 150 ms lease) makes a
// guarded coordinator stretch its lease, and it stays confirmed; when the
// spell ends the lease comes back to QuorumLease. An election during the
// spell may take longer than 5 s (the active/relay ring's hops are given up
// on and forked at round trips above their timeout's cap): the test waits
// for the agreement, then a second for the lease to stretch. A block of the
// coordinator during the spell keeps it in office up to its stretched
// lease, not past it: the checker's minority window follows the lease it
// asked for, and finds nothing.
func TestSlowSpellStretchesLease(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			var sc Script
			for _, l := range []string{
				"cluster algorithm=" + alg.String() + " ids=(1,2,3,4,5) mode=view detector=on quorum=5 seed=3",
				"network delay=60-140",
				"advance ms=5000",
			} {
				if _, err := sc.ExecLine(l); err != nil {
					t.Fatalf("%s: %v", l, err)
				}
			}
			s := sc.sim
			lease := s.member("1").node.Config().QuorumLease
			st, ok := s.Agreement()
			if !ok {
				for !ok && s.Now() < 30_000 {
					s.RunFor(100)
					st, ok = s.Agreement()
				}
				if !ok {
					t.Fatalf("no agreement after 30 s of the slow spell: %+v", st)
				}
				s.RunFor(1000)
				st, _ = s.Agreement()
			}
			c := s.member(st.Coordinator)
			ask := c.node.LeaseAsk()
			if c.node.Status().State != core.StateCoordinator || ask <= lease {
				t.Fatalf("coordinator %s after 5 s of round trips above the lease: state %s, asks %d ticks (lease %d); want confirmed with a stretched lease",
					c.id, c.node.Status().State, ask, lease)
			}
			// Cut it off from everyone: it leads on past QuorumLease, as
			// long as its stretched lease, no longer.
			if _, err := sc.ExecLine("block from=" + c.id + " to=all views=off"); err != nil {
				t.Fatal(err)
			}
			cut, end := s.Now(), s.check.splitEnd[c.id]
			if end <= cut+int64(lease+1)*s.cfg.TickMs {
				t.Fatalf("the checker's window after the cut at %d ms ends at %d ms, within QuorumLease; the coordinator asks %d ticks", cut, end, ask)
			}
			for c.up && c.node.Status().State == core.StateCoordinator && s.Now() < end+1000 {
				s.RunFor(1)
			}
			held := s.Now() - cut
			if held <= int64(lease+1)*s.cfg.TickMs || s.Now() > end+s.cfg.TickMs {
				t.Errorf("cut off at %d ms with a lease of %d ticks asked, the coordinator led for %d ms; want beyond QuorumLease (%d ms) and not past %d ms",
					cut, ask, held, lease*int(s.cfg.TickMs), end+s.cfg.TickMs)
			}
			for _, l := range []string{"heal", "network loss=0 dup=0 reorder=0 delay=1-5", "advance ms=5000", "check max=30000"} {
				if _, err := sc.ExecLine(l); err != nil {
					t.Fatalf("%s: %v", l, err)
				}
			}
			st, _ = s.Agreement()
			if ask := s.member(st.Coordinator).node.LeaseAsk(); ask != lease {
				t.Errorf("5 s after the spell the coordinator %s asks a lease of %d ticks, want %d", st.Coordinator, ask, lease)
			}
			if !s.check.LeaseStretched || s.check.LeaseHigh <= lease {
				t.Errorf("checker: stretched %v, longest lease %d ticks", s.check.LeaseStretched, s.check.LeaseHigh)
			}
			for _, v := range s.Checker().Violations {
				t.Errorf("violation: %s", v)
			}
		})
	}
}

// The harsh explorer's slow spells make guarded coordinators stretch their
// leases, the final phase restores the default delay, and the schedules
// run clean: the explorer exercises the stretched lease for safety.
func TestExploreSlowSpells(t *testing.T) {
	f, err := ParseFaults("slow,crash,partition,heal")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 10; seed++ {
		s := ScheduleWith(core.Bully, 5, seed, 30_000, f)
		if !strings.Contains(s, "\n"+finalNetwork+" delay="+defaultDelay+"\n") {
			t.Fatalf("seed %d: no final phase that restores the delay:\n%s", seed, s)
		}
	}
	res, err := Explore(ExploreConfig{Algorithm: core.Bully, N: 5, Runs: 30, Seed: 1, Faults: "slow,crash,partition,heal"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stretched == 0 || res.MaxLeaseMs <= 150 {
		t.Errorf("%d of %d schedules stretched a lease (longest %d ms); want some beyond 150 ms", res.Stretched, res.Runs, res.MaxLeaseMs)
	}
	for _, fl := range res.Failures {
		t.Errorf("seed %d: %v\n%s", fl.Seed, fl.Violations, fl.Script)
	}
	t.Logf("%d of %d schedules stretched a lease, longest %d ms, slowest convergence %d ms", res.Stretched, res.Runs, res.MaxLeaseMs, res.MaxConvergenceMs)
}

// Shrink keeps the final phase of a schedule with slow spells (its network
// line restores the delay) and removes the faults that do not matter.
func TestShrinkKeepsSlowFinalPhase(t *testing.T) {
	f, err := ParseFaults("slow")
	if err != nil {
		t.Fatal(err)
	}
	s := ScheduleWith(core.Bully, 5, 2, 30_000, f)
	// A final phase that fails whatever came before: the coordinator
	// crashes and the bound is 1 ms.
	i := strings.LastIndex(s, "check")
	s = s[:i] + "crash @coord\n----\n\ncheck max=1\n----\n"
	min, v, err := Shrink(s, KindNoAgreement)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 || !strings.Contains(min, finalNetwork+" delay="+defaultDelay) || strings.Contains(min, "advance") {
		t.Errorf("shrunk (violations %v):\n%s\nwant the final phase's network line kept and the fault phase gone", v, min)
	}
}
