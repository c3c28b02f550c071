package sim

import (
	"fmt"
	"testing"
)

// The stretched quorum lease (core heartbeat.go, leaseAsk): a guarded cold
// start of 5 bully voters whose one-way delays are 50-150 ms, so that a
// heartbeat's round trip (100-300 ms) often exceeds the 150 ms lease.
// Before the lease stretched, no coordinator was ever confirmed there (the
// check below failed with no agreement in 60 s for every seed); now the
// cluster agrees, its coordinator holds the lease for the next 30 s in the
// same term, and the checker
// finds no two confirmed coordinators at one instant, nor any other
// violation, all along.
func TestGuardColdStartSlowNetworkSettles(t *testing.T) {
	for seed := 1; seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			var sc Script
			for _, line := range []string{
				fmt.Sprintf("cluster algorithm=bully ids=(1,2,3,4,5) mode=view detector=on quorum=5 coordinator=none delay=50-150 seed=%d", seed),
				"check max=60000",
			} {
				if _, err := sc.ExecLine(line); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
			}
			s := sc.Sim()
			if v := s.Checker().Violations; len(v) > 0 {
				t.Fatalf("checker: %v", v)
			}
			agreed, ok := s.Agreement()
			if !ok {
				t.Fatal("the check passed without an agreement")
			}
			c := s.Node(agreed.Coordinator)
			t.Logf("agreed on %s in %s at %d ms, asking a lease of %d ticks", agreed.Coordinator, agreed.Term, s.Now(), c.LeaseAsk())
			// The heartbeats' arrivals jitter by up to 100 ms, within a
			// tick of the detector's K intervals: a follower now and then
			// suspects the coordinator for an instant (and hears it again;
			// its pre-vote fails, the term stays). The lease must not lapse.
			var doubts int64
			for end := s.Now() + 30_000; s.Now() < end; {
				s.RunFor(1)
				if _, ok := c.LeaseEnd(); !ok || c.Status().Term != agreed.Term {
					t.Fatalf("%d ms: %s lost its lease: %+v", s.Now(), agreed.Coordinator, c.Status())
				}
				sts, _ := s.Statuses()
				for _, st := range sts {
					if st.Term != agreed.Term || st.Coordinator != agreed.Coordinator && st.Coordinator != "" {
						t.Fatalf("%d ms: %+v, want %s in %s", s.Now(), st, agreed.Coordinator, agreed.Term)
					}
				}
				if _, ok := s.Agreement(); !ok {
					doubts++
				}
			}
			t.Logf("the next 30 s: the lease held; some follower doubted %s for %d ms", agreed.Coordinator, doubts)
			if v := s.Checker().Violations; len(v) > 0 {
				t.Fatalf("checker: %v", v)
			}
		})
	}
}
