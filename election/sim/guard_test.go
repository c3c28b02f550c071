package sim

import (
	"fmt"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Issue 13, the guard's liveness target: with the quorum guard, a
// coordinator cut off from all but a minority is replaced by a coordinator
// of the connected majority within twice the lease, for every algorithm.
// The coordinator 5 (the highest rated) is cut both ways from every member
// but one, keep, while membership never tells (memberlist's indirect probes
// keep everyone alive); the clock runs from the cut until the other four
// agree on one confirmed coordinator of their own. The cut comes after the
// cluster has run settled for a while, at several offsets into the
// heartbeat interval, with several seeds (the network's delays and the
// members' tick phases), and keep is the next-highest member (5's ring
// predecessor), the lowest (its successor) or one in between. The
// simulator's time is virtual, so the bound is asserted, not measured.
// The four must then stay agreed, and the checker (no two confirmed
// coordinators at one instant, none on a minority side past its lease)
// must find nothing.
func TestGuardCutCoordinatorReplacedWithinTwoLeases(t *testing.T) {
	const lease = 150 // ms: the default lease (15 ticks of 10 ms)
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		for _, mode := range []core.Mode{core.View, core.Textbook} {
			t.Run(fmt.Sprintf("%s/%s", alg, mode), func(t *testing.T) {
				var worst int64
				var worstCase string
				for _, keep := range []string{"4", "1", "2"} {
					for seed := uint64(1); seed <= 4; seed++ {
						for _, offset := range []int64{0, 13, 29, 41} {
							name := fmt.Sprintf("keep=%s/seed=%d/offset=%d", keep, seed, offset)
							took := cutCoordinatorReplaced(t, alg, mode, keep, seed, offset, name)
							if took < 0 || took > 2*lease {
								t.Errorf("%s: the connected majority agreed %d ms after the cut (-1: not within 5 s), over 2 leases (%d ms)", name, took, 2*lease)
							}
							if took < 0 || worst >= 0 && took > worst {
								worst, worstCase = took, name
							}
						}
					}
				}
				t.Logf("%s %s: slowest replacement %d ms after the cut (%s), %.2f leases", alg, mode, worst, worstCase, float64(worst)/lease)
			})
		}
	}
}

// The same cut on links whose round trips (24 – 60 ms) exceed RoundTrip
// and HopTimeout (20 ms), as on a loaded host: the rings' hop timeout
// follows the round trips measured (core.Node's hopTimeout), and the
// member that reaches only one other sits out (its hops to the others time
// out: it cannot reach a majority). Before either, a careful lap skipped
// working members whose Acks were merely late, its messages ran twice from
// there, and the active/relay ring restarted for seconds (CI, 2026-11-27:
// no agreement in 10 s on real memberlist). A first winner may be
// displaced by a higher member (preemption), so the clock runs until the
// four agree on the coordinator they then keep for 5 s; the bound is 5 s
// of virtual time, and the times are logged for the docs.
func TestGuardCutOnSlowLinks(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			var worst int64
			for _, keep := range []string{"4", "1", "2"} {
				for seed := uint64(1); seed <= 8; seed++ {
					name := fmt.Sprintf("keep=%s/seed=%d", keep, seed)
					s := cutOff(t, alg, core.View, keep, seed, 0, name, 12, 30)
					cut, since := s.Now(), int64(-1)
					var held core.Status
					for s.Now()-cut < 10000 && (since < 0 || s.Now()-since < 5000) {
						s.RunFor(1)
						st, ok := s.agreementOf("1", "2", "3", "4")
						switch {
						case !ok || st.Coordinator == "5":
							since = -1
						case since < 0 || st != held:
							since, held = s.Now(), st
						}
					}
					if since < 0 || s.Now()-since < 5000 {
						t.Errorf("%s: the connected majority did not keep one coordinator for 5 s within 10 s of the cut", name)
						continue
					}
					if took := since - cut; took > 5000 {
						t.Errorf("%s: the connected majority settled %d ms after the cut; want within 5 s", name, took)
					} else {
						worst = max(worst, took)
					}
					if v := s.Checker().Violations; len(v) > 0 {
						t.Fatalf("%s: checker: %v", name, v)
					}
				}
			}
			t.Logf("%s: slowest settlement %d ms after the cut", alg, worst)
		})
	}
}

// cutCoordinatorReplaced runs one case and returns the virtual ms from the
// cut until the connected majority agreed on a coordinator of its own, -1
// if not within 5 s; once agreed, the four must stay agreed for 5 s.
func cutCoordinatorReplaced(t *testing.T, alg core.Algorithm, mode core.Mode, keep string, seed uint64, offset int64, name string) int64 {
	t.Helper()
	s := cutOff(t, alg, mode, keep, seed, offset, name, 0, 0)
	majority := []string{"1", "2", "3", "4"}
	cut := s.Now()
	took := int64(-1)
	var first core.Status
	for s.Now()-cut < 5000 || took >= 0 && s.Now()-cut < took+5000 {
		s.RunFor(1)
		st, ok := s.agreementOf(majority...)
		switch {
		case ok && took < 0 && st.Coordinator != "5":
			took, first = s.Now()-cut, st
		case took >= 0 && (!ok || st != first):
			t.Fatalf("%s: %dms after the cut the four left %s in %s: %+v (agreed %v)", name, s.Now()-cut, first.Coordinator, first.Term, st, ok)
		}
	}
	if v := s.Checker().Violations; len(v) > 0 {
		t.Fatalf("%s: checker: %v", name, v)
	}
	return took
}

// cutOff builds a cluster of five led by 5 (settled for 1 s and offset
// ms more) and cuts 5 off, both ways, from every member but keep, with
// the views left as they were. One-way delays of delayMin..delayMax ms (0:
// the simulator's default).
func cutOff(t *testing.T, alg core.Algorithm, mode core.Mode, keep string, seed uint64, offset int64, name string, delayMin, delayMax int64) *Sim {
	t.Helper()
	members, err := BuildMembers([]string{"1", "2", "3", "4", "5"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Members: members, Algorithm: alg, Mode: mode, HeartbeatDetector: true,
		ViewDelayMs: -1, Core: core.Config{QuorumSize: 5}, Seed: seed, DelayMin: delayMin, DelayMax: delayMax})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap("5"); err != nil {
		t.Fatal(err)
	}
	s.RunFor(1000 + offset)
	if st, ok := s.Agreement(); !ok || st.Coordinator != "5" {
		t.Fatalf("%s: not settled on 5 before the cut: %+v", name, st)
	}
	for _, o := range []string{"1", "2", "3", "4"} {
		if o == keep {
			continue
		}
		if err := s.BlockQuiet("5", o); err != nil {
			t.Fatal(err)
		}
		if err := s.BlockQuiet(o, "5"); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
