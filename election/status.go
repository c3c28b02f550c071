package election

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Status is a snapshot of one node's election state.
type Status struct {
	// ID is this node's ID.
	ID string
	// State is the node's state (sleep, cand, lost, coordinator, ...).
	State core.State
	// Term is the coordinator's term when Coordinator is set, else the
	// highest term this node has seen.
	Term uint64
	// Coordinator is the coordinator this node follows (itself when it
	// leads), "" when it knows none; see Leadership.Coordinator.
	Coordinator string
	// Electing reports that an election this node takes part in is running.
	Electing bool
	// Rating is this node's rating.
	Rating int64
	// NonVoter reports that this node never stands.
	NonVoter bool
	// Algorithm is the election algorithm the node runs.
	Algorithm core.Algorithm
	// Startup is the start-up hold (Config.ExpectVoters): whether the
	// node still holds its first election back, how many voters it sees,
	// and whether the window passed short of the expectation.
	Startup core.Startup
	// Members lists the members this node knows, itself included, in ring
	// order (ID order, core.CompareID, for members learned at run time).
	// Among n members the list is rebuilt at most every n ms (at most
	// once a second), so it may lag a membership change by that much;
	// the other fields do not lag.
	Members []Member
	// Stopped reports that Run has returned; the other fields are the
	// node's last view.
	Stopped bool
}

// Member is a member as one node knows it.
type Member struct {
	// ID is the member's ID.
	ID string
	// Rating is the member's rating as this node last heard it.
	Rating int64
	// NonVoter reports that the member never stands.
	NonVoter bool
	// Alive is false once the membership layer has reported it down.
	Alive bool
}

// AliveMembers counts the members s holds alive.
func (s Status) AliveMembers() int {
	n := 0
	for _, m := range s.Members {
		if m.Alive {
			n++
		}
	}
	return n
}

// membersEvery is the least time between two rebuilds of the member list
// Status publishes, for a list of n members: n ms, at most a second. A
// rebuild is O(n) and allocates the list; a member of a large cluster
// learns of each of the others one by one as they start (each a PeerUp
// and a flush), so rebuilding at each was O(n²) per member and, at n =
// 1,000 in one process, O(n³) work and tens of GB of garbage for a start.
// A change within the window is published by the first flush after it
// (the loop wakes at least every 1.5 H).
func membersEvery(n int) time.Duration {
	return min(time.Second, time.Duration(n)*time.Millisecond)
}

// membersRecent reports whether the member list of n members was built
// less than membersEvery(n) ago. Asked only when the list changed, so
// that the flushes of messages, most of them, read no clock for it.
func (e *Elector) membersRecent(n int) bool {
	return time.Since(e.membersBuilt) < membersEvery(n)
}

// updateSnapshot publishes the node's status for Status(); the member list
// is rebuilt only after a membership change, at most once per
// membersEvery.
func (e *Elector) updateSnapshot() {
	st := e.status
	s := &Status{
		ID:          e.id,
		State:       st.State,
		Term:        uint64(st.Term),
		Coordinator: st.Coordinator,
		Electing:    e.electing,
		Rating:      st.Rating,
		NonVoter:    e.self.NonVoter,
		Algorithm:   e.self.Algorithm,
		Startup:     e.startup,
	}
	if old := e.snap.Load(); old != nil && (!e.membersDirty || e.membersRecent(len(old.Members))) {
		s.Members = old.Members
	} else {
		e.membersBuilt = time.Now()
		s.Members = e.members()
		e.upd.Alive, e.upd.Known, e.upd.MembersChanged = s.AliveMembers(), len(s.Members), true
		e.membersDirty = false
		e.checkVoters(s.Members)
	}
	e.snap.Store(s)
}

func (e *Elector) members() []Member {
	r := e.node.Roster()
	out := make([]Member, r.Len())
	for i := range out {
		p := r.At(i)
		out[i] = Member{ID: p.ID, Rating: p.Rating, NonVoter: p.NonVoter, Alive: e.node.Alive(p.ID)}
	}
	return out
}

// checkVoters warns, once, when the view holds more live voters than
// QuorumSize: the guard's majority is of QuorumSize, so voters beyond it
// could make two majorities, and the coordinator heartbeats every voter
// every round (docs/design.md, "The quorum guard at scale").
func (e *Elector) checkVoters(ms []Member) {
	if e.cfg.QuorumSize == 0 || e.warnedVoters {
		return
	}
	v := 0
	for _, m := range ms {
		if m.Alive && !m.NonVoter {
			v++
		}
	}
	if v > e.cfg.QuorumSize {
		e.warnedVoters = true
		e.log.Warn("more live voters than QuorumSize: set QuorumSize to the number of voters and make the other members non-voters",
			"voters", v, "quorum", e.cfg.QuorumSize)
	}
}
