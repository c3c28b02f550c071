package core

// becomeCoordinator makes this node coordinator in term t (t's tag is this
// node's). With the quorum guard on it stays a candidate until a majority
// acknowledges it.
func (n *Node) becomeCoordinator(t Term) {
	if t > n.term {
		n.term = t
	}
	wasElecting := n.electing
	n.alg.reset()
	n.electing = false
	n.suspect = ""
	n.coordinator = n.self.ID
	n.hbTimer = 0
	n.idle = 0
	if wasElecting {
		n.counters.ElectionsWon++
	}
	if n.cfg.QuorumSize == 0 {
		n.confirmed = true
		n.setState(StateCoordinator)
		n.counters.LeaderChanges++
		return
	}
	n.confirmed = false
	n.acks = make(map[string]int)
	n.leaseEnd = 0
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
	n.term = t
	if n.coordinator != c {
		n.counters.LeaderChanges++
	}
	n.coordinator = c
	n.confirmed = confirmed || n.cfg.QuorumSize == 0
	n.silence, n.misses, n.idle = 0, 0, 0
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

// heartbeat sends a heartbeat to every member the coordinator should reach:
// the live view in View mode, every configured member in Textbook mode.
func (n *Node) heartbeat() {
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); p.ID != n.self.ID && n.view.alive(p.ID) {
			n.heartbeatTo(p.ID)
		}
	}
}

func (n *Node) heartbeatTo(id string) {
	n.send(Message{Type: MsgHeartbeat, To: id, Coordinator: n.self.ID, Confirmed: n.confirmed})
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
	if n.coordinator != m.From || n.term != m.Term {
		n.follow(m.From, m.Term, m.Confirmed)
	}
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
		n.send(Message{Type: MsgHeartbeatAck, To: m.From})
	}
	n.maybePreempt()
}

func (n *Node) onHeartbeatAck(m Message) {
	if n.coordinator != n.self.ID || m.Term != n.term || n.cfg.QuorumSize == 0 {
		n.drop(DropUnexpected)
		return
	}
	n.acks[m.From] = n.now
	if end := n.quorumLeaseEnd(); end > n.leaseEnd {
		n.leaseEnd = end
		n.tickCoordinatorLease()
	}
}

// quorumLeaseEnd returns the tick until which a majority of QuorumSize
// (this node included) has acknowledged it: the majority-th newest ack plus
// the lease. It is a floor on the configured size, not on the live view.
func (n *Node) quorumLeaseEnd() int {
	need := n.cfg.QuorumSize/2 + 1 - 1 // acks needed besides our own
	if need <= 0 {
		return n.now + n.cfg.LeaseTicks
	}
	if len(n.acks) < need {
		return 0
	}
	times := make([]int, 0, len(n.acks))
	for _, t := range n.acks {
		times = append(times, t)
	}
	// the need-th most recent ack bounds the lease
	for i := 0; i < need; i++ {
		for j := i + 1; j < len(times); j++ {
			if times[j] > times[i] {
				times[i], times[j] = times[j], times[i]
			}
		}
	}
	return times[need-1] + n.cfg.LeaseTicks
}

// tickCoordinatorLease re-evaluates the lease at once (an ack can confirm a
// pending coordinator without waiting for the next tick).
func (n *Node) tickCoordinatorLease() {
	if !n.confirmed && n.now < n.leaseEnd {
		n.confirmed = true
		n.setState(StateCoordinator)
		n.counters.LeaderChanges++
		n.heartbeat()
	}
}

// maybePreempt starts an election when this voter outranks the coordinator
// by the preemption policy (the bully rule, ALGORITHMS.md §1 step 5).
func (n *Node) maybePreempt() {
	if n.self.NonVoter || n.yielded || n.electing || n.coordinator == "" || n.coordinator == n.self.ID {
		return
	}
	c, ok := n.view.r.Get(n.coordinator)
	if !ok || !n.outranks(c) {
		return
	}
	n.startElection()
}

func (n *Node) outranks(c Peer) bool {
	switch n.cfg.Preemption {
	case PreemptNever:
		return false
	case PreemptMargin:
		return n.self.Rating > c.Rating+n.cfg.PreemptMargin
	}
	return n.rank().Compare(c.Rank()) > 0
}

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
	v.r = v.r.with(p)
	v.own = true
}
