package core

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
	if k <= 0 {
		return
	}
	n.now += k
	n.tickHealth(k)
	if k > 1 && n.coordinator == n.self.ID {
		// This coordinator's loop ran late: heartbeat at once, and say
		// how late (Message.Phase) so that followers give it that long.
		n.lag = max(n.lag, k-1)
		n.hbTimer = n.cfg.HeartbeatInterval - 1
	}
	n.checkLease()
	n.tickCoolOff()
	n.tickHandoff()
	n.tickPreVote()
	// The algorithm's timers first: an election that the detectors below
	// start in this tick gets its full timeout.
	n.alg.tick()
	switch {
	case n.state == StateSleep:
		if n.idle++; n.idle >= n.cfg.StartupTicks {
			n.idle = 0
			if !n.holdFirstElection() { // the start-up hold (expect.go)
				n.startElection()
			}
		}
	case n.coordinator == n.self.ID:
		n.tickCoordinator()
	case n.coordinator != "":
		n.tickFollower()
	case !n.electing:
		// No coordinator and no election (after a resign, a step-down or a
		// newer term without its coordinator): try again after K intervals.
		if n.idle++; n.idle >= n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses {
			n.idle = 0
			n.startElection()
		}
	}
}

func (n *Node) tickCoordinator() {
	if n.hbTimer++; n.hbTimer >= n.cfg.HeartbeatInterval {
		n.hbTimer = 0
		n.heartbeat()
	}
	if n.cfg.QuorumSize == 0 {
		return
	}
	if n.confirmed {
		if n.now-n.confirmedAt > 8*n.cfg.LeaseTicks {
			n.failedLeads = 0 // a leadership that lasted: forget the back-off
		}
		return
	}
	n.renewLease() // a promise to another term may just have run out
	lapsed := n.leaseEnd > 0 && n.now-n.leaseEnd >= n.cfg.HeartbeatInterval && n.lag == 0 && n.health == 0
	never := n.leaseEnd == 0 && n.now-n.declared > n.abdicateWait()
	if !n.confirmed && (lapsed || never) {
		n.abdicate()
	}
}

// abdicateWait is how long after declaring a coordinator that no majority
// confirms waits before it abdicates.
func (n *Node) abdicateWait() int { return 2*n.cfg.LeaseTicks + n.cfg.LeaseMargin }

// checkLease ends a confirmed coordinator's leadership once its lease has
// lapsed (first, whenever the clock moves: a resumed process stops leading
// before it does anything else). It keeps heartbeating, unconfirmed: acks
// that come back soon (a loaded host, a lost round) confirm it again in the
// same term; a heartbeat interval later it abdicates (tickCoordinator),
// unless its own loop ran late lately (then the acks are late because it
// was).
func (n *Node) checkLease() {
	if n.confirmed && n.cfg.QuorumSize > 0 && n.coordinator == n.self.ID && n.now >= n.leaseEnd {
		n.confirmed = false
		n.setState(StateCandidate)
	}
}

// abdicate: with the guard, a coordinator whose lease lapsed a heartbeat
// interval ago (and whose own loop ran on time), or that no majority confirmed within 2 * LeaseTicks + LeaseMargin
// of declaring, cannot reach a majority. It steps down and releases its followers, who
// elect at once (the connected majority does not wait for its detectors,
// nor defend a coordinator that some of it still hears), and displaces
// the new coordinator only after a back-off that doubles with each failed
// leadership, from 2 leases to 64.
func (n *Node) abdicate() {
	n.backOff()
	if n.handingOff {
		return
	}
	n.beginHandoff("", false, false)
}

// backOff starts the back-off of a coordinator that failed to lead: it
// doubles with each failed leadership, from 2 leases to 64.
func (n *Node) backOff() {
	n.failedLeads = min(n.failedLeads+1, 6)
	n.coolUntil = n.now + n.cfg.LeaseTicks<<n.failedLeads
}

// backingOff reports an abdicated node's back-off: it does not stand in
// elections nor displace a coordinator.
func (n *Node) backingOff() bool { return n.now < n.coolUntil }

// tickCoolOff ends an abdicated node's back-off: it may displace the
// coordinator again by the preemption policy.
func (n *Node) tickCoolOff() {
	if n.coolUntil == 0 || n.now < n.coolUntil {
		return
	}
	n.coolUntil = 0
	if n.yielded {
		n.yielded = false
		n.maybePreempt()
	}
}

