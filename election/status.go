package election

import (
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Status is a snapshot of one node's election state.
type Status struct {
	// ID is this node's ID.
	ID string
	// Name is the election's name: DefaultName for the unnamed election.
	Name string
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
	// NonVoter reports that this node never stands (for a named
	// election: that it does not stand for the name).
	NonVoter bool
	// Algorithm is the election algorithm the node runs.
	Algorithm core.Algorithm
	// Startup is the start-up hold (Config.ExpectVoters): whether the
	// node still holds its first election back, how many voters it sees,
	// and whether the window passed short of the expectation.
	Startup core.Startup
	// Hold says why this node, knowing no coordinator, does not stand
	// (its Reason is core.HoldNone otherwise): it waits for the voters it
	// expects (Config.ExpectVoters), for a majority of QuorumSize in its
	// view, or, having lost its last other voters at once, until Until
	// (Config.SoloDelay).
	Hold Hold
	// SittingOut reports that, with the quorum guard, this ring member
	// found it cannot reach a majority of QuorumSize and stays out of the
	// rings' elections until it can again (docs/design.md, "Rings on a
	// slow host"; the gauge coordelect_sitting_out). Always false in
	// bully.
	SittingOut bool
	// Members lists the members this node knows, itself included, in ring
	// order (ID order, core.CompareID, for members learned at run time).
	// Status builds it from the node's view at each call (O(n), a new
	// slice the caller owns): the Elector keeps no copy of its view to
	// publish, since every member of a large cluster would keep one of
	// every other. It can be a change newer than the other fields.
	Members []Member
	// Stopped reports that Run has returned; the other fields are the
	// node's last view.
	Stopped bool
}

// Hold is what holds a node's election back (core.Node.Hold), with its
// end as a time.
type Hold struct {
	// Reason is the hold: core.HoldNone, HoldExpect, HoldQuorum,
	// HoldSolo or HoldPromise.
	Reason core.HoldReason
	// Voters is the live voters this node sees, itself included; Need is
	// how many the hold waits for (expect, quorum).
	Voters, Need int
	// Until is when the hold ends by itself (solo, promise); zero when
	// only a change of the members ends it.
	Until time.Time
	// Found (expect) is how many voters this node must yet have seen
	// before ExpectWindow may end the hold; 0 once it has, or with
	// Config.Bootstrap.
	Found int
}

// Held reports whether a hold is in force.
func (h Hold) Held() bool { return h.Reason != core.HoldNone }

// String says the hold as the log and /readyz say it.
func (h Hold) String() string {
	switch h.Reason {
	case core.HoldExpect:
		return fmt.Sprintf("holding the election: waiting for the expected voters, %d of %d visible (ExpectVoters)", h.Voters, h.Need)
	case core.HoldQuorum:
		return fmt.Sprintf("holding the election: no quorum, %d of the %d voters a lease needs visible (QuorumSize)", h.Voters, h.Need)
	case core.HoldPromise:
		return fmt.Sprintf("holding the election: keeping the promise a restarted voter may have made, until %s (QuorumLeaseMax)", h.Until.UTC().Format(time.RFC3339Nano))
	case core.HoldSolo:
		return fmt.Sprintf("holding the election: lost the other voters at once, leading alone at %s (SoloDelay)", h.Until.UTC().Format(time.RFC3339Nano))
	}
	return "not holding"
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

// membersEvery is the least time between two counts of the members
// (countMembers) among n members: n ms, at most a second. A count is
// O(n); a member of a large cluster learns of each of the others one by
// one as they start (each a PeerUp and a flush), so counting (and, before,
// rebuilding the member list the status published) at each was O(n²) per
// member and, at n = 1,000 in one process, O(n³) work for a start. A
// change within the window is counted by the first flush after it (the
// loop wakes at least about once a second: wake.go).
func membersEvery(n int) time.Duration {
	return min(time.Second, time.Duration(n)*time.Millisecond)
}

// countMembers hands the Recorder (in the unnamed election's Update) the
// members the view holds and those alive, and checks the live voters
// (checkVoters), at most once per membersEvery after a change of the
// view. The membership is every name's: the unnamed election's roster
// holds it with the members' own ratings.
func (e *Elector) countMembers() {
	n := e.node
	r := n.Roster()
	if time.Since(e.membersBuilt) < membersEvery(r.Len()) {
		return
	}
	e.membersBuilt, e.membersDirty = time.Now(), false
	alive, voters := 0, 0
	for i := range r.Len() {
		if p := r.At(i); n.Alive(p.ID) {
			alive++
			if !p.NonVoter {
				voters++
			}
		}
	}
	u := e.def.u()
	u.Alive, u.Known, u.MembersChanged = alive, r.Len(), true
	e.checkVoters(voters)
}

// updateSnapshot publishes the name's status for Status() (but the
// member list, which Status builds). Its coordinator is the one the node
// reports (leadership), so that State, Term and Coordinator agree.
func (el *Election) updateSnapshot() {
	st := el.status
	el.snap.Store(&snapshot{
		coordinator: el.leadership().Coordinator,
		term:        uint64(st.term),
		rating:      st.rating,
		holds:       el.holds,
		state:       el.state,
		electing:    el.electing,
		nonVoter:    el.e.self.NonVoter || el.abstain,
		sittingOut:  el.isolated,
	})
}

// snapshot is what a name's Status reports that changes, as the loop
// last published it (updateSnapshot) for readers on any goroutine. A
// member of thousands of names keeps one for each: Status adds what
// never changes (the ID, the name, the algorithm) and the member list.
type snapshot struct {
	coordinator string
	term        uint64
	rating      int64
	holds       *holdView // the Election's, which never changes
	state       core.State
	electing    bool
	nonVoter    bool
	sittingOut  bool
	stopped     bool
}

// published returns the name's status as last published, without its
// member list.
func (el *Election) published() Status {
	s := el.snap.Load()
	return Status{ID: el.e.id, Name: el.name, State: s.state, Term: s.term, Coordinator: s.coordinator,
		Electing: s.electing, Rating: s.rating, NonVoter: s.nonVoter, Algorithm: el.e.self.Algorithm,
		Startup: s.holds.startup, Hold: s.holds.hold, SittingOut: s.sittingOut, Stopped: s.stopped}
}

// checkVoters warns, once, when the view holds more live voters than
// QuorumSize: the guard's majority is of QuorumSize, so voters beyond it
// could make two majorities, and the coordinator heartbeats every voter
// every round (docs/design.md, "The quorum guard at scale").
func (e *Elector) checkVoters(v int) {
	if e.cfg.QuorumSize == 0 || e.warnedVoters {
		return
	}
	if v > e.cfg.QuorumSize {
		e.warnedVoters = true
		e.log.Warn("more live voters than QuorumSize: set QuorumSize to the number of voters and make the other members non-voters",
			"voters", v, "quorum", e.cfg.QuorumSize)
	}
}
