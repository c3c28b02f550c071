package core

import (
	"cmp"
	"slices"
)

// Heartbeats (docs/design.md, "Failure detection" and "Leases"): the
// coordinator's heartbeat rounds, the follower's failure detector that
// counts their silence, the node's own health score, and the quorum lease
// that rides on the rounds' acknowledgements: the follower's promise
// (grant), the coordinator's lease (renewLease), its lapse (checkLease)
// and the abdication and back-off of a coordinator that cannot hold one.

// detector is the failure detector of a follower and the heartbeat rounds
// of a coordinator. Invariant: a follower starts an election on its
// coordinator's silence only after HeartbeatMisses intervals (its period)
// without a round, plus the lag the coordinator reported and its own
// health score: a late loop on either side is not silence.
type detector struct {
	silence int    // follower: ticks since the coordinator was last heard
	misses  int    // follower: heartbeat intervals missed in a row
	grace   int    // follower: the lag the coordinator last reported, in ticks
	lastSeq uint64 // follower: the last heartbeat round heard in this term
	every   int    // follower: ticks within which the next heartbeat is due (Message.Every)
	// health is the local health score (tickHealth); healthyFor counts
	// the on-time ticks since it last changed.
	health, healthyFor int
	hbTimer            int    // coordinator: ticks since the last heartbeat round
	lag                int    // coordinator: how late its loop ran lately, in ticks
	hbSeq              uint64 // coordinator: heartbeat rounds sent in this term
	fan                fanOut // coordinator: the rotation of a fanned-out view (fanout.go)
	// suspect is the coordinator the detector gave up on, until a
	// coordinator is known again: bully routes its first question around
	// it (see bully.stageOneTarget).
	suspect string
	// relayed is a coordinator this node follows on another node's word
	// (a relayed COORDINATOR), not having heard it directly since: when
	// the detector gives up on that coordinator again, the silence is
	// probably on the link to this node alone, so bully asks at once
	// instead of waiting for a senior's announcement.
	relayed string
	rtts    roundTrips // the last round trips measured (link.hopTimeout)
}

