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

// A member that learns of 400 others one by one, 2 ms apart (the start of
// a large cluster), counts its members for the Recorder (an O(n) walk of
// its view) at most once per membersEvery (n ms, at most a second), not
// once per PeerUp, and counts them all once they have all arrived; Status,
// called meanwhile from the test's goroutine, lists them all.
func TestMemberListRebuildsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(1), nil)
		const joiners = 400
		began := time.Now()
		for i := range joiners {
			c.net.MustJoin(election.Identity{Name: fmt.Sprintf("p%03d", i), Rating: int64(10 + i), NonVoter: true})
			<-time.After(2 * time.Millisecond)
		}
		took := time.Since(began)
		electiontest.Eventually(t, 2*time.Second, func() bool { return len(c.members["a"].e.Status().Members) == joiners+1 }, c.describe)
		// The last count follows within membersEvery (400 ms here).
		electiontest.Eventually(t, 2*time.Second, func() bool { return c.members["a"].rec.snapshot().known == joiners+1 }, c.describe)
		synctest.Wait()
		r := c.members["a"].rec.snapshot()
		// At most one list per window of at least 1 ms (the list had one
		// member) ... growing to 400 ms: far fewer than the 400 PeerUps.
		if r.memberLists > 60 || r.known != joiners+1 {
			t.Errorf("%d member counts for %d PeerUps in %v (known %d), want at most 60 and all %d known",
				r.memberLists, joiners, took, r.known, joiners+1)
		}
		t.Logf("%d member counts for %d PeerUps in %v", r.memberLists, joiners, took)
	})
}

// Status builds its member list from the node's view while the loop
// changes it (race detector: the view's lock), and each list it gives is
// whole: in ID order, this node included, never shorter than the one
// before while members only join.
func TestStatusMembersDuringJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(1), nil)
		const joiners = 100
		done := make(chan struct{})
		lists := make(chan int, 1)
		go func() {
			most, calls := 0, 0
			for {
				select {
				case <-done:
					lists <- calls
					return
				case <-time.After(time.Millisecond):
				}
				ms := c.members["a"].e.Status().Members
				calls++
				if len(ms) < most || !slices.IsSortedFunc(ms, func(x, y election.Member) int { return core.CompareID(x.ID, y.ID) }) ||
					!slices.ContainsFunc(ms, func(m election.Member) bool { return m.ID == "a" }) {
					t.Errorf("a list of %d members after one of %d, sorted %v: %v", len(ms), most, slices.IsSortedFunc(ms, func(x, y election.Member) int { return core.CompareID(x.ID, y.ID) }), ms)
				}
				most = max(most, len(ms))
			}
		}()
		for i := range joiners {
			c.net.MustJoin(election.Identity{Name: fmt.Sprintf("p%03d", i), Rating: int64(10 + i), NonVoter: true})
			if i%3 == 0 {
				<-time.After(time.Millisecond)
			}
		}
		electiontest.Eventually(t, 2*time.Second, func() bool { return len(c.members["a"].e.Status().Members) == joiners+1 }, c.describe)
		close(done)
		if calls := <-lists; calls < 10 {
			t.Errorf("Status called %d times during the joins, want at least 10", calls)
		}
	})
}
