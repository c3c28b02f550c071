package membership

import (
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election"
)

// Readiness is the membership side of a readiness check (a /readyz): why
// this node could not be serving yet, as far as membership can tell. The
// elector adds the rest (a coordinator agreed on).
type Readiness struct {
	// Seeds is the number of configured seeds; SeedsReached says whether
	// a join has reached a member since New; JoinError is the last join's
	// error ("" after a success).
	Seeds        int
	SeedsReached bool
	JoinError    string
	// Members and Voters count the live admitted members and voters this
	// node sees, itself included.
	Members, Voters int
	// QuorumSize is Config.QuorumSize.
	QuorumSize int
	// KeyMismatch counts packets no installed key could decrypt (Stats).
	KeyMismatch uint64
}

// Readiness returns the node's membership readiness now.
func (n *Node) Readiness() Readiness {
	r := Readiness{Seeds: len(n.cfg.Seeds), SeedsReached: n.joined.Load(), QuorumSize: n.cfg.QuorumSize,
		KeyMismatch: n.stats.keyMismatch.Load()}
	if p := n.joinErr.Load(); p != nil {
		r.JoinError = *p
	}
	for _, m := range n.table.members(time.Now()) {
		if m.Alive && m.Refused == "" {
			r.Members++
			if m.Voter {
				r.Voters++
			}
		}
	}
	return r
}

// Reason says why the node is not ready from membership's side, or ""
// when it is: "alone" (seeds configured, none reached, no other member),
// "waiting" (fewer than expect voters visible; expect 0 waits for none),
// or "no quorum" (fewer than a majority of QuorumSize voters visible).
func (r Readiness) Reason(expect int) string {
	switch {
	case r.alone():
		return r.aloneReason()
	case expect > 0 && r.Voters < expect:
		return fmt.Sprintf("waiting for expected members: %d of %d voters visible", r.Voters, expect)
	case r.QuorumSize > 0 && r.Voters < r.QuorumSize/2+1:
		return fmt.Sprintf("no quorum: %d of %d voters visible, %d needed", r.Voters, r.QuorumSize, r.QuorumSize/2+1)
	}
	return ""
}

// alone: seeds configured, none reached, no other member.
func (r Readiness) alone() bool { return r.Seeds > 0 && !r.SeedsReached && r.Members <= 1 }

func (r Readiness) aloneReason() string {
	why := r.JoinError
	if r.KeyMismatch > 0 {
		why = "key mismatch: " + why
	}
	return fmt.Sprintf("alone: no seed reachable (%s)", why)
}

var _ election.ReadinessTransport = (*Node)(nil)

// JoinProblem returns Reason's "alone" case: why this node has not reached
// the cluster its Seeds name, "" once a join has reached a member or
// another member has reached it, or when it has no seeds. The elector's
// readiness (election.ReadinessTransport, the handler's /readyz) reports
// it, even while this node leads alone.
func (n *Node) JoinProblem() string {
	if r := n.Readiness(); r.alone() {
		return r.aloneReason()
	}
	return ""
}
