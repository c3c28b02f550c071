package core

// The active/relay ring's election (peterson.go): how a node starts or
// joins one, the actives' phases (petersonphase.go), the relays'
// forwarding, and a coordinator's hand-off. Invariant: a node takes part
// in one election at a time, that of p.term, and a message of a higher
// term makes it leave that one for the newer.

func newPeterson(n *Node) *peterson {
	p := &peterson{}
	p.lap = newLap(n, p, clockwise, p.local)
	return p
}

// start starts (or joins) the election that follows the highest term seen,
// unless this node takes part in one already: that one will name a leader.
//
// In View mode the election, which raises the term, waits for a pre-vote
// (prevote.go), as the ring's lap does; an election that reaches this
// node meanwhile is joined instead.
func (p *peterson) start() bool {
	n := p.n
	if n.electing {
		return false
	}
	p.handingOff = false
	if n.preVoteNeeded() {
		p.reset()
		p.link.begin()
		n.electing = true
		n.setState(StateCandidate)
		p.waiting, p.base = true, n.term
		p.preVote()
		return true
	}
	p.begin(electionTerm(n.term))
	return true
}

// preVoted: the pre-vote passed; start the election (unless one was joined).
// The answers carry their senders' terms: one that has joined the
// election this node wanted to start has raised its term to that
// election's, which must not make this node start the next one.
func (p *peterson) preVoted() {
	if !p.n.electing || !p.waiting {
		return
	}
	t := electionTerm(p.base)
	if p.n.term > t {
		t = electionTerm(p.n.term)
	}
	p.begin(t)
	p.vouch()
}

// begin starts the election of term t. A member backing off after it
// abdicated does not stand: it wakes the others as a resigning
// coordinator does. Nor does a member whose last election timed out
// without a single message of it reaching it (unheard): the members
// before it skip it (a cut, a lost hop), so the member after it has two
// predecessors, this one and the one that skipped it, and if this one
// stood its value would be taken for the skipper's and the maximum lost:
// every active ends a relay and nobody wins, election after election.
// As a relay it forwards whatever still reaches it.
func (p *peterson) begin(t Term) {
	if !p.n.mayRaiseTo(t) {
		p.abandon() // past MaxEpoch, or beyond the epoch allowance (term.go)
		return
	}
	if !p.n.guard.sitsOut(p.n.now) && !p.unheard {
		p.join(t, true)
		return
	}
	p.join(t, false)
	p.woken = true
	p.pass(Message{Type: MsgElection, Term: p.term, Phase: wakeUp, Initiator: p.n.self.ID})
}

// electionTerm is the term of the election started by a node whose highest
// term is t. Tag 0 names no winner (only a member whose ID is "0" has it).
func electionTerm(t Term) Term { return MakeTerm(t.Epoch()+1, 0) }

// join makes this node take part in the election of term t: active (it
// sends its d) if stand and it is a voter not handing off, else relay.
func (p *peterson) join(t Term, stand bool) {
	n := p.n
	if p.waiting {
		n.endPreVote() // an election reached us first; or ours passed
	}
	n.observeTerm(t) // an initiator leaves the coordinator of an older term
	p.reset()
	p.unheard = false
	p.link.begin()
	p.term = t
	n.electing = true
	p.timer = p.idleTicks()
	if !stand || n.self.NonVoter || p.handingOff || n.guard.sitsOut(n.now) {
		p.relay = true
		n.setState(StateRelay)
		return
	}
	n.setState(StateActive)
	p.d, p.phase = n.rank(), 1
	p.emit(p.d, false)
}

// emit sends this active's message of the current phase.
func (p *peterson) emit(v Rank, second bool) {
	p.pass(Message{Type: MsgElection, Term: p.term, Phase: packPhase(p.phase, second),
		Value: v, Initiator: p.n.self.ID})
}

// pass sends an election message clockwise; alone, it comes back to us.
func (p *peterson) pass(m Message) {
	p.last = max(p.last, m.Phase)
	to, ok := p.link.send(m, clockwise, p.n.view.r.Index(p.n.self.ID))
	if !ok {
		p.local(m)
		return
	}
	if to != "" {
		p.sentTo = to
	}
}

// local takes back a message that found no other working member: an
// active's own message (it is the only one left), or a relay's own
// wake-up call (nobody else stands: stand).
func (p *peterson) local(m Message) {
	if m.Type != MsgElection || m.Initiator != p.n.self.ID || !p.n.electing || m.Term != p.term {
		return
	}
	switch {
	case !p.relay:
		p.handle(m)
	case m.Phase == wakeUp:
		p.stand()
	}
}

// stand: the wake-up call this relay sent has come back to it, round the
// ring or for want of another working member, so no other voter stands in
// this election. A resigned coordinator's hand-off has found no successor:
// it leaves the election, and its idle timer starts the next one, in which
// it stands (as the ring's lap that lists no voter). Any other relay stands
// now if it may (a voter that does not sit out): otherwise the election
// would end with no active, and every election after it that this node
// starts as a relay alike.
func (p *peterson) stand() {
	n := p.n
	switch {
	case p.handingOff:
		p.abandon()
	case n.self.NonVoter || n.guard.sitsOut(n.now):
		n.drop(DropOrder)
	default:
		p.relay, p.d, p.phase, p.second = false, n.rank(), 1, false
		p.timer = p.idleTicks()
		n.setState(StateActive)
		p.emit(p.d, false)
	}
}

