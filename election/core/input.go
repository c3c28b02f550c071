package core

// How a driver builds and drives a Node: its construction (NewNode,
// InitNode, with the algorithm its Config names), its clock (Tick,
// Advance, Skip), a message (Step), a change of the membership view
// (PeerUp, PeerDown, PeerRating), its own rating (SetRating), a detection
// (Detect) and a settled start (Bootstrap). This file is the top of the
// package: it calls into every part, and no part calls into it.
// Invariant: every input first forgets
// the cached deadline and gives back a Ready handed over (input), and a message changes the node's state
// only once it has passed addressed, genuine and timely, in that order;
// each check that refuses it counts one drop, by reason.

// Step hands the node a message that arrived for it: a message addressed
// to this node from a genuine member, in a term it takes, raises its term
// to the message's and goes to the part that handles its type.
func (n *Node) Step(m Message) {
	n.input()
	if !n.addressed(&m) {
		n.drop(DropMisaddressed)
		return
	}
	n.countReceived(m.Type)
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
	n.input()
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
	n.input()
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
	n.input()
	if p, ok := n.view.r.Get(id); ok && id != n.self.ID && p.Rating != rating {
		p.Rating = rating
		n.view.update(p)
		n.maybePreempt()
	}
}

// SetRating changes this node's own rating. If it now outranks the
// coordinator by the preemption policy, it starts an election.
func (n *Node) SetRating(r int64) {
	n.input()
	n.self.Rating, n.out.statusDirty = r, true
	n.view.update(n.self)
	n.maybePreempt()
}

// Detect tells the node that the coordinator is not working, as its own
// heartbeat detector would: it starts an election (non-voters wait for the
// outcome instead).
func (n *Node) Detect() {
	n.input()
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
	n.input()
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

// Skip does what k calls of Tick do. When none of them reaches NextDeadline
// (the common case for a driver that follows it) it costs O(1): the
// counters advance by k at once. Otherwise it ticks up to each deadline it
// crosses, so its result is always that of k Ticks, messages included.
func (n *Node) Skip(k int) {
	n.begin()
	for k > 0 {
		d := n.NextDeadline() - n.now // >= 1
		if k < d {
			n.skip(k)
			return
		}
		n.skip(d - 1)
		n.Tick()
		k -= d
	}
}

// newRingAlgorithm returns the ring (docs/algorithms.md, ring) or the active/relay
// ring (§3).
func newRingAlgorithm(n *Node, a Algorithm) algorithm {
	if a == Peterson {
		return newPeterson(n)
	}
	r := &ring{}
	r.lap = newLap(n, r, listed, r.exhausted)
	return r
}

// NewNode validates cfg and returns a node in state sleep: after
// StartupDelay without hearing a coordinator it starts an election
// (docs/algorithms.md, bully step 5: a site that starts or restarts holds one).
// The node keeps its own copy of cfg and its own Ready buffer; a driver
// of many nodes builds them from one Host instead, which they share.
func NewNode(cfg Config) (*Node, error) {
	n := new(Node)
	if err := InitNode(n, cfg); err != nil {
		return nil, err
	}
	return n, nil
}

// InitNode makes *n, a zero Node, the node that NewNode(cfg) returns, in
// memory the caller provides: a driver of a million nodes (the simulator)
// allocates them in one slice instead of a million times. Only the fields
// that do not start at zero are written (a whole Node copied while the
// collector runs costs a write barrier for each of its pointer words);
// on an error *n is left alone. The node must not be copied afterwards
// (its algorithm points at it).
func InitNode(n *Node, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	own := &shared{Config: cfg}
	own.Roster = nil // the view holds it, and lets it go once it copies it
	n.init(own, cfg.ID, cfg.Roster)
	return nil
}

// init makes *n, a zero Node, member id of roster running with cfg
// (validated, defaults filled in; shared with the other nodes of its
// Host, never changed), drawing its Readies from cfg.pool (nil: it keeps
// its own).
func (n *Node) init(cfg *shared, id string, roster *Roster) {
	self, _ := roster.Get(id)
	n.cfg, n.self, n.tag = cfg, self, Tag(id)
	n.view.r, n.view.mode = roster, cfg.Mode
	n.guard.configure(&cfg.Config)
	n.out.state, n.out.coordinator, n.out.term, n.out.rating = n.state, n.reported(), n.term, n.self.Rating
	switch cfg.Algorithm {
	case Bully:
		n.alg = &bully{n: n}
	default:
		n.alg = newRingAlgorithm(n, cfg.Algorithm)
	}
}

// Tick advances the node's clock by one tick: heartbeats, the follower's
// failure detector, the quorum lease, the start-up window and the
// algorithm's own timeouts.
func (n *Node) Tick() { n.Advance(1) }

// Advance moves the node's clock on by k ticks at once, for a driver whose
// loop ran late (a starved or paused process: the ticks it missed). The
// lease and the promises behind it are deadlines, and see the whole jump
// first: a coordinator whose lease ran out while it was not running steps
// down before it does anything else. The failure detector, the start-up
// window and the algorithm's timers count it as one tick: a node that was
// not running could not hear anyone, so it does not blame the coordinator
// for the time it slept through (docs/design.md, "Failure detection").
func (n *Node) Advance(k int) {
	n.input()
	if k <= 0 {
		return
	}
	n.now += k
	n.tickHealth(k)
	if k > 1 && n.coordinator == n.self.ID {
		// This coordinator's loop ran late: heartbeat at once, and say
		// how late (Message.Lag) so that followers give it that long.
		n.det.lag = max(n.det.lag, k-1)
		n.det.hbTimer = n.cfg.HeartbeatInterval - 1
	}
	n.checkLease()
	n.tickCoolOff()
	n.tickHandoff()
	n.tickPreVote()
	// The algorithm's timers first: an election that the detectors below
	// start in this tick gets its full timeout.
	n.enter().tick()
	switch {
	case n.state == StateSleep:
		if n.idle++; n.idle >= n.cfg.StartupDelay {
			n.idle = 0
			if !n.holdFirstElection() && !n.restartHeld() { // the start-up holds (expect.go)
				n.startElection(CauseStartup)
			}
		}
	case n.coordinator == n.self.ID:
		n.tickCoordinator()
	case n.coordinator != "":
		n.tickFollower()
	case !n.electing:
		// No coordinator and no election (after a resign, a step-down or a
		// newer term without its coordinator): try again after K intervals
		// (a released follower: once the hand-off's lap or announcement is
		// due).
		if n.idle++; n.idle >= n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses && n.now >= n.hand.releaseDue() {
			n.idle = 0
			n.startElection(CauseLeaderless)
		}
	}
}
