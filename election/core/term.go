package core

// Terms and coordinators: how a node starts an election (also when its
// coordinator failed), learns a newer term, follows a coordinator, becomes
// one and forgets one
// (docs/design.md, "Terms are fencing tokens").

// startElection stands, unless something holds this node back: it is a
// non-voter, its term could not be made (mayRaiseTo), it is a Textbook
// bully member backing off (backsOffTextbook), or with the guard its view
// lacks a majority (quorumShort). A held node loses its candidacy and
// tries again when its idle timer runs out; it follows a coordinator it
// hears meanwhile.
func (n *Node) startElection(cause ElectionCause) {
	if n.self.NonVoter {
		if n.state == StateSleep {
			n.setState(StateLost)
		}
		return
	}
	if !n.mayRaiseTo(n.nextTerm()) {
		n.refuseTerm() // the term space is used up, or the allowance is
		return
	}
	held := n.backsOffTextbook()
	if !held {
		n.hand.yielded = false
		if n.coordinator != "" && n.coordinator != n.self.ID {
			n.unfollow() // a candidate does not know the outcome yet
		}
		held = n.quorumShort() && n.coordinator != n.self.ID
	}
	n.idle = 0
	if held {
		if n.state == StateSleep || n.state == StateCandidate {
			n.setState(StateLost)
		}
		return
	}
	if n.enter().start() {
		n.countStart(cause)
	}
}

// backsOffTextbook reports a Textbook bully member that failed to lead
// lately: it does not stand (it would win at once, nobody above it
// answering; View mode has the pre-vote for this) until its back-off has
// run out.
func (n *Node) backsOffTextbook() bool {
	return n.cfg.Algorithm == Bully && n.cfg.Mode == Textbook && n.guard.backingOff(n.now) && n.coordinator != n.self.ID
}

// The epoch allowance bounds how fast a member's epoch rises, whatever
// the frames it receives: forged ones, or a buggy member's. The allowance
// holds at most MaxEpochStep epochs and gains EpochRate a tick; every
// raise of the epoch (setTerm) is charged to it, whether the member
// adopts a term a message carries or makes one for an election of its
// own, and no raise is made that it does not cover:
//
//   - a message whose term is further above the member's epoch than the
//     allowance reaches is dropped (DropBadTerm), and the member raises its
//     epoch by the whole allowance instead, to a term of no winner (tag 0):
//     a member far behind a cluster still catches up with it, at
//     EpochRate a tick (admits);
//   - an election starts only if its term is covered (startElection), and
//     every term an election or a hand-off makes (bully.win, the rings'
//     laps and their coordinators' terms) is made only if it is covered
//     and its epoch is at most MaxEpoch, else the election is given up
//     (mayRaiseTo).
//
// Invariant: in any D ticks a member's epoch rises by at most MaxEpochStep
// + EpochRate*D. Frames at line rate for 10 minutes, 60,000 ticks at the
// runtime's default 10-ms tick (600,000 at a 1-ms tick), raise it by at
// most 2^20 + 16 * 60,000 = 2,008,576 epochs (10,648,576), 0.09 % (0.5 %)
// of the 2^31 - 1 the term space holds; reaching MaxEpoch from 0 takes
// (2^31 - 1 - 2^20) / 16, about 134 million ticks of such frames, 15.5 days
// (1.55 days). Honest members raise the epoch by one or two per election,
// far below EpochRate, and a member that has just started, its allowance
// whole, follows a cluster up to 2^20 (1,048,576) epochs ahead at the
// first heartbeat; one further ahead (a cluster that has held that many
// elections, or been walked up by forged frames) after (gap - 2^20) /
// EpochRate ticks more.
//
// epochClock keeps the allowance in epochs of a clock that runs at
// EpochRate a tick: the allowance is MaxEpochStep - (epochClock -
// now*EpochRate) while epochClock is ahead of now*EpochRate, and whole
// otherwise; a raise of k epochs moves epochClock k ahead.

