package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

func epoch(term uint64) uint32 { return core.Term(term).Epoch() }

// TestInitialElection: a cluster that starts together elects its
// highest-rated member in the first epoch, right after the start-up window.
func TestInitialElection(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, voters(n), nil)
				top := voters(n)[n-1].id
				term, took := c.waitAgreed(time.Second, top, 0)
				t.Logf("initial election: all agree after %v", took)
				if epoch(term) != 1 || core.Term(term).Tag() != core.Tag(top) {
					t.Errorf("term = %v, want epoch 1 tagged %s", core.Term(term), top)
				}
				// start-up window (H), one more H in which the view, grown
				// in the first, stays the same (the start-up hold), and a
				// round trip; no failure detection.
				if took > 2*heartbeat+4*latency {
					t.Errorf("agreement took %v, want at most %v", took, 2*heartbeat+4*latency)
				}
				events, _ := c.members[top].cb.snapshot()
				want := []string{"leader " + top + "@" + core.Term(term).String(), "started " + core.Term(term).String()}
				if !slices.Equal(events, want) {
					t.Errorf("leader callbacks = %q, want %q", events, want)
				}
			})
		})
	}
}

// TestCrashFailover: the coordinator's process dies and the membership
// layer reports it only a second later; the survivors' heartbeat detector
// fires first and they agree on the next by rating in a higher term.
func TestCrashFailover(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				specs := voters(n)
				top, next := specs[n-1].id, specs[n-2].id
				c := newCluster(t, specs, nil)
				old, _ := c.waitAgreed(time.Second, top, 0)
				_, ctxs := c.members[top].cb.snapshot()

				const announce = time.Second
				c.crash(top)
				down := time.AfterFunc(announce, func() { c.net.AnnounceDown(top) })
				defer down.Stop()
				term, took := c.waitAgreed(announce, next, old)
				t.Logf("crash failover: survivors agree %v after the crash", took)
				// The detector gives up K*H after the last heartbeat, which
				// came up to one interval before the crash; the pre-vote and
				// the announcement add a few message delays.
				if took < detection-heartbeat || took > detection+10*latency {
					t.Errorf("failover took %v, want K*H = %v less the heartbeat phase, plus an election", took, detection)
				}
				if epoch(term) <= epoch(old) {
					t.Errorf("new term %v does not follow %v", core.Term(term), core.Term(old))
				}
				if ctxs[0].Err() == nil {
					t.Error("the crashed leader's leadership context is still live")
				}
				misses := c.members[specs[0].id].rec.snapshot().HeartbeatMisses
				if misses < election.DefaultHeartbeatMisses {
					t.Errorf("survivor recorded %d heartbeat misses, want >= K", misses)
				}
			})
		})
	}
}

// TestResignHandsOff: Resign hands the role to the next by rating within
// a few message delays, far below failure detection; the resigner then
// follows its successor and does not take the role back.
func TestResignHandsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), nil)
		old, _ := c.waitAgreed(time.Second, "e", 0)
		e := c.members["e"]
		if err := e.e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		if e.e.IsLeader() {
			t.Fatal("still leader after Resign returned")
		}
		_, took := c.waitAgreed(time.Second, "d", old, "a", "b", "c", "d")
		t.Logf("resign: the others agree %v after Resign returned", took)
		if took > 4*latency {
			t.Errorf("hand-off took %v, want a few message delays (<= %v)", took, 4*latency)
		}
		// The resigner learns its successor from the first heartbeat.
		term, _ := c.waitAgreed(heartbeat+4*latency, "d", old)
		electiontest.Hold(t, time.Millisecond, 2*time.Second, func() error {
			if l, tm := c.agreed(); l != "d" || tm != term {
				return fmt.Errorf("leadership moved after the hand-off:%s", c.describe())
			}
			return nil
		})
		events, ctxs := e.cb.snapshot()
		if ctxs[0].Err() == nil || !slices.Contains(events, "stopped") {
			t.Errorf("resigner: callbacks %q, leadership ctx err %v", events, ctxs[0].Err())
		}
		if err := c.members["a"].e.Resign(context.Background()); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("Resign on a follower = %v, want ErrNotLeader", err)
		}
	})
}