// maxHealth caps the local health score: at most maxHealth heartbeat
// intervals of extra patience.
const maxHealth = 4

// tickHealth keeps the node's local health score (Lifeguard's awareness,
// as memberlist's Awareness): each time its own loop ran late (Advance by
// more than a tick: CPU starvation, GC, CFS throttling, a pause) it rises
// by one, up to maxHealth; every K*H ticks on time it falls by one. A node
// that is itself late gives others that many more heartbeat intervals
// before it suspects them, and does not skip T on a corroborated suspicion.
func (n *Node) tickHealth(k int) {
	if k > 1 {
		n.health, n.healthyFor = min(n.health+1, maxHealth), 0
		return
	}
	if n.health > 0 {
		if n.healthyFor++; n.healthyFor >= n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses {
			n.health, n.healthyFor = n.health-1, 0
		}
	}
}

// Health returns the node's local health score: 0 when its loop runs on
// time, up to 4 when it has lately run late (tickHealth).
func (n *Node) Health() int { return n.health }

// tickFollower is the heartbeat failure detector (docs/design.md, "Failure
// detection"): it gives up on the coordinator after K intervals of
// silence (K periods, for a member the coordinator heartbeats less often
// than every round: fanout.go), plus the lag the coordinator last reported (a starved
// coordinator says how late its loop ran, and is given that much more).
// misses counts the intervals of silence beyond half an interval of
// jitter; a member that has missed K-1 no longer vouches for the
// coordinator. Ticks a late loop missed are not silence (Advance).
func (n *Node) tickFollower() {
	n.silence++
	h, e := n.cfg.HeartbeatInterval, n.period()
	patience := n.grace + n.health*h // a late coordinator, or a late self
	if m := (n.silence - e/2 - patience) / e; m > n.misses {
		n.misses = m
	}
	if n.silence >= e*n.cfg.HeartbeatMisses+patience {
		n.counters.HeartbeatMisses += uint64(n.cfg.HeartbeatMisses)
		n.coordinatorFailed()
	}
}

// period is the follower's heartbeat period in ticks: H, or the longer
// one the coordinator told it (fanout.go).
func (n *Node) period() int {
	if n.every > 0 {
		return n.every
	}
	return n.cfg.HeartbeatInterval
}

// coordinatorFailed: the source texts' "waited too long for a message from the
// coordinator", or the view reports it dead.
func (n *Node) coordinatorFailed() {
	n.suspect = n.coordinator
	n.unfollow()
	n.startElection()
}

// Detect tells the node that the coordinator is not working, as its own
// heartbeat detector would: it starts an election (non-voters wait for the
// outcome instead).
func (n *Node) Detect() {
	if n.coordinator != "" && n.coordinator != n.self.ID {
		n.coordinatorFailed()
		return
	}
	n.startElection()
}

func (n *Node) startElection() {
	if n.self.NonVoter {
		if n.state == StateSleep {
			n.setState(StateLost)
		}
		return
	}
	if n.term.Epoch() >= MaxEpoch {
		n.setState(StateLost) // the term space is used up: never wrap
		return
	}
	if n.cfg.Algorithm == Bully && n.cfg.Mode == Textbook && n.backingOff() && n.coordinator != n.self.ID {
		// A Textbook bully member that failed to lead lately does not
		// stand (it would win at once, nobody above it answering; View
		// mode has the pre-vote for this); it tries again when its idle
		// timer runs out after the back-off.
		n.idle = 0
		if n.state == StateSleep || n.state == StateCandidate {
			n.setState(StateLost)
		}
		return
	}
	n.yielded = false
	n.idle = 0
	if n.coordinator != "" && n.coordinator != n.self.ID {
		n.unfollow() // a candidate does not know the outcome yet
	}
	if n.alg.start() {
		n.counters.ElectionsStarted++
	}
}

// SetRating changes this node's own rating. If it now outranks the
// coordinator by the preemption policy, it starts an election.
func (n *Node) SetRating(r int64) {
	n.self.Rating = r
	n.view.update(n.self)
	n.maybePreempt()
}

// PeerUp reports a member alive (joined, restarted, or back after a
// partition) with its rating.
func (n *Node) PeerUp(p Peer) {
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
	if n.cfg.Mode != View || id == n.self.ID || !n.view.down(id) {
		return
	}
	n.noteDeparture(id)
	n.alg.peerDown(id)
	if id == n.coordinator {
		n.coordinatorFailed()
	}
}