// epochRoom returns how many epochs this node may raise its term by now.
func (n *Node) epochRoom() int {
	return int(MaxEpochStep) - max(n.epochClock-n.now*EpochRate, 0)
}

// chargeEpochs charges a raise of k epochs to the allowance.
func (n *Node) chargeEpochs(k int) {
	n.epochClock = max(n.epochClock, n.now*EpochRate) + k
}

// mayRaiseTo reports whether this node may raise its term to t, a term of
// its own making: t's epoch is at most MaxEpoch and the allowance covers
// the raise.
func (n *Node) mayRaiseTo(t Term) bool {
	e, k := t.Epoch(), n.term.Epoch()
	return e <= MaxEpoch && (e <= k || int(e-k) <= n.epochRoom())
}

// admits reports whether the allowance covers raising the term to t, a
// term a message carries (its epoch at most MaxEpoch: Step drops the
// others first). When it does not, the node raises its epoch by what the
// allowance holds, to a term of no winner, and the message is dropped.
func (n *Node) admits(t Term) bool {
	e, k := t.Epoch(), n.term.Epoch()
	room := n.epochRoom()
	if e <= k || int(e-k) <= room {
		return true
	}
	if room > 0 {
		n.observeTerm(MakeTerm(k+uint32(room), 0))
	}
	return false
}

// refuseTerm gives up an election whose term this node may not make
// (mayRaiseTo): it takes no part in an election until its idle timer
// starts the next one, K heartbeat intervals without a coordinator. A
// coordinator (a Textbook bully member challenged to win anew) stays one.
func (n *Node) refuseTerm() {
	n.enter().reset()
	n.electing, n.idle = false, 0
	if n.coordinator != n.self.ID {
		n.setState(StateLost)
	}
}

// countStart counts an election this node started, and why.
func (n *Node) countStart(cause ElectionCause) {
	n.count().ElectionsStarted++
	n.out.rd.Cause = cause // count made rd the Ready being filled
}

// observeTerm raises the node's term. A newer term means a newer
// coordinator exists: a coordinator steps down, a follower forgets the one
// it followed until it learns the new one.
func (n *Node) observeTerm(t Term) {
	if t <= n.term {
		return
	}
	n.setTerm(t)
	if n.coordinator != "" {
		if n.coordinator == n.self.ID && n.cfg.Algorithm == Bully && n.cfg.Mode == Textbook && n.guard.neverConfirmed() {
			// Deposed before any majority confirmed it: a failed
			// leadership, as one that abdicates. In Textbook
			// mode (no pre-vote) a bully member
			// cut off from the majority that is deposed this way before its
			// abdication deadline would otherwise stand again at once, win
			// (nobody above it answers) and depose the majority's
			// coordinator in turn, over and over.
			n.guard.backOff(n.now)
		}
		n.unfollow()
		if n.state == StateCoordinator || n.state == StateCandidate && !n.electing {
			n.setState(StateLost)
		}
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
		// Coordinator: who leads this node's term, if it knows; a sender
		// that still leads learns it was deposed (Counters.Deposed).
		n.send(Message{Type: MsgHeartbeatAck, To: m.From, Coordinator: n.coordinator})
	}
}

// nextTerm is the term this node would win with: one epoch past the highest
// it has seen, tagged with its own tag. Its epoch is at most MaxEpoch + 1
// (the node's never passes MaxEpoch), which mayRaiseTo refuses.
func (n *Node) nextTerm() Term { return MakeTerm(n.term.Epoch()+1, n.tag) }

