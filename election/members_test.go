package election_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
)

// A member that learns of 400 others one by one, 2 ms apart (the start of
// a large cluster), rebuilds the member list its Status publishes at most
// once per membersEvery (n ms, at most a second), not once per PeerUp,
// and publishes the whole list once they have all arrived.
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
		synctest.Wait()
		r := c.members["a"].rec.snapshot()
		// At most one list per window of at least 1 ms (the list had one
		// member) ... growing to 400 ms: far fewer than the 400 PeerUps.
		if r.memberLists > 60 || r.known != joiners+1 {
			t.Errorf("%d member lists built for %d PeerUps in %v (known %d), want at most 60 and all %d known",
				r.memberLists, joiners, took, r.known, joiners+1)
		}
		t.Logf("%d member lists built for %d PeerUps in %v", r.memberLists, joiners, took)
	})
}
