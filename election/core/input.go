package core

// The inputs a driver hands a Node besides its clock (node.go: Tick,
// Advance): a message (Step), a change of the membership view (PeerUp,
// PeerDown, PeerRating), its own rating (SetRating), a detection (Detect)
// and a settled start (Bootstrap). Invariant: every input first forgets
// the cached deadline (forget), and a message changes the node's state
// only once it has passed addressed, genuine and timely, in that order;
// each check that refuses it counts one drop, by reason.

// Step hands the node a message that arrived for it: a message addressed
// to this node from a genuine member, in a term it takes, raises its term
// to the message's and goes to the part that handles its type.
func (n *Node) Step(m Message) {
	n.forget()
	if !n.addressed(&m) {
		n.drop(DropMisaddressed)
		return
	}
	n.count().Received[m.Type]++
	if !n.genuine(&m) || !n.timely(&m) {
		return
	}
	if m.Term > n.term && n.leads() && claimsLeadership(m, n.self.ID) {
		n.count().Deposed++
	}
	n.observeTerm(m.Term)
	// The part that handles its type: the detector, the guard, the
	// pre-vote, hand-off, or the algorithm.
	switch m.Type {
	case MsgHeartbeat:
		n.onHeartbeat(m)
	case MsgHeartbeatAck:
		n.onHeartbeatAck(m)
	case MsgPreVote:
		n.onPreVote(m)
	case MsgPreVoteAck:
		n.onPreVoteAck(m)
	case MsgPreempt:
		n.onPreempt(m)
	default:
		n.enter().step(m)
	}
}

// addressed reports whether m is a message of a known type to this node
// from another member.
func (n *Node) addressed(m *Message) bool {
	return m.To == n.self.ID && m.From != "" && m.From != n.self.ID && m.Type != 0 && m.Type < numMsgTypes
}

// genuine reports whether m's sender and term are what a member can send:
// an epoch at most MaxEpoch, a claim to lead in a term of the claimant's
// tag (tagMatches), a sender whose tag is its own (learnRating, which
// learns its rating). Else m is dropped, counted by reason.
func (n *Node) genuine(m *Message) bool {
	switch {
	case m.Term.Epoch() > MaxEpoch:
		n.drop(DropBadTerm)
	case !n.tagMatches(*m):
		n.drop(DropForeignTag)
	case !n.learnRating(m.From, m.Rating):
		n.drop(DropOrder) // the sender's tag is another member's
	default:
		return true
	}
	return false
}

// timely reports whether this node takes m's term: not below its own
// unless m's type takes stale terms (takesStale: a stale claim to lead is
// answered with the newer term, tellTerm), and not above it by more than
// the epoch allowance (admits). Else m is dropped, counted by reason.
func (n *Node) timely(m *Message) bool {
	if m.Term < n.term && !n.takesStale(m.Type) {
		if m.Type == MsgHeartbeatAck {
			n.measureRoundTrip(*m) // this node's rounds of a term it has left
		}
		n.drop(DropStaleTerm)
		n.tellTerm(*m)
		return false
	}
	if m.Term > n.term && !n.admits(m.Term) {
		n.drop(DropBadTerm) // faster than the epoch allowance (term.go)
		return false
	}
	return true
}

// leads reports whether this node leads: it is the coordinator and, with
// the guard, a majority confirmed it.
func (n *Node) leads() bool {
	return n.coordinator == n.self.ID && n.guard.holds()
}

// claimsLeadership reports whether m names a member other than self as
// the coordinator of its term: a heartbeat that is not a release, a
// COORDINATOR announcement, or the answer to a stale heartbeat (tellTerm)
// that names one.
func claimsLeadership(m Message, self string) bool {
	switch m.Type {
	case MsgHeartbeat:
		return !m.Released && m.From != self
	case MsgCoordinator:
		return m.Coordinator != self && (m.Coordinator != "" || m.From != self)
	case MsgHeartbeatAck:
		return m.Coordinator != "" && m.Coordinator != self
	}
	return false
}

// PeerUp reports a member alive (joined, restarted, or back after a
// partition) with its rating.
func (n *Node) PeerUp(p Peer) {
	n.forget()
	if p.ID == "" || p.ID == n.self.ID {
		return
	}
	if !n.view.up(p) {
		return // its tag is another member's: membership refuses such a member too
	}
	n.idle = max(n.idle, 0) // a lone member's wait for its hold (preVoteFailed) ends
	if n.coordinator == n.self.ID {
		n.heartbeatTo(p.ID) // let a starting node learn the term at once
	}
}

// PeerDown reports a member dead (View mode; Textbook nodes have no view and
// ignore it). If it was the coordinator, the node starts an election: the
// membership layer is the backstop of the heartbeat detector.
func (n *Node) PeerDown(id string) {
	n.forget()
	if n.cfg.Mode != View || id == n.self.ID || !n.view.down(id) {
		return
	}
	n.noteDeparture(id)
	n.enter().peerDown(id)
	if id == n.coordinator {
		n.coordinatorFailed(CauseDown)
	}
}

// PeerRating reports a member's new rating.
func (n *Node) PeerRating(id string, rating int64) {
	n.forget()
	if p, ok := n.view.r.Get(id); ok && id != n.self.ID && p.Rating != rating {
		p.Rating = rating
		n.view.update(p)
		n.maybePreempt()
	}
}

// SetRating changes this node's own rating. If it now outranks the
// coordinator by the preemption policy, it starts an election.
func (n *Node) SetRating(r int64) {
	n.forget()
	n.self.Rating, n.out.statusDirty = r, true
	n.view.update(n.self)
	n.maybePreempt()
}

// Detect tells the node that the coordinator is not working, as its own
// heartbeat detector would: it starts an election (non-voters wait for the
// outcome instead).
func (n *Node) Detect() {
	n.forget()
	if n.coordinator != "" && n.coordinator != n.self.ID {
		n.coordinatorFailed(CauseDown)
		return
	}
	n.startElection(CauseDown)
}

// Bootstrap puts a fresh node straight into a settled cluster: coordinator
// (possibly itself) in term. The simulator uses it for "the previous
// coordinator was the highest-rated" set-ups; the runtime never does.
func (n *Node) Bootstrap(coordinator string, term Term) {
	n.forget()
	n.setTerm(term)
	n.epochClock = 0 // a set-up, not a raise: the allowance stays whole
	if coordinator == n.self.ID {
		n.becomeCoordinator(term)
		if n.guard.settleLead(n.now, term) {
			n.renewLease() // confirm it at once
		}
		return
	}
	n.follow(coordinator, term, true)
	if !n.self.NonVoter {
		n.guard.settleFollower(n.now, term)
	}
}