// becomeCoordinator makes this node coordinator in term t (t's tag is this
// node's). With the quorum guard on it stays a candidate until a majority
// acknowledges it.
func (n *Node) becomeCoordinator(t Term) {
	if t > n.term {
		n.setTerm(t)
	}
	again := n.coordinator == n.self.ID && !n.guard.confirmed // see below
	n.guard.announceRest = false                              // bully.win sets it again
	wasElecting := n.electing
	n.endElection()
	n.electing = false
	n.det.suspect = ""
	n.setCoordinator(n.self.ID)
	n.det.hbTimer = 0
	n.idle = 0
	if n.det.fan == nil {
		n.det.fan = new(fanOut)
	}
	n.det.fan.reset()
	if wasElecting {
		n.count().ElectionsWon++
	}
	if !n.guard.on() {
		n.setConfirmed(true)
		n.setState(StateCoordinator)
		return
	}
	// A coordinator that wins again while no majority has confirmed it
	// (Textbook bully: a lower member's ELECTION makes it elect itself
	// anew) keeps the tick it first declared at, so that it still abdicates
	// abdicateWait after that (tickCoordinator): otherwise each such
	// ELECTION restarts that wait, and a top member cut off from the
	// majority wins again and again and never backs off. One
	// whose lease lapsed keeps the abdication that the lapse set, a
	// heartbeat interval after it: a new declaration would give it
	// abdicateWait more, during which the member that still reaches it
	// follows it and answers the connected majority's ELECTIONs for it.
	n.setConfirmed(false)
	n.guard.newLeadership(n.now, t, again)
	n.det.hbSeq = 0 // the rounds of t start again at 1 (guard.newLeadership)
	n.setState(StateCandidate)
}

// endElection ends this node's part in any election, and any hand-off of
// its own (lap.followed): a coordinator is known (follow,
// becomeCoordinator).
func (n *Node) endElection() {
	n.enter().reset()
	if l, ok := n.alg.(interface{ followed() }); ok {
		l.followed()
	}
}

// follow accepts coordinator c in term t (t >= n.term), ending any election.
func (n *Node) follow(c string, t Term, confirmed bool) {
	if c == n.self.ID {
		n.becomeCoordinator(t)
		return
	}
	wasElecting := n.electing
	n.endElection()
	n.electing = false
	n.det.suspect = ""
	if n.pv.kind == preVoteElection {
		n.pv.interrupted = n.pv.active
		n.endPreVote()
	}
	n.setTerm(t)
	switch {
	case !n.hand.yielded || n.guard.coolUntil != 0:
	case n.hand.yieldTo() == "":
		n.hand.setYieldTo(c)
	case n.hand.yieldTo() != c:
		// The successor it handed the role to has been succeeded in turn:
		// the bully rule applies again.
		n.hand.yielded = false
	}
	if n.coordinator != c {
		n.hand.setPreemptAfter(0) // a preemption request waited for the previous one
		n.pv.pslow = 0            // and its checks were slow for the previous one
	}
	n.setCoordinator(c)
	n.setConfirmed(n.guard.counts(confirmed))
	n.det.silence, n.det.misses, n.idle, n.det.lastSeq, n.det.grace = 0, 0, 0, 0, 0
	n.det.every = n.followerEvery(c) // until its first heartbeat says (fanout.go)
	if wasElecting {
		n.count().ElectionsLost++
	}
	n.setState(StateLost)
}

// unfollow forgets the coordinator (it failed, resigned or is outdated).
func (n *Node) unfollow() {
	n.setCoordinator("")
	n.setConfirmed(false)
	n.idle = 0
	if n.state == StateCoordinator {
		n.setState(StateLost)
	}
}

// coordinatorFailed: the source texts' "waited too long for a message from the
// coordinator", or the view reports it dead.
func (n *Node) coordinatorFailed(cause ElectionCause) {
	n.det.suspect = n.coordinator
	n.unfollow()
	n.startElection(cause)
}

func (n *Node) setTerm(t Term) {
	if t != n.term {
		if e, k := t.Epoch(), n.term.Epoch(); e > k {
			n.chargeEpochs(int(e - k))
		}
		n.term, n.out.statusDirty, n.algQuiet = t, true, false
	}
}

func (n *Node) endPreVote() { n.pv.active = false }
