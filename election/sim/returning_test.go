package sim

import (
	"fmt"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Issue 15, "no disruption by a returning member" (raft's pre-vote,
// hashicorp/raft's PreVoteAvoidElectionWithPartition): a follower cut off
// from everyone for 5 s and then reconnected must not change the
// coordinator's term, in all three algorithms, with and without the quorum
// guard. The cut shows in the membership views (memberlist declares the
// two sides dead to each other after a second) or not (views=off: indirect
// probes keep everyone alive), and it takes either a low follower or the
// runner-up, which would win if the coordinator were gone.
//
// Without the guard, when the views drop everyone, the cut-off member is
// alone in its view, and a member alone leads without asking anyone (the
// lone survivor of a crash must be able to). It lost all four at once,
// though, so it waits core.Config.SoloDelay (10 s) before it leads alone
// (prevote.go, "The lone member"): the 5 s cut heals first.
func TestReturningFollowerKeepsTerm(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		for _, quorum := range []int{0, 5} {
			for _, views := range []bool{true, false} {
				for _, cut := range []string{"1", "4"} {
					name := fmt.Sprintf("%s/quorum=%d/views=%v/cut=%s", alg, quorum, views, cut)
					t.Run(name, func(t *testing.T) {
						returningFollower(t, alg, quorum, views, cut)
					})
				}
			}
		}
	}
}

func returningFollower(t *testing.T, alg core.Algorithm, quorum int, views bool, cut string) {
	members, err := BuildMembers([]string{"1", "2", "3", "4", "5"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Members: members, Algorithm: alg, Mode: core.View, HeartbeatDetector: true,
		ViewDelayMs: 1000, Core: core.Config{QuorumSize: quorum}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap("5"); err != nil {
		t.Fatal(err)
	}
	s.RunFor(1000)
	before, ok := s.Agreement()
	if !ok || before.Coordinator != "5" {
		t.Fatalf("not settled on 5 before the cut: %+v", before)
	}
	if views {
		err = s.Partition([]string{cut})
	} else {
		for _, o := range []string{"1", "2", "3", "4", "5"} {
			if o != cut {
				err = s.BlockQuiet(cut, o)
				if err == nil {
					err = s.BlockQuiet(o, cut)
				}
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	s.RunFor(5000)
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		if st := s.Node(id).Status(); id != cut && (st.Coordinator != "5" || st.Term != before.Term) {
			t.Errorf("during the cut, %s: %+v, want coordinator 5 in %s", id, st, before.Term)
		}
	}
	isolated := s.Node(cut).Status().Term
	s.Heal()
	s.RunFor(5000)
	after, ok := s.Agreement()
	t.Logf("term %s before, %s on the cut-off follower, %s after the heal (agreed %v)", before.Term, isolated, after.Term, ok)
	if !ok || after.Coordinator != "5" || after.Term != before.Term {
		t.Errorf("after the heal: %+v (agreed %v), want coordinator 5 in %s", after, ok, before.Term)
	}
	if v := s.Checker().Violations; len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