// PeerRating reports a member's new rating.
func (n *Node) PeerRating(id string, rating int64) {
	if p, ok := n.view.r.Get(id); ok && id != n.self.ID && p.Rating != rating {
		p.Rating = rating
		n.view.update(p)
		n.maybePreempt()
	}
}

// Step hands the node a message that arrived for it.
func (n *Node) Step(m Message) {
	if m.To != n.self.ID || m.From == "" || m.From == n.self.ID || m.Type == 0 || m.Type >= numMsgTypes {
		n.drop(DropMisaddressed)
		return
	}
	n.counters.Received[m.Type]++
	if !m.Term.Plausible(n.term) {
		n.drop(DropBadTerm)
		return
	}
	if !n.tagMatches(m) {
		n.drop(DropForeignTag)
		return
	}
	if !n.learnRating(m.From, m.Rating) {
		n.drop(DropOrder) // the sender's tag is another member's
		return
	}
	if m.Term < n.term && !n.takesStale(m.Type) {
		n.drop(DropStaleTerm)
		n.tellTerm(m)
		return
	}
	n.observeTerm(m.Term)
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
		n.alg.step(m)
	}
}

// takesStale says which messages of a lower term the algorithm sees: an
// ELECTION or a pre-vote is a question, not a claim (the answer teaches the
// sender the term), a pre-vote's answer is about its sender's state, and a ring acknowledges every hop, stale or not, so
// that its sender does not skip a live successor.
func (n *Node) takesStale(t MsgType) bool {
	return t == MsgElection || t == MsgPreVote || t == MsgPreVoteAck ||
		n.cfg.Algorithm != Bully && (t == MsgCoordinator || t == MsgAck)
}

// tagMatches checks a claim to lead before its term is observed: a term
// names its winner, so a heartbeat, or an announcement, whose term's tag is
// not the named coordinator's is forged or broken, and must not raise the
// term (which would depose the coordinator this node follows).
func (n *Node) tagMatches(m Message) bool {
	switch {
	case m.Type == MsgHeartbeat:
		return m.Term.Tag() == Tag(m.From)
	case m.Type == MsgCoordinator && n.cfg.Algorithm == Bully:
		c := m.Coordinator
		if c == "" {
			c = m.From
		}
		return m.Term.Tag() == Tag(c)
	}
	return true
}

// tellTerm answers a stale claim to lead (a heartbeat, or a bully
// COORDINATOR sent by the coordinator it names) with this node's newer
// term, as raft's followers do: the sender steps down at once and its next
// election starts above that term. Without it a coordinator elected by
// restarted voters would never learn the term that members which kept
// running (non-voters) hold, and they would drop its heartbeats for ever.
func (n *Node) tellTerm(m Message) {
	claim := m.Type == MsgHeartbeat || m.Type == MsgCoordinator && (m.Coordinator == "" || m.Coordinator == m.From)
	if claim {
		n.send(Message{Type: MsgHeartbeatAck, To: m.From})
	}
}

// learnRating keeps the view's rating of a sender current; messages carry
// the sender's rating so that a change reaches peers with the next message.
// It reports false for an unknown sender whose tag another member has.
func (n *Node) learnRating(id string, rating int64) bool {
	p, ok := n.view.r.Get(id)
	if !ok {
		return n.view.up(Peer{ID: id, Rating: rating})
	}
	if p.Rating != rating {
		p.Rating = rating
		n.view.update(p)
	}
	return true
}

// observeTerm raises the node's term. A newer term means a newer
// coordinator exists: a coordinator steps down, a follower forgets the one
// it followed until it learns the new one.
func (n *Node) observeTerm(t Term) {
	if t <= n.term {
		return
	}
	n.term = t
	if n.coordinator != "" {
		if n.coordinator == n.self.ID && n.cfg.Algorithm == Bully && n.cfg.Mode == Textbook && n.cfg.QuorumSize > 0 && n.leaseEnd == 0 {
			// Deposed before any majority confirmed it: a failed
			// leadership, as one that abdicates (issue 13). In Textbook
			// mode (no pre-vote) a bully member
			// cut off from the majority that is deposed this way before its
			// abdication deadline would otherwise stand again at once, win
			// (nobody above it answers) and depose the majority's
			// coordinator in turn, over and over.
			n.backOff()
		}
		n.unfollow()
		if n.state == StateCoordinator || n.state == StateCandidate && !n.electing {
			n.setState(StateLost)
		}
	}
}