func (p *peterson) step(m Message) {
	p.lap.step(m)
	if p.link.forked != 0 {
		if p.n.electing && !p.waiting && p.link.forked == p.term {
			// A hop of this election that this node gave up on reached
			// its receiver after all (its Ack came late): the receiver
			// and the member after it both have the message, so the lap
			// runs twice from here and the actives after it compare
			// values that do not belong together. Such an election
			// rarely ends: give it one lap, not idleTicks.
			p.timer = min(p.timer, lapTicks(p.n))
		}
		p.link.forked = 0
	}
	if n := p.n; m.Type == MsgAck && m.Initiator == "" && n.electing && !p.waiting && p.term < n.term && n.coordinator == "" {
		// A member that does not take part told us its newer term
		// (onElection: an Ack that echoes no hop): the election of
		// p.term cannot pass it. Start the next one now rather than
		// after idleTicks. (A hop's Ack carries its sender's term too,
		// but that sender takes part in an election of its own,
		// which will reach this node.)
		n.count().ElectionsRestarted++
		p.restart()
	}
}

func (p *peterson) onElection(m Message) {
	n := p.n
	switch {
	case m.Term < n.term:
		n.drop(DropStaleTerm)
		switch {
		case !n.electing && n.coordinator == "" && !n.self.NonVoter:
			// Idle and leaderless in a newer term: pull the others up to
			// it rather than let their election die here.
			n.startElection(CauseChallenge)
		case !n.electing && (n.coordinator == "" || n.det.misses > 0):
			// A non-voter, or a follower that has stopped hearing its
			// coordinator, cannot pull anyone up: tell the sender the
			// newer term (an Ack carries it), so that its election, which
			// cannot pass this node, starts again above it. Voters that
			// all restarted (a redeploy) while non-voters kept a higher
			// term would stall here for ever. A follower
			// that hears its coordinator says nothing: the sender is a
			// straggler of an election that coordinator won, and the
			// announcement of it will reach the sender.
			n.send(Message{Type: MsgAck, To: m.From})
		}
	case !n.electing || p.term != m.Term:
		p.wake(m)
	default:
		p.handle(m)
	}
}

// wake: the first message of an election this node is not part of yet.
func (p *peterson) wake(m Message) {
	ph, second := unpackPhase(m.Phase)
	p.join(m.Term, m.Phase == wakeUp || ph == 1 && !second)
	p.handle(m)
}

// handle processes a message of this node's election.
func (p *peterson) handle(m Message) {
	p.heard = true
	if p.relay {
		p.forward(m)
		return
	}
	p.timer = p.idleTicks()
	if m.Phase == wakeUp {
		return // we are awake
	}
	switch want := packPhase(p.phase, p.second); {
	case m.Phase < want:
		p.n.drop(DropOrder) // a duplicate, or a message of a phase this node has ended
		return
	case m.Phase > want:
		// A message this phase needs never came before this later one:
		// it was lost, or a hop forked (link.late) and took another path.
		// With FIFO links it will not come, and the election cannot end:
		// restart it now (every node that does joins the same election,
		// electionTerm) rather than after idleTicks of silence.
		p.n.drop(DropOrder)
		p.n.count().ElectionsRestarted++
		p.restart()
		return
	}
	if p.second {
		p.onF(m.Value)
		return
	}
	p.onE(m.Value)
}

// forward is a relay's part: pass every message on, but not one that went
// round (no active is left to take it: it died, or a hand-off found no
// voter) nor a duplicate.
func (p *peterson) forward(m Message) {
	wake := m.Phase == wakeUp
	if wake && m.Initiator == p.n.self.ID {
		p.stand()
		return
	}
	if m.Initiator == p.n.self.ID || wake && p.woken || !wake && m.Phase <= p.last {
		p.n.drop(DropOrder)
		return
	}
	p.woken = p.woken || wake
	p.timer = p.idleTicks()
	p.pass(m)
}

// onE: the phase's first message, the d of the nearest active neighbour.
func (p *peterson) onE(e Rank) {
	if e == p.d {
		p.n.decide(PhaseDecision{Phase: p.phase, D: p.d, E: e, Outcome: "leader"})
		p.finish()
		return
	}
	p.e, p.second = e, true
	p.emit(e, true)
}

// onF: the phase's second message, the d of the second-nearest active.
//
// In View mode an f equal to this active's own d ends the election a
// phase early: the d of each active is a value no other active holds, so
// this one is its own second-nearest active, and it and the sender of e
// are the last two. The text would keep the greater of e and d active for
// one more phase, only to send it round the ring and find e == d; the
// active that would keep it (e > d: this one) takes it as the leader's
// value now, and the other becomes a relay, as the text has it.
func (p *peterson) onF(f Rank) {
	dec := PhaseDecision{Phase: p.phase, D: p.d, E: p.e, F: f, Outcome: "relay"}
	if p.n.cfg.Mode == View && f == p.d && p.e.Compare(p.d) > 0 {
		dec.Outcome = "leader"
		p.n.decide(dec)
		p.d = p.e
		p.finish()
		return
	}
	if p.e.Compare(p.d) > 0 && p.e.Compare(f) > 0 {
		dec.Outcome = "active"
		p.n.decide(dec)
		p.d, p.phase, p.second = p.e, p.phase+1, false
		p.emit(p.d, false)
		return
	}
	p.n.decide(dec)
	p.relay = true
	p.n.setState(StateRelay)
}

// resign hands off at once: the coordinator starts an election in a new
// term in which it is a relay, and wakes its successor with an empty
// first message; the wake-up spreads as usual, so the next voter by rating
// wins. It costs one message more than an election all start.
func (p *peterson) resign() {
	t := electionTerm(p.n.term)
	if !p.n.mayRaiseTo(t) {
		p.abandon() // past MaxEpoch, or beyond the epoch allowance (term.go)
		return
	}
	p.n.countStart(CauseHandoff)
	p.handingOff = true
	p.join(t, false)
	p.woken = true
	p.pass(Message{Type: MsgElection, Term: p.term, Phase: wakeUp, Initiator: p.n.self.ID})
}
