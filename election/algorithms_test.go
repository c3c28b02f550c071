package election_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// TestEveryAlgorithm: the driver runs each algorithm of the core through
// the same life: initial election of the highest-rated member, failover
// after its crash (heartbeat detection, membership told later), and a
// resign hand-off.
func TestEveryAlgorithm(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			if alg == core.Peterson {
				t.Skip("the runtime's ring order is each node's join order (core.Roster appends), " +
					"so nodes disagree on successors; the active/relay ring needs a canonical View-mode order in core")
			}
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, voters(5), func(cfg *election.Config) { cfg.Algorithm = alg })
				first, _ := c.waitAgreed(time.Second, "e", 0)
				if st := c.members["a"].e.Status(); st.Algorithm != alg {
					t.Errorf("status algorithm %v, want %v", st.Algorithm, alg)
				}

				c.crash("e")
				second, took := c.waitAgreed(time.Second, "d", first)
				t.Logf("%v: failover %v after the crash", alg, took)
				// Membership's verdict, later: until then a hand-off could
				// go to e, which the view still holds alive.
				c.net.AnnounceDown("e")
				eventually(t, time.Second, func() bool { return c.members["d"].e.Status().AliveMembers() == 4 }, c.describe)

				if err := c.members["d"].e.Resign(context.Background()); err != nil {
					t.Fatal(err)
				}
				_, took = c.waitAgreed(time.Second, "c", second, "a", "b", "c")
				t.Logf("%v: resign hand-off %v", alg, took)
			})
		})
	}
}
