package election_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/metrics"
)

// A ring member with the quorum guard that is cut off from the others
// finds that its election's pre-vote gets no majority's answers and sits
// out of the rings' elections (docs/design.md, "Rings on a slow host"):
// Status.SittingOut and the gauge coordelect_sitting_out say so while it
// lasts, and both go back once the cut heals and it hears its confirmed
// coordinator again. The members that keep the majority never sit out. In
// bully there is no such rule: both stay false.
func TestCutRingMemberSitsOut(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Ring, core.Peterson, core.Bully} {
		t.Run(alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				rec, err := metrics.New(reg)
				if err != nil {
					t.Fatal(err)
				}
				c := newCluster(t, running(alg, voters(5)), func(cfg *election.Config) {
					cfg.QuorumSize = 5
					if cfg.Transport.Identity().Name == "a" {
						cfg.Recorder = rec
					}
				})
				term, _ := c.waitAgreed(guardedStart, "e", 0)
				gauge := func() float64 {
					mfs, err := reg.Gather()
					if err != nil {
						t.Fatal(err)
					}
					for _, mf := range mfs {
						if mf.GetName() == "coordelect_sitting_out" {
							return mf.GetMetric()[0].GetGauge().GetValue()
						}
					}
					t.Fatal("no coordelect_sitting_out in the registry")
					return 0
				}
				sitting := func(id string) bool { return c.members[id].e.Status().SittingOut }
				if sitting("a") || gauge() != 0 {
					t.Fatalf("a sits out before the cut (status %v, gauge %v)", sitting("a"), gauge())
				}

				c.net.Partition([]string{"a"}, []string{"b", "c", "d", "e"})
				// a's detector gives up on e after K·H, its pre-vote waits
				// for answers that never come; a few seconds bound both.
				wait := 5 * time.Second
				if alg == core.Bully {
					electiontest.Hold(t, time.Millisecond, wait, func() error {
						if sitting("a") || gauge() != 0 {
							return fmt.Errorf("bully a sits out (status %v, gauge %v)", sitting("a"), gauge())
						}
						return nil
					})
				} else {
					took := electiontest.Eventually(t, wait, func() bool { return sitting("a") && gauge() == 1 }, c.describe)
					t.Logf("%s: the cut-off a sits out %v after the cut", alg, took)
				}
				electiontest.Hold(t, time.Millisecond, time.Second, func() error {
					for _, id := range []string{"b", "c", "d", "e"} {
						if sitting(id) {
							return fmt.Errorf("%s, of the majority, sits out:%s", id, c.describe())
						}
					}
					if l, _ := c.agreed("b", "c", "d", "e"); l != "e" {
						return fmt.Errorf("the majority lost e:%s", c.describe())
					}
					return nil
				})

				c.net.Heal()
				// a never raised the term while cut off: the cluster agrees
				// on e in the term of before.
				_, took := c.waitAgreed(5*time.Second, "e", term-1)
				electiontest.Eventually(t, time.Second, func() bool { return !sitting("a") && gauge() == 0 }, c.describe)
				t.Logf("%s: all five agree on e again %v after the heal, a back in", alg, took)
			})
		})
	}
}
