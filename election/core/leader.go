package core

import (
	"cmp"
	"slices"
)

// becomeCoordinator makes this node coordinator in term t (t's tag is this
// node's). With the quorum guard on it stays a candidate until a majority
// acknowledges it.
func (n *Node) becomeCoordinator(t Term) {
	if t > n.term {
		n.term = t
	}
	again := n.coordinator == n.self.ID && !n.confirmed && n.leaseEnd == 0 // see below
	wasElecting := n.electing
	n.alg.reset()
	n.electing = false
	n.suspect = ""
	n.coordinator = n.self.ID
	n.hbTimer = 0
	n.idle = 0
	n.fan.reset()
	if wasElecting {
		n.counters.ElectionsWon++
	}
	if n.cfg.QuorumSize == 0 {
		n.confirmed = true
		n.setState(StateCoordinator)
		n.counters.LeaderChanges++
		return
	}
	// A coordinator that wins again while no majority has confirmed it
	// (Textbook bully: a lower member's ELECTION makes it elect itself
	// anew) keeps the tick it first declared at, so that it still abdicates
	// 2 * LeaseTicks + LeaseMargin after that (tickCoordinator): otherwise
	// each such ELECTION restarts that wait, and a top member cut off from
	// the majority wins again and again and never backs off (issue 13).
	n.confirmed = false
	clear(n.acks)
	if n.acks == nil {
		n.acks = make(map[string]uint64)
	}
	declared := n.now
	if again {
		declared = n.declared
	}
	n.leaseEnd, n.hbSeq, n.rounds, n.declared = 0, 0, n.rounds[:0], declared
	n.setState(StateCandidate)
}

// nextTerm is the term this node would win with: one epoch past the highest
// it has seen, tagged with its own tag.
func (n *Node) nextTerm() Term { return MakeTerm(n.term.Epoch()+1, n.tag) }

// follow accepts coordinator c in term t (t >= n.term), ending any election.
func (n *Node) follow(c string, t Term, confirmed bool) {
	if c == n.self.ID {
		n.becomeCoordinator(t)
		return
	}
	wasElecting := n.electing
	n.alg.reset()
	n.electing = false
	n.suspect = ""
	if n.pv.kind == preVoteElection {
		n.endPreVote()
	}
	n.term = t
	switch {
	case !n.yielded || n.coolUntil != 0:
	case n.yieldTo == "":
		n.yieldTo = c
	case n.yieldTo != c:
		// The successor it handed the role to has been succeeded in turn:
		// the bully rule applies again.
		n.yielded = false
	}
	if n.coordinator != c {
		n.counters.LeaderChanges++
		n.preemptAfter = 0 // a preemption request waited for the previous one
	}
	n.coordinator = c
	n.confirmed = confirmed || n.cfg.QuorumSize == 0
	n.silence, n.misses, n.idle, n.lastSeq, n.grace = 0, 0, 0, 0, 0
	n.every = n.followerEvery(c) // until its first heartbeat says (fanout.go)
	if wasElecting {
		n.counters.ElectionsLost++
	}
	n.setState(StateLost)
}

// unfollow forgets the coordinator (it failed, resigned or is outdated).
func (n *Node) unfollow() {
	if n.coordinator != "" {
		n.counters.LeaderChanges++
	}
	n.coordinator = ""
	n.confirmed = false
	n.idle = 0
	if n.state == StateCoordinator {
		n.setState(StateLost)
	}
}

// heartbeat sends a heartbeat round to every member the coordinator should
// reach: the live view in View mode, every configured member in Textbook
// mode. Each round has a number, and the quorum lease runs from the send
// tick of the newest round a majority acknowledged.
func (n *Node) heartbeat() {
	n.hbSeq++
	n.rounds = append(trimRounds(n.rounds, n.now-n.cfg.LeaseTicks), round{seq: n.hbSeq, at: n.now})
	if n.fanningOut() {
		n.heartbeatFanOut() // fanout.go
	} else {
		n.fan.period, n.fan.promised = 1, 1 // everyone hears every round
		for i := 0; i < n.view.r.Len(); i++ {
			if p := n.view.r.At(i); p.ID != n.self.ID && n.view.alive(p.ID) {
				n.sendHeartbeat(p.ID, 0)
			}
		}
	}
	n.lag /= 2 // reported for a few rounds after the late tick
	if n.cfg.QuorumSize > 0 {
		n.renewLease()
	}
}

// round is one heartbeat round: its number and the tick it was sent at.
type round struct {
	seq uint64
	at  int
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
	n.send(Message{Type: MsgHeartbeat, To: id, Coordinator: n.self.ID, Confirmed: n.confirmed, Seq: n.hbSeq,
		Phase: uint32(min(n.lag, n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses)), Every: every})
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
	if m.Seq > n.lastSeq+1 && n.lastSeq > 0 && n.every == n.cfg.HeartbeatInterval {
		// Heartbeats the coordinator sent that never arrived (a member
		// that hears every round; the others hear one round in a period).
		n.counters.HeartbeatMisses += m.Seq - n.lastSeq - 1
	}
	n.lastSeq = max(n.lastSeq, m.Seq)
	n.every = n.cfg.HeartbeatInterval
	if m.Every != 0 {
		n.every = int(min(m.Every, maxEvery))
	}
	n.grace = min(int(m.Phase), n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses)
	n.silence, n.misses = 0, 0
	if n.relayed == m.From {
		n.relayed = "" // heard directly again
	}
	wasConfirmed := n.confirmed
	n.confirmed = m.Confirmed || n.cfg.QuorumSize == 0
	if wasConfirmed != n.confirmed {
		n.counters.LeaderChanges++
	}
	if n.cfg.QuorumSize > 0 {
		n.grant(m)
	}
	n.maybePreempt()
}

