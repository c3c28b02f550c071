package sim

import (
	"fmt"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Issue 13, left open after the active/relay ring's Textbook fix: with the
// quorum guard, a member cut off from the majority (1, cut both ways from
// 3, 4 and 5, still reaching 2; membership never tells) hears no
// coordinator, and its idle timer started an election about every 1.9 s;
// in Textbook mode (no pre-vote) each election raised the term, 2 took it
// up and the majority's coordinator was deposed, then elected again. A
// member that cannot gather a majority must not depose the coordinator a
// connected majority keeps: for 30 s of cut, 5 keeps its role and its term
// and 2..5 keep following it.
func TestGuardCutMemberDoesNotDepose(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		for _, mode := range []core.Mode{core.View, core.Textbook} {
			t.Run(fmt.Sprintf("%s/%s", alg, mode), func(t *testing.T) {
				members, err := BuildMembers([]string{"1", "2", "3", "4", "5"}, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				s, err := New(Config{Members: members, Algorithm: alg, Mode: mode, HeartbeatDetector: true,
					ViewDelayMs: -1, Core: core.Config{QuorumSize: 5}, Seed: 1})
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
				for _, o := range []string{"3", "4", "5"} {
					if err := s.BlockQuiet("1", o); err != nil {
						t.Fatal(err)
					}
					if err := s.BlockQuiet(o, "1"); err != nil {
						t.Fatal(err)
					}
				}
				var deposed, apart int
				for ms := 0; ms < 30_000; ms += 10 {
					s.RunFor(10)
					if st := s.Node("5").Status(); st.Coordinator != "5" || st.Term != before.Term {
						deposed++
					}
					if st, ok := s.agreementOf("2", "3", "4", "5"); !ok || st.Coordinator != "5" || st.Term != before.Term {
						apart++
					}
				}
				t.Logf("%s %s: 5 not leading in term %s in %d of 3000 samples, 2..5 not agreed on it in %d, epoch at 1 %d",
					alg, mode, before.Term, deposed, apart, s.Node("1").Status().Term.Epoch())
				if deposed > 0 || apart > 0 {
					t.Errorf("the cut-off member disturbed the majority's coordinator: %d and %d samples of 3000", deposed, apart)
				}
				if v := s.Checker().Violations; len(v) > 0 {
					t.Fatalf("checker: %v", v)
				}
			})
		}
	}
}