// TestRunCancelHandsOff: cancelling a leader's Run context hands off;
// Run returns once the successor has announced itself.
func TestRunCancelHandsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), nil)
		old, _ := c.waitAgreed(time.Second, "c", 0)
		m := c.members["c"]
		start := time.Now()
		if err := m.Stop(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		took := time.Since(start)
		t.Logf("Run cancel: Run returned %v after the cancel", took)
		delete(c.members, "c")
		if took > heartbeat+4*latency {
			t.Errorf("Run took %v to hand off, want at most H + a few delays", took)
		}
		if _, took := c.waitAgreed(4*latency, "b", old); took > 4*latency {
			t.Errorf("survivors agreed %v after Run returned", took)
		}
		events, ctxs := m.cb.snapshot()
		want := []string{"leader c@" + core.Term(old).String(), "started " + core.Term(old).String(), "stopped"}
		if ctxs[0].Err() == nil || !slices.Equal(events[:min(3, len(events))], want) {
			t.Errorf("callbacks %q (want %q first), leadership ctx err %v", events, want, ctxs[0].Err())
		}
		if st := m.e.Status(); !st.Stopped || st.Coordinator != "" {
			t.Errorf("status after Run = %+v", st)
		}
	})
}

// TestRestartDisplaces: the highest-rated node comes back after a crash
// and takes over from the interim coordinator in a higher term (bully
// step 5).
func TestRestartDisplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), nil)
		first, _ := c.waitAgreed(time.Second, "c", 0)
		c.crash("c")
		c.net.AnnounceDown("c")
		interim, _ := c.waitAgreed(time.Second, "b", first)
		_, ctxs := c.members["b"].cb.snapshot()

		c.start("c")
		term, took := c.waitAgreed(time.Second, "c", interim)
		t.Logf("restart displacement: all agree %v after the restart", took)
		if took > heartbeat {
			t.Errorf("displacement took %v, want less than H", took)
		}
		if ctxs[0].Err() == nil {
			t.Error("the interim coordinator's leadership context is still live")
		}
		if epoch(term) != epoch(interim)+1 {
			t.Errorf("term %v, want the epoch after %v", core.Term(term), core.Term(interim))
		}
	})
}

// TestSetRatingPreemption: a follower whose rating rises above the
// coordinator's takes over or not, by the preemption policy.
func TestSetRatingPreemption(t *testing.T) {
	tests := []struct {
		name    string
		policy  core.Preemption
		margin  int64
		rating  int64
		preempt bool
	}{
		{"always", core.PreemptAlways, 0, 4, true},
		{"never", core.PreemptNever, 0, 100, false},
		{"within margin", core.PreemptMargin, 10, 13, false},
		{"beyond margin", core.PreemptMargin, 10, 14, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, voters(3), func(cfg *election.Config) {
					cfg.Preemption, cfg.PreemptMargin = tt.policy, tt.margin
				})
				old, _ := c.waitAgreed(time.Second, "c", 0)
				if err := c.members["a"].e.SetRating(tt.rating); err != nil {
					t.Fatal(err)
				}
				if tt.preempt {
					c.waitAgreed(4*latency, "a", old)
					return
				}
				electiontest.Hold(t, time.Millisecond, time.Second, func() error {
					if l, tm := c.agreed(); l != "c" || tm != old {
						return fmt.Errorf("leadership moved:%s", c.describe())
					}
					return nil
				})
				if r := ratingOf(c.members["c"].e.Status(), "a"); r != tt.rating {
					t.Errorf("coordinator sees a's rating %d, want %d", r, tt.rating)
				}
			})
		})
	}
}

func ratingOf(st election.Status, id string) int64 {
	for _, m := range st.Members {
		if m.ID == id {
			return m.Rating
		}
	}
	return -1
}

// TestNonVoterNeverLeads: a non-voter with the highest rating follows the
// coordinator and never stands, even when every voter is gone.
func TestNonVoterNeverLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		specs := append(voters(3), spec{id: "v", rating: 100, nonVoter: true})
		c := newCluster(t, specs, nil)
		c.waitAgreed(time.Second, "c", 0)
		v := c.members["v"].e
		for _, id := range []string{"c", "b", "a"} {
			c.crash(id)
			c.net.AnnounceDown(id)
		}
		electiontest.Hold(t, time.Millisecond, 2*time.Second, func() error {
			if st := v.Status(); v.IsLeader() || st.State == core.StateCoordinator || st.Electing {
				return fmt.Errorf("non-voter stands: %+v", st)
			}
			return nil
		})
		if _, _, ok := v.Leader(); ok {
			t.Error("non-voter reports a coordinator after every voter died")
		}
	})
}
