package sim

import (
	"fmt"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// A ring coordinator that hands off releases its followers and opens the
// successor's lap from its own place on the ring. In a ring whose lap
// outlasts the followers' wait for a coordinator (K heartbeat intervals),
// every follower the lap had not reached yet started a lap of its own,
// each carrying the growing list of live members: at n = 1,000 in one
// process (10 ms a hop, a 10-s lap) hundreds of laps at once and no
// coordinator for minutes (docs/performance.md, "The ring with the guard
// at n = 1,000"). The active/relay ring's followers never heard the
// release at all (it carried the successor's untagged election term and
// was dropped) and waited out their detectors. A released ring follower
// now waits for the hand-off's lap to reach it.
//
// Here a lap of 150 hops takes about 1.4 s (3 – 6 ms a message), seven
// times the followers' K·H = 150 ms; with the guard 5 members vote and
// 145 do not. The coordinator resigns, or the top member returns and
// preempts it.
func TestRingReleasedFollowersWaitForTheLap(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Ring, core.Peterson} {
		for _, voters := range []int{0, 5} {
			for _, how := range []string{"resign", "return"} {
				t.Run(fmt.Sprintf("%s/voters=%d/%s", alg, voters, how), func(t *testing.T) {
					releasedFollowers(t, alg, voters, how)
				})
			}
		}
	}
}

func releasedFollowers(t *testing.T, alg core.Algorithm, voters int, how string) {
	const n = 150
	ms := members(n)
	for i := range ms[:n-voters] {
		ms[i].NonVoter = voters > 0
	}
	s, err := New(Config{Members: ms, Algorithm: alg, Mode: core.View, HeartbeatDetector: true,
		DelayMin: 3, DelayMax: 6, Core: core.Config{QuorumSize: voters}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if how == "return" {
		if err := s.CrashBefore("150"); err != nil {
			t.Fatal(err)
		}
	}
	leader, next := "150", "149"
	if how == "return" {
		leader, next = "149", "150"
	}
	if err := s.Bootstrap(leader); err != nil {
		t.Fatal(err)
	}
	s.RunFor(3000)
	if st, ok := s.Agreement(); !ok || st.Coordinator != leader {
		t.Fatalf("not settled on %s: %+v", leader, st)
	}
	counted := func() (sum uint64) {
		for _, id := range s.IDs() {
			if id != leader && id != next {
				sum += s.Counted(id).ElectionsStarted
			}
		}
		return sum
	}
	before := counted()
	if how == "resign" {
		err = s.Resign(leader)
	} else {
		err = s.Restart("150")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !s.Settle(20000) {
		t.Fatalf("no agreement within 20 s of the hand-off")
	}
	st, _ := s.Agreement()
	started := counted() - before
	t.Logf("coordinator %s in %s, %d elections started by the other %d followers, %d election messages in all",
		st.Coordinator, st.Term, started, n-2, s.ElectionMessages())
	if st.Coordinator != next {
		t.Errorf("coordinator %s after the hand-off, want %s", st.Coordinator, next)
	}
	if started > 0 {
		t.Errorf("%d elections started by released followers; the hand-off's lap reaches them all", started)
	}
}
