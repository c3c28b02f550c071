package election_test

import (
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
)

// Isolating the coordinator alone (real memberlist, FaultNetwork): the
// other four elect the next in a higher term. Without the quorum guard the
// isolated one goes on leading its side of one; with it, it gives up once
// its lease runs out and never reports a coordinator again while cut off.
// After the heal exactly one coordinator remains, n5 (bully: the
// highest-rated displaces), in a term above every term before.
func TestMemberlistIsolateCoordinator(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quorum int
	}{{"without quorum guard", 0}, {"with quorum guard", 5}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newRealCluster(t, func(cfg *election.Config) { cfg.QuorumSize = tc.quorum })
			all := c.startN(5)
			_, term := c.await(all, "n5", 0, 15*time.Second)
			c.net.Partition([]string{"n5"}, names("n", 1, 4))
			_, majority := c.await(names("n", 1, 4), "n4", term, 10*time.Second)
			if tc.quorum == 0 {
				c.await([]string{"n5"}, "n5", term-1, time.Second)
			} else {
				c.await([]string{"n5"}, "", 0, 10*time.Second)
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
					if _, ok := c.agree([]string{"n5"}, "", 0); !ok {
						t.Fatalf("the isolated n5 reports a coordinator: %s", c.describe(all))
					}
					c.await(names("n", 1, 4), "n4", term, time.Second)
				}
			}
			c.net.Heal()
			took, healed := c.await(all, "n5", majority, 20*time.Second)
			t.Logf("isolated coordinator: heal to one coordinator (n5, term %d > %d) in %v", healed, majority, took)
		})
	}
}