func (n *Node) tickCoordinator() {
	if n.cfg.QuorumSize > 0 && !n.guard.confirmed {
		n.renewLease() // a promise to another term may just have run out
		lapsed := n.guard.leaseEnd > 0 && n.now-n.guard.leaseEnd >= n.cfg.HeartbeatInterval && n.det.lag == 0 && n.det.health == 0
		never := n.guard.leaseEnd == 0 && n.now-n.guard.declared > n.abdicateWait()
		if !n.guard.confirmed && (lapsed || never) {
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
	if n.cfg.QuorumSize > 0 && n.guard.confirmed && n.now-n.guard.confirmedAt > 8*n.cfg.QuorumLease {
		n.guard.failedLeads = 0 // a leadership that lasted: forget the back-off
	}
}

// heartbeat sends a heartbeat round to every member the coordinator should
// reach: the live view in View mode, every configured member in Textbook
// mode. Each round has a number, and the quorum lease runs from the send
// tick of the newest round a majority acknowledged.
func (n *Node) heartbeat() {
	n.det.hbSeq++
	if n.cfg.QuorumSize > 0 {
		if n.guard.rttFresh {
			// Forget a slow spell within about 16 acknowledged rounds.
			// A round whose acks have not come back yet says nothing
			// about the round trip: decaying then shortened the lease
			// each round asked before the first acks of a term arrived.
			n.guard.rttHigh -= (n.guard.rttHigh + 15) / 16
			n.guard.rttFresh = false
		}
		// Only the guard reads the rounds (acks, leases, round trips).
		n.guard.rounds = append(trimRounds(n.guard.rounds, n.now-n.cfg.QuorumLeaseMax), round{term: n.term, seq: n.det.hbSeq, at: n.now, lease: n.leaseAsk()})
	}
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
	if n.cfg.QuorumSize > 0 {
		n.renewLease()
	}
}

// round is one heartbeat round: its term and number, the tick it was sent
// at and the lease it asked for.
type round struct {
	term  Term
	seq   uint64
	at    int
	lease int
}

// lastRound returns the newest round of the current term, if any (rounds
// of the terms before are kept to measure their late acks).
func (n *Node) lastRound() (round, bool) {
	if k := len(n.guard.rounds); k > 0 && n.guard.rounds[k-1].term == n.term {
		return n.guard.rounds[k-1], true
	}
	return round{}, false
}

// maxLeaseTicks bounds QuorumLeaseMax (Message.Lease is a uint32, and a
// promise's end must not overflow).
const maxLeaseTicks = 1 << 30

// leaseAsk is the lease this coordinator asks its voters for: QuorumLease,
// stretched while its rounds' acknowledgements come back late (a loaded
// or paused host, a slow network) to twice the recent round trip plus a
// heartbeat interval, so that a round's acks arrive within its lease and
// the next round renews it before it lapses; at most QuorumLeaseMax. A
// round trip longer than QuorumLease otherwise means no lease ever holds
// (docs/design.md, "Leases").
func (n *Node) leaseAsk() int {
	return min(max(n.cfg.QuorumLease, 2*n.guard.rttHigh+n.cfg.HeartbeatInterval), n.cfg.QuorumLeaseMax)
}

// LeaseAsk returns the lease in ticks this node asks its voters for while
// it is coordinator with the quorum guard (QuorumLease, or stretched:
// leaseAsk), and 0 otherwise.
func (n *Node) LeaseAsk() int {
	if n.cfg.QuorumSize == 0 || n.coordinator != n.self.ID {
		return 0
	}
	return n.leaseAsk()
}

// leaseMargin is the margin a voter adds to a lease of l ticks: one tick
// for the driver's rounding, and LeaseMargin - 1 scaled with the lease, so
// that a stretched lease tolerates the same clock-rate difference.
func (n *Node) leaseMargin(l int) int {
	if l <= n.cfg.QuorumLease {
		return n.cfg.LeaseMargin
	}
	return 1 + ((n.cfg.LeaseMargin-1)*l+n.cfg.QuorumLease-1)/n.cfg.QuorumLease
}

// wireLease is the Message.Lease form of a lease: 0 for QuorumLease.
func (n *Node) wireLease(l int) uint32 {
	if l == n.cfg.QuorumLease {
		return 0
	}
	return uint32(l)
}

// trimRounds drops the rounds sent before tick from (their acks could no
// longer give a lease), reusing rs.
func trimRounds(rs []round, from int) []round {
	i := 0
	for i < len(rs) && rs[i].at < from {
		i++
	}
	if i == 0 {
		return rs
	}
	return append(rs[:0], rs[i:]...)
}

// heartbeatTo sends the current round to one member (a member that has
// just come up gets it at once rather than at the next round).
func (n *Node) heartbeatTo(id string) { n.sendHeartbeat(id, n.heartbeatEvery(id)) }

// sendHeartbeat sends the current round to id, telling it to expect the
// next within every ticks (0: H).
func (n *Node) sendHeartbeat(id string, every uint32) {
	if every != 0 && n.cfg.QuorumSize > 0 && !n.guard.confirmed {
		n.det.fan.owed = append(n.det.fan.owed, id) // told "unconfirmed" for a period
	}
	var lease uint32
	if r, ok := n.lastRound(); ok && n.cfg.QuorumSize > 0 {
		lease = n.wireLease(r.lease)
	}
	n.send(Message{Type: MsgHeartbeat, To: id, Coordinator: n.self.ID, Confirmed: n.guard.confirmed, Seq: n.det.hbSeq,
		Lag: uint32(min(n.det.lag, n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses)), Every: every, Lease: lease})
}

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
	older := n.cfg.QuorumSize > 0 && m.Seq != 0 && m.Seq <= n.det.lastSeq
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
	if !older {
		n.setConfirmed(m.Confirmed || n.cfg.QuorumSize == 0)
		if m.Confirmed {
			n.setIsolated(false) // it hears a coordinator that a majority confirms
		}
	}
	if n.cfg.QuorumSize > 0 {
		n.grant(m)
	}
	n.maybePreempt()
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

// period is the follower's heartbeat period in ticks: H, or the longer
// one the coordinator told it (fanout.go).
func (n *Node) period() int {
	if n.det.every > 0 {
		return n.det.every
	}
	return n.cfg.HeartbeatInterval
}

// coordinatorFailed: the source texts' "waited too long for a message from the
// coordinator", or the view reports it dead.
func (n *Node) coordinatorFailed(cause ElectionCause) {
	n.det.suspect = n.coordinator
	n.unfollow()
	n.startElection(cause)
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

// grant acknowledges a heartbeat round (quorum guard). An acknowledgement
// is a promise: until the lease the round asks for (QuorumLease, or a
// stretched one up to QuorumLeaseMax) and its margin after its receipt,
// this node acknowledges no coordinator of another term, so no other
// coordinator can gather a majority before the lease it helps to hold has
// run out on the coordinator's clock (docs/design.md, "Leases"). A promise
// only grows: a shorter lease asked later does not shorten one already
// given. The ack names the lease promised. Non-voters never count toward
// a majority and do not acknowledge.
func (n *Node) grant(m Message) {
	if n.self.NonVoter || n.now < n.guard.grantEnd && n.guard.grantTerm != m.Term {
		return
	}
	l := n.cfg.QuorumLease
	if m.Lease != 0 {
		l = min(max(int(m.Lease), n.cfg.QuorumLease), n.cfg.QuorumLeaseMax)
	}
	end := n.now + l + n.leaseMargin(l)
	if n.guard.grantTerm == m.Term {
		end = max(end, n.guard.grantEnd)
	}
	n.guard.grantTerm, n.guard.grantEnd = m.Term, end
	n.send(Message{Type: MsgHeartbeatAck, To: m.From, Seq: m.Seq, Lease: n.wireLease(l)})
}

// bound reports whether this node has promised its acknowledgement to a
// coordinator of another term than its own current one and the promise still holds.
func (n *Node) bound() bool { return n.now < n.guard.grantEnd && n.guard.grantTerm != n.term }

// voterAck is what a coordinator keeps of one voter's acknowledgements:
// the newest round it acknowledged, and the tick until which its promises
// are known to hold on the coordinator's clock (the acknowledged round's
// send tick plus the lease promised: the voter received the round after
// it was sent).
type voterAck struct {
	seq uint64
	end int
}

func (n *Node) onHeartbeatAck(m Message) {
	r, known := n.measureRoundTrip(m)
	if n.coordinator != n.self.ID || m.Term != n.term || n.cfg.QuorumSize == 0 || m.Seq == 0 || m.Seq > n.det.hbSeq {
		n.drop(DropUnexpected)
		return
	}
	if p, ok := n.view.r.Get(m.From); !ok || p.NonVoter {
		n.drop(DropUnexpected) // a non-voter never counts toward a majority
		return
	}
	a := n.guard.acks[m.From]
	if m.Seq <= a.seq {
		return
	}
	a.seq = m.Seq
	if known {
		l := n.cfg.QuorumLease
		if m.Lease != 0 {
			l = int(m.Lease)
		}
		a.end = max(a.end, r.at+min(l, r.lease))
	}
	n.guard.acks[m.From] = a
	n.renewLease()
}

// measureRoundTrip raises rttHigh by the round trip of the round m
// acknowledges, if this node remembers it, and returns that round. It
// measures an ack that comes too late to give a lease, and one of a term
// this node has left (Step hands it over although the term is stale): a
// coordinator that abdicates before its first acks arrive, while the
// others elect a newer term, must still learn how slow its round trips
// were, or it asks for too short a lease each time it leads again.
func (n *Node) measureRoundTrip(m Message) (round, bool) {
	r, known := n.roundOf(m)
	if known && n.cfg.QuorumSize > 0 {
		n.guard.rttHigh, n.guard.rttFresh = max(n.guard.rttHigh, n.now-r.at), true
	}
	return r, known
}

// roundOf finds the round that m acknowledges, of this node's current
// term or of one it led before, if it is still remembered (rounds are
// kept for QuorumLeaseMax, across terms: a coordinator that abdicates
// before its acks come back may lead again, in a newer term, before they
// do).
func (n *Node) roundOf(m Message) (round, bool) {
	if m.Seq == 0 {
		return round{}, false
	}
	for _, r := range n.guard.rounds {
		if r.seq == m.Seq && r.term == m.Term {
			return r, true
		}
	}
	return round{}, false
}

// renewLease moves the lease end to the send tick of the newest round that
// a majority of QuorumSize (this node included) acknowledged, plus
// QuorumLease, and confirms a pending coordinator at once. A coordinator
// still bound by its own promise to another term (bound) does not count
// itself until that promise runs out: it needs acks from a majority
// without itself. Every such majority meets every majority the other
// term's lease could rest on in a member that is free of its promise to
// that term, so the leases still never overlap; and the connected
// majority's winner, often the member that still heard the cut-off
// coordinator (and so still acknowledged it), leads as soon as the others
// acknowledge it instead of a lease and a margin after its last
// acknowledgement of the old coordinator.
func (n *Node) renewLease() {
	if end := n.quorumLeaseEnd(n.bound()); end > n.guard.leaseEnd {
		n.guard.leaseEnd = end
	}
	if !n.guard.confirmed && n.now < n.guard.leaseEnd {
		n.setConfirmed(true)
		n.guard.confirmedAt = n.now
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

// quorumLeaseEnd returns the tick at which the lease given by the acks so
// far lapses: the tick until which need voters besides this one are bound
// by their promises (the need-th latest of their ends, voterAck); 0 when
// fewer have acknowledged. Alone (need 0) the lease is the newest round's.
// It is a floor on the configured size, not on the live view. A bound node
// does not count itself: it needs one ack more.
func (n *Node) quorumLeaseEnd(bound bool) int {
	need := n.cfg.QuorumSize / 2 // acks needed besides our own
	if bound {
		need++
	}
	r, ok := n.lastRound()
	if !ok {
		return 0
	}
	if need == 0 {
		return r.at + r.lease
	}
	if len(n.guard.acks) < need {
		return 0
	}
	ends := n.guard.scratch[:0]
	for _, a := range n.guard.acks {
		ends = append(ends, a.end)
	}
	slices.SortFunc(ends, func(a, b int) int { return cmp.Compare(b, a) })
	n.guard.scratch = ends
	return ends[need-1]
}

// tickCoordinatorLease re-evaluates the lease at once (an ack can confirm a
// pending coordinator without waiting for the next tick).
func (n *Node) tickCoordinatorLease() { n.renewLease() }

// LeaseEnd returns the tick at which this coordinator's quorum lease
// lapses, and false when the node is not a coordinator holding a lease
// (quorum guard off, a follower, or a lease not yet confirmed). The driver
// turns it into a deadline on its monotonic clock.
func (n *Node) LeaseEnd() (int, bool) {
	if n.cfg.QuorumSize == 0 || n.coordinator != n.self.ID || !n.guard.confirmed {
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
	if n.guard.confirmed && n.cfg.QuorumSize > 0 && n.coordinator == n.self.ID && n.now >= n.guard.leaseEnd {
		n.setConfirmed(false)
		n.setState(StateCandidate)
	}
}

// abdicateWait is how long after declaring a coordinator that no majority
// confirms waits before it abdicates: two leases and a margin, of the
// lease it asks for (a stretched one when its round trips were slow: the
// acks of its first rounds may take that long).
func (n *Node) abdicateWait() int {
	l := n.leaseAsk()
	return 2*l + n.leaseMargin(l)
}

// abdicate: with the guard, a coordinator whose lease lapsed a heartbeat
// interval ago (and whose own loop ran on time), or that no majority
// confirmed within abdicateWait of declaring, cannot reach a majority. It
// steps down and releases its followers, who elect at once (the connected
// majority does not wait for its detectors, nor defend a coordinator that
// some of it still hears), and displaces the new coordinator only after a
// back-off that doubles with each failed leadership, from 2 leases to 64.
func (n *Node) abdicate() {
	n.backOff()
	if n.hand.handingOff {
		return
	}
	n.beginHandoff("", false, false)
}

// backOff starts the back-off of a coordinator that failed to lead: it
// doubles with each failed leadership, from 2 leases to 64.
func (n *Node) backOff() {
	n.guard.failedLeads = min(n.guard.failedLeads+1, 6)
	n.guard.coolUntil = n.now + n.cfg.QuorumLease<<n.guard.failedLeads
}

// backingOff reports an abdicated node's back-off: it does not stand in
// elections nor displace a coordinator.
func (n *Node) backingOff() bool { return n.now < n.guard.coolUntil }

// sitsOut reports whether this node stays out of the rings' elections: it
// does not stand, and it refuses the hops that ask for an Ack, so that its
// predecessor passes it over (link.refuses). A node backing off does; so
// does, with the guard, a node that has found that it cannot reach a
// majority (isolated): the members of its election it gave up on leave
// fewer than a majority it reaches (link.tick), or its last election
// pre-vote failed for want of a majority's answers. A member that reaches
// only one other (a cut that memberlist's indirect probes hide from the
// view) would otherwise stay in the ring, and every lap through it went
// back to that one member: the members after it would hear nothing, and
// the active/relay ring would restart election after election once a
// deposed coordinator's back-off ran out before the election ended (a
// loaded host; docs/design.md, "Rings on a slow host").
// A pre-vote or preemption check that a majority answers, or a heartbeat
// of a confirmed coordinator, ends it.
func (n *Node) sitsOut() bool { return n.backingOff() || n.guard.isolated }

// Isolated reports, with the quorum guard, that this node found it cannot
// reach a majority of QuorumSize (sitsOut): the rings keep it out of their
// elections until a majority answers it. The driver logs the changes.
func (n *Node) Isolated() bool { return n.guard.isolated }

// setIsolated records whether this node can reach a majority (sitsOut);
// only the guard sets it.
func (n *Node) setIsolated(v bool) {
	if n.guard.isolated == v || v && n.cfg.QuorumSize == 0 {
		return
	}
	n.guard.isolated = v
}

// tickCoolOff ends an abdicated node's back-off: it may displace the
// coordinator again by the preemption policy.
func (n *Node) tickCoolOff() {
	if n.guard.coolUntil == 0 || n.now < n.guard.coolUntil {
		return
	}
	n.guard.coolUntil = 0
	if n.hand.yielded {
		n.hand.yielded = false
		n.maybePreempt()
	}
}

// VerifyRound sends a heartbeat round now and returns its number, for a
// leader that wants a majority to confirm it before a side effect
// (hashicorp/raft's VerifyLeader). It returns 0 unless the quorum guard is
// on and this node is a confirmed coordinator.
func (n *Node) VerifyRound() uint64 {
	n.forget()
	if n.cfg.QuorumSize == 0 || n.coordinator != n.self.ID || !n.guard.confirmed {
		return 0
	}
	n.heartbeat()
	n.det.hbTimer = 0
	return n.det.hbSeq
}

// Verified reports whether, while this node still leads, voters that make
// a majority of QuorumSize with it have acknowledged round seq of the
// current term or a later one.
func (n *Node) Verified(seq uint64) bool {
	if seq == 0 || seq > n.det.hbSeq || n.coordinator != n.self.ID || !n.guard.confirmed {
		return false
	}
	k := 0
	for _, a := range n.guard.acks {
		if a.seq >= seq {
			k++
		}
	}
	return k >= n.cfg.QuorumSize/2
}
