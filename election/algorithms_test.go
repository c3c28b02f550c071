package election_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

var algorithms = []core.Algorithm{core.Bully, core.Ring, core.Peterson}

// TestEveryAlgorithm: the driver runs each algorithm of the core through
// the same life: initial election of the highest-rated member, failover
// after its crash (membership reports it 300 ms later, as a fast profile
// would), and a resign hand-off.
func TestEveryAlgorithm(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, running(alg, voters(5)), nil)
				first, _ := c.waitAgreed(time.Second, "e", 0)
				if st := c.members["a"].e.Status(); st.Algorithm != alg {
					t.Errorf("status algorithm %v, want %v", st.Algorithm, alg)
				}
				c.crash("e")
				down := time.AfterFunc(300*time.Millisecond, func() { c.net.AnnounceDown("e") })
				defer down.Stop()
				second, took := c.waitAgreed(2*time.Second, "d", first)
				t.Logf("%v: failover %v after the crash", alg, took)
				// A hand-off goes to the top voter the view holds alive:
				// wait until d's view has e dead.
				electiontest.Eventually(t, time.Second, func() bool { return c.members["d"].e.Status().AliveMembers() == 4 }, c.describe)

				if err := c.members["d"].e.Resign(context.Background()); err != nil {
					t.Fatal(err)
				}
				_, took = c.waitAgreed(time.Second, "c", second, "a", "b", "c")
				t.Logf("%v: resign hand-off %v", alg, took)
			})
		})
	}
}

// TestHeartbeatFailover: with membership as slow as memberlist's LAN
// profile (the crash reported after 5 s), the coordinator heartbeat alone
// must bring the survivors to agreement within a second.
func TestHeartbeatFailover(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, running(alg, voters(5)), nil)
				first, _ := c.waitAgreed(time.Second, "e", 0)
				c.crash("e")
				down := time.AfterFunc(5*time.Second, func() { c.net.AnnounceDown("e") })
				defer down.Stop()
				_, took := c.waitAgreed(time.Second, "d", first)
				t.Logf("%v: failover %v after the crash", alg, took)
			})
		})
	}
}
