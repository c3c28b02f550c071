package core

// Tick advances the node's clock by one tick: heartbeats, the follower's
// failure detector, the quorum lease, the start-up window and the
// algorithm's own timeouts.
func (n *Node) Tick() {
	n.now++
	// The algorithm's timers first: an election that the detectors below
	// start in this tick gets its full timeout.
	n.alg.tick()
	switch {
	case n.state == StateSleep:
		if n.idle++; n.idle >= n.cfg.StartupTicks {
			n.idle = 0
			n.startElection()
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
	had := n.confirmed
	n.confirmed = n.now < n.leaseEnd
	switch {
	case had && !n.confirmed:
		// Lease lapsed: stop acting as coordinator, keep heartbeating so
		// that a returning majority confirms us again.
		n.setState(StateCandidate)
		n.counters.LeaderChanges++
	case !had && n.confirmed:
		n.setState(StateCoordinator)
		n.counters.LeaderChanges++
		n.heartbeat()
	}
}

func (n *Node) tickFollower() {
	if n.silence++; n.silence < n.cfg.HeartbeatInterval {
		return
	}
	n.silence = 0
	n.misses++
	n.counters.HeartbeatMisses++
	if n.misses >= n.cfg.HeartbeatMisses {
		n.coordinatorFailed()
	}
}

// coordinatorFailed: the seeds' "waited too long for a message from the
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
	n.yielded = false
	n.idle = 0
	if n.coordinator != "" && n.coordinator != n.self.ID {
		n.unfollow() // a candidate does not know the outcome yet
	}
	if n.alg.start() {
		n.counters.ElectionsStarted++
	}
}

// Resign hands the coordinator role on at once to the next node by rating
// (each algorithm decides how), without waiting for failure detection. The
// node does not displace its successor afterwards. A node that is not
// coordinator ignores it.
func (n *Node) Resign() {
	if n.coordinator != n.self.ID {
		return
	}
	n.yielded = true
	n.unfollow()
	n.setState(StateLost)
	n.alg.resign()
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
	if !n.learnRating(m.From, m.Rating) {
		n.drop(DropOrder) // the sender's tag is another member's
		return
	}
	if m.Term < n.term && !n.takesStale(m.Type) {
		n.drop(DropStaleTerm)
		return
	}
	n.observeTerm(m.Term)
	switch m.Type {
	case MsgHeartbeat:
		n.onHeartbeat(m)
	case MsgHeartbeatAck:
		n.onHeartbeatAck(m)
	default:
		n.alg.step(m)
	}
}

// takesStale says which messages of a lower term the algorithm sees: an
// ELECTION is a question, not a claim (bully answers it so that the sender
// learns the term), and a ring acknowledges every hop, stale or not, so
// that its sender does not skip a live successor.
func (n *Node) takesStale(t MsgType) bool {
	return t == MsgElection || n.cfg.Algorithm != Bully && (t == MsgCoordinator || t == MsgAck)
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
		n.unfollow()
		if n.state == StateCoordinator || n.state == StateCandidate && !n.electing {
			n.setState(StateLost)
		}
	}
}
