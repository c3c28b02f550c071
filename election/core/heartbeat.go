package core

// Heartbeats (docs/design.md, "Failure detection" and "Leases"): the
// coordinator's heartbeat rounds (who hears each: fanout.go), the
// follower's failure detector that counts their silence (its state:
// detector.go), the node's own health score, and the quorum lease
// that rides on the rounds' acknowledgements (guard.go keeps its books;
// the Node acts on them here): the follower's promise (ackHeartbeat), the
// coordinator's lease (renewLease), its lapse (checkLease) and the
// abdication of a coordinator that cannot hold one.

func (n *Node) tickCoordinator() {
	if !n.guard.holds() {
		n.renewLease() // a promise to another term may just have run out
		if n.guard.cannotLead(n.now, n.det.lag == 0 && n.det.health == 0) {
			// Before this tick's heartbeat round, not after it: a round
			// sent with the release can arrive after it and make the
			// follower follow the coordinator again: a member that still
			// reaches a cut-off Textbook bully coordinator would go back
			// to it and answer the majority's ELECTIONs for it, doubling
			// the time to replace it.
			n.abdicate()
			return
		}
	}
	if n.det.hbTimer++; n.det.hbTimer >= n.cfg.HeartbeatInterval {
		n.det.hbTimer = 0
		n.heartbeat()
	}
	n.guard.lasted(n.now) // a leadership that lasted: forget the back-off
}

// heartbeat sends a heartbeat round to every member the coordinator should
// reach: the live view in View mode, every configured member in Textbook
// mode. Each round has a number, and the quorum lease runs from the send
// tick of the newest round a majority acknowledged.
func (n *Node) heartbeat() {
	n.det.hbSeq++
	n.guard.newRound(n.now, n.term, n.det.hbSeq)
	if n.fanningOut() {
		n.heartbeatFanOut() // fanout.go
	} else {
		n.det.fan.period, n.det.fan.promised = 1, 1 // everyone hears every round
		for i := 0; i < n.view.r.Len(); i++ {
			if p := n.view.r.At(i); p.ID != n.self.ID && n.view.alive(p.ID) {
				n.sendHeartbeat(p.ID, 0)
			}
		}
	}
	n.det.lag /= 2 // reported for a few rounds after the late tick
	n.renewLease()
}

// LeaseAsk returns the lease in ticks this node asks its voters for while
// it is coordinator with the quorum guard (QuorumLease, or stretched:
// leaseAsk), and 0 otherwise.
func (n *Node) LeaseAsk() int {
	if !n.guard.on() || n.coordinator != n.self.ID {
		return 0
	}
	return n.guard.leaseAsk()
}

// heartbeatTo sends the current round to one member (a member that has
// just come up gets it at once rather than at the next round).
func (n *Node) heartbeatTo(id string) { n.sendHeartbeat(id, n.heartbeatEvery(id)) }

func (n *Node) onHeartbeat(m Message) {
	if m.Coordinator != m.From {
		n.drop(DropMisaddressed)
		return
	}
	if m.Term.Tag() != Tag(m.From) {
		// A term names its winner; a mismatch is a forged or broken sender.
		n.drop(DropOrder)
		return
	}
	if m.Released {
		n.onReleased(m)
		return
	}
	if n.coordinator != m.From || n.term != m.Term {
		n.follow(m.From, m.Term, m.Confirmed)
	}
	// A round older than one already heard (heartbeats are datagrams, and
	// a confirmed announcement carries the round it followed) still shows
	// that the coordinator lives, but does not say whether its lease
	// holds now (with the guard; without it every coordinator counts as
	// confirmed).
	older := n.guard.on() && m.Seq != 0 && m.Seq <= n.det.lastSeq
	n.heardRound(m)
	if !older {
		n.setConfirmed(n.guard.counts(m.Confirmed))
		if m.Confirmed {
			n.guard.setIsolated(false) // it hears a coordinator that a majority confirms
		}
	}
	n.ackHeartbeat(m)
	n.maybePreempt()
}

// heardRound resets the detector on a round of the coordinator it
// follows: the silence ends, and the round says when the next is due
// (Every) and how late the coordinator's loop ran (Lag).
func (n *Node) heardRound(m Message) {
	if m.Seq > n.det.lastSeq+1 && n.det.lastSeq > 0 && n.det.every == n.cfg.HeartbeatInterval {
		// Heartbeats the coordinator sent that never arrived (a member
		// that hears every round; the others hear one round in a period).
		n.count().HeartbeatMisses += m.Seq - n.det.lastSeq - 1
	}
	n.det.lastSeq = max(n.det.lastSeq, m.Seq)
	n.det.every = n.cfg.HeartbeatInterval
	if m.Every != 0 {
		n.det.every = int(min(m.Every, maxEvery))
	}
	n.det.grace = min(int(m.Lag), n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses)
	n.det.silence, n.det.misses = 0, 0
	if n.det.relayed == m.From {
		n.det.relayed = "" // heard directly again
	}
}

