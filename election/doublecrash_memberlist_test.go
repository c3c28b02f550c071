package election_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// crashTogether stops the named members as crashes, at once: every elector
// first (no hand-off), then every memberlist shut down without a leave, so
// that the survivors learn of none of them before their detectors do.
func (c *realCluster) crashTogether(names ...string) {
	c.t.Helper()
	_ = c.ec.Crash(names...)
	for _, name := range names {
		delete(c.nodes, name)
	}
}

// Issue 13 item 6: the coordinator and one more member of a ring crash
// together (SIGKILL-like: no leave). The survivors must agree without
// waiting for memberlist to declare the dead members (seconds): the rings
// skip a successor that does not acknowledge a hop within HopTimeout. For
// each ring, n = 5 (ratings 1..5, n5 leads): one crash (n5), then n5 with
// the next coordinator n4, then n5 with n2 (a lap from n1 passes a dead
// member before it reaches the survivors above). The times are logged, for
// docs/reliability.md; no timed assertion (the deadline only bounds a hang).
func TestMemberlistRingsDoubleCrash(t *testing.T) {
	cases := []struct {
		crash []string
		want  string
	}{
		{[]string{"n5"}, "n4"},
		{[]string{"n5", "n4"}, "n3"},
		{[]string{"n5", "n2"}, "n4"},
	}
	for _, alg := range []core.Algorithm{core.Ring, core.Peterson} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/crash=%v", alg, tc.crash), func(t *testing.T) {
				c := newRealCluster(t, nil)
				c.alg = alg
				all := c.startN(5)
				_, term := c.await(all, "n5", 0, 20*time.Second)
				var survivors []string
				for _, name := range all {
					dead := false
					for _, d := range tc.crash {
						dead = dead || d == name
					}
					if !dead {
						survivors = append(survivors, name)
					}
				}
				c.crashTogether(tc.crash...)
				took, term2 := c.await(survivors, tc.want, term, 30*time.Second)
				t.Logf("%s: crash of %v: %v agreed on %s (term %s) %v after the crash",
					alg, tc.crash, survivors, tc.want, core.Term(term2), took)
			})
		}
	}
}
