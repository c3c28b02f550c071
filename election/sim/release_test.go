package sim

import (
	"fmt"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// A ring coordinator that hands off releases its followers and opens the
// successor's election from its own place on the ring. In a ring whose lap
// outlasts the followers' wait for a coordinator (K heartbeat intervals),
// every follower the lap had not reached yet started a lap of its own,
// each carrying the growing list of live members: at n = 1,000 in one
// process (10 ms a hop, a 10-s lap) hundreds of laps at once and no
// coordinator for minutes (docs/performance.md, "The ring with the guard
// at n = 1,000"). The active/relay ring's followers never heard the
// release at all (it carried the successor's untagged election term and
// was dropped) and waited out their detectors. Now a released follower
// waits for the hand-off's lap to reach it.
//
// Here a lap of 150 hops takes about 0.7 s (3 – 6 ms a message), more
// than four times the followers' K·H = 150 ms; with the guard 5 members
// vote and 145 do not. The coordinator resigns, resigns and crashes at
// once, or the top member returns and preempts it. No follower may start
// an election of its own, and without the guard a ring's resign must be
// agreed within 1.8 s of virtual time (an ELECTION and a COORDINATOR lap,
// about 1.4 s).
func TestRingsHandoffReleasedFollowers(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Ring, core.Peterson} {
		for _, voters := range []int{0, 5} {
			for _, how := range []string{"resign", "resign+crash", "return"} {
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
		DelayMin: 3, DelayMax: 6, ViewDelayMs: 1000, Core: core.Config{QuorumSize: voters}, Seed: 7})
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
	switch how {
	case "resign":
		err = s.Resign(leader)
	case "resign+crash":
		if err = s.Resign(leader); err == nil {
			err = s.Crash(leader)
		}
	default:
		err = s.Restart("150")
	}
	if err != nil {
		t.Fatal(err)
	}
	var took int64
	for ; took < 20000; took += 10 {
		if st, ok := s.Agreement(); ok && st.Coordinator == next {
			break
		}
		s.RunFor(10)
	}
	st, ok := s.Agreement()
	started := counted() - before
	t.Logf("coordinator %s in %s %d ms after the hand-off, %d elections started by the other %d followers, %d election messages in all",
		st.Coordinator, st.Term, took, started, n-2, s.ElectionMessages())
	if !ok || st.Coordinator != next {
		t.Fatalf("no agreement on %s within 20 s of the hand-off: %+v", next, st)
	}
	if alg == core.Ring && voters == 0 && how != "return" && took > 1800 {
		// Without the guard a ring's resign is agreed once the ELECTION
		// and the COORDINATOR laps have gone round (about 1.4 s). With
		// the guard, and at a return (its preemption check first), the
		// rest of the cluster learns of the new coordinator's
		// confirmation from its heartbeats, one batch at a time
		// (docs/design.md, "Heartbeat fan-out"): 2.4 – 3.1 s here. The
		// active/relay ring's followers wait for the hand-off's wake-up
		// lap before their phases start: 2.0 s, 3.0 s with the crash
		// (joining at once was faster here, 1.4 s, but left the
		// explorer's peterson n = 5 harsh seed 22 without a coordinator).
		// Those are logged only.
		t.Errorf("agreement %d ms after the hand-off, want at most 1,800", took)
	}
	if started > 0 {
		t.Errorf("%d elections started by released followers; the hand-off's lap reaches them all", started)
	}
}