// grant acknowledges a heartbeat round (quorum guard). An acknowledgement
// is a promise: until LeaseTicks + LeaseMargin after its receipt, this node
// acknowledges no coordinator of another term, so no other coordinator can
// gather a majority before the lease it helps to hold has run out on the
// coordinator's clock (docs/design.md, "Leases"). Non-voters never count
// toward a majority and do not acknowledge.
func (n *Node) grant(m Message) {
	if n.self.NonVoter || n.now < n.grantEnd && n.grantTerm != m.Term {
		return
	}
	n.grantTerm, n.grantEnd = m.Term, n.now+n.cfg.LeaseTicks+n.cfg.LeaseMargin
	n.send(Message{Type: MsgHeartbeatAck, To: m.From, Seq: m.Seq})
}

// bound reports whether this node has promised its acknowledgement to a
// coordinator of another term than its own current one and the promise still holds.
func (n *Node) bound() bool { return n.now < n.grantEnd && n.grantTerm != n.term }

func (n *Node) onHeartbeatAck(m Message) {
	if n.coordinator != n.self.ID || m.Term != n.term || n.cfg.QuorumSize == 0 || m.Seq == 0 || m.Seq > n.hbSeq {
		n.drop(DropUnexpected)
		return
	}
	if p, ok := n.view.r.Get(m.From); !ok || p.NonVoter {
		n.drop(DropUnexpected) // a non-voter never counts toward a majority
		return
	}
	if m.Seq > n.acks[m.From] {
		n.acks[m.From] = m.Seq
		n.renewLease()
	}
}

// renewLease moves the lease end to the send tick of the newest round that
// a majority of QuorumSize (this node included) acknowledged, plus
// LeaseTicks, and confirms a pending coordinator at once. A coordinator
// still bound by its own promise to another term (bound) counts for
// nothing until that promise runs out.
func (n *Node) renewLease() {
	if n.bound() {
		return
	}
	if end := n.quorumLeaseEnd(); end > n.leaseEnd {
		n.leaseEnd = end
	}
	if !n.confirmed && n.now < n.leaseEnd {
		n.confirmed, n.confirmedAt = true, n.now
		n.setState(StateCoordinator)
		n.counters.LeaderChanges++
		n.heartbeat()
	}
}

// quorumLeaseEnd returns the tick at which the lease given by the acks so
// far lapses: the send tick of the newest round that need voters besides
// this one acknowledged, plus LeaseTicks; 0 when no round qualifies. It is
// a floor on the configured size, not on the live view.
func (n *Node) quorumLeaseEnd() int {
	need := n.cfg.QuorumSize / 2 // acks needed besides our own
	if len(n.rounds) == 0 {
		return 0
	}
	var seq uint64
	if need == 0 {
		seq = n.rounds[len(n.rounds)-1].seq
	} else {
		if len(n.acks) < need {
			return 0
		}
		seqs := n.scratch[:0]
		for _, s := range n.acks {
			seqs = append(seqs, s)
		}
		slices.SortFunc(seqs, func(a, b uint64) int { return cmp.Compare(b, a) })
		seq, n.scratch = seqs[need-1], seqs
	}
	for _, r := range n.rounds {
		if r.seq == seq {
			return r.at + n.cfg.LeaseTicks
		}
	}
	return 0 // a round too old to give a lease (and never a later one's send time)
}

// tickCoordinatorLease re-evaluates the lease at once (an ack can confirm a
// pending coordinator without waiting for the next tick).
func (n *Node) tickCoordinatorLease() { n.renewLease() }

// view is the node's membership knowledge: a shared roster (copied on the
// first change) and, in View mode, the set of members known dead.
type view struct {
	r    *Roster
	own  bool // r is this node's own copy
	mode Mode
	dead map[string]struct{}
}

func (v *view) alive(id string) bool {
	if v.mode != View || v.dead == nil {
		return true
	}
	_, d := v.dead[id]
	return !d
}

// down marks id dead; it reports whether anything changed.
func (v *view) down(id string) bool {
	if v.r.Index(id) < 0 || !v.alive(id) {
		return false
	}
	if v.dead == nil {
		v.dead = make(map[string]struct{})
	}
	v.dead[id] = struct{}{}
	return true
}

// up marks p alive, adding it to the roster if it is new. It reports
// false, changing nothing, for a new member whose tag another member has.
func (v *view) up(p Peer) bool {
	q, ok := v.r.Get(p.ID)
	if !ok && v.r.tagClash(p.ID) != "" {
		return false
	}
	delete(v.dead, p.ID)
	if !ok || q != p {
		v.update(p)
	}
	return true
}

func (v *view) update(p Peer) {
	if !v.own {
		v.r = v.r.clone() // the roster shared with other nodes stays as it was
		v.own = true
	}
	v.r.set(p)
}

// VerifyRound sends a heartbeat round now and returns its number, for a
// leader that wants a majority to confirm it before a side effect
// (hashicorp/raft's VerifyLeader). It returns 0 unless the quorum guard is
// on and this node is a confirmed coordinator.
func (n *Node) VerifyRound() uint64 {
	if n.cfg.QuorumSize == 0 || n.coordinator != n.self.ID || !n.confirmed {
		return 0
	}
	n.heartbeat()
	n.hbTimer = 0
	return n.hbSeq
}

// Verified reports whether, while this node still leads, voters that make
// a majority of QuorumSize with it have acknowledged round seq of the
// current term or a later one.
func (n *Node) Verified(seq uint64) bool {
	if seq == 0 || seq > n.hbSeq || n.coordinator != n.self.ID || !n.confirmed {
		return false
	}
	k := 0
	for _, s := range n.acks {
		if s >= seq {
			k++
		}
	}
	return k >= n.cfg.QuorumSize/2
}