// tickFollower is the heartbeat failure detector (docs/design.md, "Failure
// detection"): it gives up on the coordinator after K intervals of
// silence (K periods, for a member the coordinator heartbeats less often
// than every round: fanout.go), plus the lag the coordinator last reported (a starved
// coordinator says how late its loop ran, and is given that much more).
// misses counts the intervals of silence beyond half an interval of
// jitter; a member that has missed K-1 no longer vouches for the
// coordinator. Ticks a late loop missed are not silence (Advance).
func (n *Node) tickFollower() {
	n.det.silence++
	h, e := n.cfg.HeartbeatInterval, n.period()
	patience := n.det.grace + n.det.health*h // a late coordinator, or a late self
	if m := (n.det.silence - e/2 - patience) / e; m > n.det.misses {
		n.det.misses = m
	}
	if n.det.silence >= e*n.cfg.HeartbeatMisses+patience {
		n.count().HeartbeatMisses += uint64(n.cfg.HeartbeatMisses)
		n.coordinatorFailed(CauseSilence)
	}
}

// tickHealth keeps the node's local health score (Lifeguard's awareness,
// as memberlist's Awareness): each time its own loop ran late (Advance by
// more than a tick: CPU starvation, GC, CFS throttling, a pause) it rises
// by one, up to maxHealth; every K*H ticks on time it falls by one. A node
// that is itself late gives others that many more heartbeat intervals
// before it suspects them, and does not skip T on a corroborated suspicion.
func (n *Node) tickHealth(k int) {
	if k > 1 {
		n.det.health, n.det.healthyFor = min(n.det.health+1, maxHealth), 0
		return
	}
	if n.det.health > 0 {
		if n.det.healthyFor++; n.det.healthyFor >= n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses {
			n.det.health, n.det.healthyFor = n.det.health-1, 0
		}
	}
}

// Health returns the node's local health score (tickHealth): 0 when its
// driver's loop has run on time lately, up to 4 after it ran late. The
// runtime's loop wakes at every tick while it is above 0 (election/wake.go).
func (n *Node) Health() int { return n.det.health }

// ackHeartbeat acknowledges a heartbeat round, with the guard: the
// acknowledgement is a promise (guard.grant), and names the lease
// promised. A voter bound by a promise to another term does not
// acknowledge; non-voters never count toward a majority and do not
// acknowledge either.
func (n *Node) ackHeartbeat(m Message) {
	if n.self.NonVoter || !n.guard.on() {
		return
	}
	if lease, ok := n.guard.grant(n.now, m.Term, m.Lease); ok {
		n.send(Message{Type: MsgHeartbeatAck, To: m.From, Seq: m.Seq, Lease: lease})
	}
}

func (n *Node) onHeartbeatAck(m Message) {
	r, known := n.measureRoundTrip(m)
	if n.coordinator != n.self.ID || m.Term != n.term || !n.guard.on() || m.Seq == 0 || m.Seq > n.det.hbSeq {
		n.drop(DropUnexpected)
		return
	}
	if p, ok := n.view.r.Get(m.From); !ok || p.NonVoter {
		n.drop(DropUnexpected) // a non-voter never counts toward a majority
		return
	}
	if n.guard.noteAck(m.From, m.Seq, r, known, m.Lease) {
		n.renewLease()
	}
}

// measureRoundTrip raises the guard's recent round trips by that of the
// round m acknowledges, if this node remembers it, and returns that
// round. It measures an ack that comes too late to give a lease, and one
// of a term this node has left (Step hands it over although the term is
// stale): a coordinator that abdicates before its first acks arrive,
// while the others elect a newer term, must still learn how slow its
// round trips were, or it asks for too short a lease each time it leads
// again.
func (n *Node) measureRoundTrip(m Message) (sentRound, bool) {
	r, known := n.guard.roundOf(m.Term, m.Seq)
	if known {
		n.guard.measure(n.now, r)
	}
	return r, known
}

