package election_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

func withQuorum(s int) func(*election.Config) {
	return func(cfg *election.Config) { cfg.QuorumSize = s }
}

// lease is the default quorum lease, K*H.
const lease = detection

// guardedStart bounds a guarded cluster's first agreement: a starting
// voter acknowledges nobody for the longest lease it may have promised
// before it restarted (8 leases and their margin, 1.29 s), then the
// election and its first confirmed round.
const guardedStart = 2 * time.Second

// TestQuorumGuardMinorityCoordinator: with QuorumSize 5, a coordinator cut
// off with one follower loses its lease and stops leading (its leadership
// context is cancelled); the minority never reports a coordinator while
// the majority elects its own. After the heal the cluster agrees again.
func TestQuorumGuardMinorityCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), withQuorum(5))
		old, _ := c.waitAgreed(guardedStart, "e", 0)
		_, ctxs := c.members["e"].cb.snapshot()

		c.net.Partition([]string{"d", "e"}, []string{"a", "b", "c"})
		minority := []string{"d", "e"}
		took := electiontest.Eventually(t, lease+heartbeat+4*latency, func() bool {
			return !knowsLeader(c, minority...) && ctxs[0].Err() != nil
		}, c.describe)
		t.Logf("quorum guard: minority coordinator stepped down %v after the partition", took)
		if took < lease-heartbeat {
			t.Errorf("minority coordinator stepped down after %v, before its lease (%v) could lapse", took, lease)
		}
		events, _ := c.members["e"].cb.snapshot()
		if !slices.Contains(events, "stopped") {
			t.Errorf("old coordinator's callbacks = %q, want OnStoppedLeading", events)
		}
		majority, took := c.waitAgreed(time.Second, "c", old, "a", "b", "c")
		t.Logf("quorum guard: majority agreed %v later", took)
		electiontest.Hold(t, time.Millisecond, 2*time.Second, func() error {
			if knowsLeader(c, minority...) {
				return fmt.Errorf("minority reports a coordinator:%s", c.describe())
			}
			if l, tm := c.agreed("a", "b", "c"); l != "c" || tm != majority {
				return fmt.Errorf("majority lost its coordinator:%s", c.describe())
			}
			return nil
		})

		c.net.Heal()
		term, _ := c.waitAgreed(time.Second, "e", majority)
		if epoch(term) <= epoch(majority) {
			t.Errorf("term after heal %v, want past %v", core.Term(term), core.Term(majority))
		}
	})
}

// TestQuorumGuardMajorityCoordinator: a coordinator that keeps a majority
// keeps leading through a partition; the cut-off minority never reports
// a coordinator, not even the one it elects among itself.
func TestQuorumGuardMajorityCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), withQuorum(5))
		term, _ := c.waitAgreed(guardedStart, "e", 0)
		_, ctxs := c.members["e"].cb.snapshot()

		c.net.Partition([]string{"a", "b"}, []string{"c", "d", "e"})
		electiontest.Hold(t, time.Millisecond, 2*time.Second, func() error {
			if l, tm := c.agreed("c", "d", "e"); l != "e" || tm != term || ctxs[0].Err() != nil {
				return fmt.Errorf("majority coordinator lost office:%s", c.describe())
			}
			if slices.ContainsFunc([]string{"a", "b"}, func(id string) bool { return c.members[id].e.IsLeader() }) {
				return fmt.Errorf("a minority node leads:%s", c.describe())
			}
			return nil
		})
		if knowsLeader(c, "a", "b") {
			t.Errorf("minority reports a coordinator:%s", c.describe())
		}
	})
}

// TestQuorumGuardFailover: with the guard on, a crashed coordinator is
// still replaced as long as a majority survives.
func TestQuorumGuardFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), withQuorum(3))
		old, _ := c.waitAgreed(guardedStart, "c", 0)
		c.crash("c")
		c.waitAgreed(detection+lease+time.Second, "b", old)
	})
}

// knowsLeader reports whether any of ids reports a coordinator.
func knowsLeader(c *cluster, ids ...string) bool {
	for _, id := range ids {
		if _, _, ok := c.members[id].e.Leader(); ok {
			return true
		}
	}
	return false
}