// renewLease moves the lease end on with the acks so far (guard.extend)
// and confirms a pending coordinator at once: it leads, tells the
// non-voters it held back (announceConfirmed), and heartbeats the
// confirmation to all, the members owed one included (payOwed).
func (n *Node) renewLease() {
	if n.guard.extend(n.now, n.term) {
		n.setConfirmed(true)
		n.setState(StateCoordinator)
		n.announceConfirmed()
		n.heartbeat()
		n.payOwed()
	}
}

// announceConfirmed sends the announcement that bully.win held back from
// the non-voters, now that the lease holds, highest-rated first, with
// Confirmed set: they report the coordinator at once instead of at their
// next heartbeat, a rotation period later.
func (n *Node) announceConfirmed() {
	if !n.guard.announceRest || n.coordinator != n.self.ID {
		return
	}
	n.guard.announceRest = false
	n.det.fan.owed = n.det.fan.owed[:0] // every non-voter hears this announcement
	r := n.view.r
	for k := r.Len() - 1; k >= 0; k-- {
		if p := r.ByRank(k); p.ID != n.self.ID && p.NonVoter && n.view.alive(p.ID) {
			// Seq: the rounds up to this one went out unconfirmed; one of
			// them arriving after this announcement (a datagram overtaken
			// by it) must not take the confirmation back (onHeartbeat).
			// Best effort: it hears the heartbeats in rotation (fanout.go),
			// the next of which makes up for a lost announcement.
			n.send(Message{Type: MsgCoordinator, To: p.ID, Coordinator: n.self.ID, Confirmed: true, Seq: n.det.hbSeq, BestEffort: true})
		}
	}
}

// LeaseEnd returns the tick at which this coordinator's quorum lease
// lapses, and false when the node is not a coordinator holding a lease
// (quorum guard off, a follower, or a lease not yet confirmed). The driver
// turns it into a deadline on its monotonic clock.
func (n *Node) LeaseEnd() (int, bool) {
	if !n.leaseHeld() {
		return 0, false
	}
	return n.guard.leaseEnd, true
}

// checkLease ends a confirmed coordinator's leadership once its lease has
// lapsed (first, whenever the clock moves: a resumed process stops leading
// before it does anything else). It keeps heartbeating, unconfirmed: acks
// that come back soon (a loaded host, a lost round) confirm it again in the
// same term; a heartbeat interval later it abdicates (tickCoordinator),
// unless its own loop ran late lately (then the acks are late because it
// was). On a loaded host the health score stays above 0 for hundreds of ms
// after the lease lapsed, and a cut-off bully coordinator re-announces
// itself to the connected majority's candidate all that while. Counting
// only its own lag would not do either: a loaded coordinator that is
// merely slow would then abdicate too.
func (n *Node) checkLease() {
	if n.leaseHeld() && n.now >= n.guard.leaseEnd {
		n.setConfirmed(false)
		n.setState(StateCandidate)
	}
}

// abdicate: with the guard, a coordinator that cannot reach a majority
// (guard.cannotLead) steps down and releases its followers, who elect at
// once (the connected majority does not wait for its detectors, nor
// defend a coordinator that some of it still hears), and displaces the
// new coordinator only after a back-off that doubles with each failed
// leadership, from 2 leases to 64.
func (n *Node) abdicate() {
	n.guard.backOff(n.now)
	if n.hand.handingOff {
		return
	}
	n.beginHandoff("", false, false)
}

// Isolated reports, with the quorum guard, that this node found it cannot
// reach a majority of the quorum (guard.sitsOut): the rings keep it out of
// their elections until a majority answers it. The driver logs the
// changes.
func (n *Node) Isolated() bool { return n.guard.isolated }

// tickCoolOff ends an abdicated node's back-off: it may displace the
// coordinator again by the preemption policy.
func (n *Node) tickCoolOff() {
	if n.guard.cooledOff(n.now) && n.hand.yielded {
		n.hand.yielded = false
		n.maybePreempt()
	}
}

// VerifyRound sends a heartbeat round now and returns its number, for a
// leader that wants a majority to confirm it before a side effect
// (hashicorp/raft's VerifyLeader). It returns 0 unless the quorum guard is
// on and this node is a confirmed coordinator.
func (n *Node) VerifyRound() uint64 {
	n.input()
	if !n.leaseHeld() {
		return 0
	}
	n.heartbeat()
	n.det.hbTimer = 0
	return n.det.hbSeq
}

// Verified reports whether, while this node still leads, voters that make
// a majority of the quorum with it have acknowledged round seq of the
// current term or a later one.
func (n *Node) Verified(seq uint64) bool {
	if seq == 0 || seq > n.det.hbSeq || n.coordinator != n.self.ID || !n.guard.confirmed {
		return false
	}
	return n.guard.verified(seq)
}
