package core

// What moves a bully election on: the messages a member receives (step:
// ELECTION, ANSWER, COORDINATOR, RESIGN), the pre-votes it grants and
// those that pass (grantedElection, preVoted), a member's death (peerDown)
// and its timers (tick, timeout, deadline, skip). What a candidate does
// then (ask, wait for a senior, escalate, declare, win) is in bully.go.
// Invariant: every wait is a phase with a timer, which runs, and which
// deadline reports, only while the node takes part in an election and the
// phase is not bullyIdle; a member that does not stand answers no
// ELECTION.

func (b *bully) step(m Message) {
	switch m.Type {
	case MsgElection:
		b.onElection(m)
	case MsgAnswer:
		b.onAnswer(m)
	case MsgCoordinator:
		b.onCoordinator(m)
	case MsgResign:
		b.onResign(m)
	default:
		b.n.drop(DropUnexpected)
	}
}

// onElection: §1 step 4, a site that receives ELECTION from a lower-rated
// site answers and starts its own election unless it is running one.
func (b *bully) onElection(m Message) {
	n := b.n
	// Step has learnt the sender's rating (learnRating): the view holds
	// it as the message gives it, so its rank needs no look-up.
	from := Rank{m.Rating, m.From}
	switch {
	case n.self.NonVoter || n.hand.yielded && n.coordinator == "" || n.guard.backingOff(n.now) || n.cutOff():
		// Not standing: a resign hand-off is under way, or this node
		// failed to hold a majority lease lately (abdicate), or its own
		// pre-votes found no majority to answer them (cutOff). Answering
		// would make the asker wait for an announcement from a node
		// that, cut off from the majority, cannot win or wins only to
		// abdicate again; silent, it is passed over as a crashed one
		// is.
		n.drop(DropUnexpected)
		return
	case from.Compare(n.rank()) > 0:
		n.drop(DropOrder)
		return
	}
	stale := m.Term < n.term
	if n.cfg.Mode == Textbook {
		n.send(Message{Type: MsgAnswer, To: m.From})
		switch {
		case n.coordinator == n.self.ID && n.guard.on():
			// The coordinator's own election would name it again at
			// once; with the guard it announces itself to the sender in
			// the term it holds instead of a new one, which would throw
			// away its lease (its followers acknowledge no other term
			// until their promises run out) and, when it is cut off
			// from the majority, restart its wait to abdicate.
			n.send(Message{Type: MsgCoordinator, To: m.From, Coordinator: n.self.ID})
		case n.guard.on() && b.vouches(m.From):
			// It follows a coordinator that holds a majority lease and
			// outranks the sender: its own election would end only in
			// that coordinator's announcement, and meanwhile it and every
			// member above it would stop following: a member cut off
			// from that coordinator would disturb the majority every T'.
			// Its detector starts an election when it stops hearing the
			// coordinator.
		case !stale && !n.electing:
			n.startElection(CauseChallenge)
		}
		return
	}
	b.onElectionView(m, stale)
}

func (b *bully) onElectionView(m Message, stale bool) {
	n := b.n
	switch {
	case stale && n.coordinator != "" && n.coordinator != n.self.ID:
		// Tell the sender who leads in the newer term instead of electing.
		n.send(Message{Type: MsgCoordinator, To: m.From, Coordinator: n.coordinator})
	case n.coordinator == n.self.ID:
		// The sender missed us, or asks before our announcement reached it
		// (it waited for a senior until its patience ran out; on a loaded
		// host the announcement to n - 1 peers can take that long):
		// announce again to it alone. Silence would make it ask every node
		// above it after T.
		n.send(Message{Type: MsgCoordinator, To: m.From, Coordinator: n.self.ID})
	case b.vouches(m.From):
		// We hear the coordinator (at most one interval in silence, which
		// heartbeat jitter alone causes): the sender's detector fired alone
		// (a starved process, a lossy link). Tell it who leads rather than
		// start an election of our own. When the coordinator is really gone,
		// every follower has missed nearly K intervals by then.
		n.send(Message{Type: MsgCoordinator, To: m.From, Coordinator: n.coordinator})
	case n.electing:
		n.send(Message{Type: MsgAnswer, To: m.From})
	default:
		top := ""
		b.higher(func(p Peer) bool { top = p.ID; return false })
		if top != "" {
			// Our own COORDINATOR would answer at once when there is no one
			// above us; otherwise say we take over.
			n.send(Message{Type: MsgAnswer, To: m.From})
		}
		n.startElection(CauseChallenge)
	}
}

// vouches reports whether this node should answer an ELECTION from sender
// by naming its coordinator: it hears the coordinator (at most one interval
// in silence, which heartbeat jitter alone causes), and the coordinator
// outranks the sender, so the sender's election cannot be a displacement.
func (b *bully) vouches(sender string) bool {
	n := b.n
	if n.coordinator == "" || n.det.misses >= n.cfg.HeartbeatMisses-1 || !n.view.alive(n.coordinator) ||
		!n.guard.holds() {
		// With the guard, a coordinator without its majority lease is
		// not worth defending: the connected majority must elect.
		return false
	}
	c, ok1 := n.view.r.Get(n.coordinator)
	s, ok2 := n.view.r.Get(sender)
	return ok1 && ok2 && c.Rank().Compare(s.Rank()) > 0
}

func (b *bully) onAnswer(m Message) {
	n := b.n
	if !n.electing || b.phase != bullyWaitAnswer && b.phase != bullyWaitCoord {
		n.drop(DropUnexpected)
		return
	}
	if b.phase == bullyWaitAnswer {
		b.phase, b.timer = bullyWaitCoord, n.cfg.CoordinatorTimeout
	}
}

// onCoordinator: §1 step 3, record the announced coordinator. A relayed
// announcement names a coordinator other than its sender.
func (b *bully) onCoordinator(m Message) {
	n := b.n
	c := m.Coordinator
	if c == "" {
		c = m.From
	}
	if m.Term.Tag() != Tag(c) {
		n.drop(DropOrder)
		return
	}
	if c == n.self.ID {
		n.drop(DropUnexpected) // an echo of our own older announcement
		return
	}
	// Confirmed: the coordinator itself says that its lease holds
	// (announceConfirmed); an answer naming a coordinator never is.
	confirmed := m.Confirmed && c == m.From
	if n.coordinator != c || n.term != m.Term {
		n.follow(c, m.Term, confirmed)
	} else {
		n.det.silence, n.det.misses = 0, 0
		if confirmed {
			n.setConfirmed(true)
		}
	}
	if confirmed {
		n.det.lastSeq = max(n.det.lastSeq, m.Seq) // the rounds before it are older news
	}
	switch {
	case c != m.From:
		n.det.relayed = c
	case n.det.relayed == c:
		n.det.relayed = "" // heard directly again
	}
	n.maybePreempt()
}

// onResign: the coordinator of our term hands off to us (its release may
// have arrived first); elect without it at once, or, on a transfer
// (Confirmed), declare at once.
func (b *bully) onResign(m Message) {
	n := b.n
	if m.Term != n.term || m.Term.Tag() != Tag(m.From) || n.coordinator != m.From && n.coordinator != "" {
		n.drop(DropUnexpected)
		return
	}
	n.unfollow()
	b.excluded, b.hint, b.direct = m.From, m.From, m.Transfer
	n.startElection(CauseHandoff)
}

// grantedElection: this node granted from's pre-vote for an election
// (Node.onPreVote). From a member ranked above it, that is the senior
// saying it is alive and taking over, which is what an ANSWER says.
func (b *bully) grantedElection(from string) {
	n := b.n
	if p, ok := n.view.r.Get(from); ok && p.Rank().Compare(n.rank()) > 0 {
		b.senior, b.seniorAt = from, n.now
	}
}

func (b *bully) preVoted() {
	n := b.n
	switch {
	case !n.electing:
	case b.phase == bullyPreVote:
		b.win()
	case b.phase == bullyWaitAnswer && b.stage == 1 && (b.asked == n.det.suspect || b.pair) && n.det.suspect != "" && n.det.health == 0:
		// Corroborated while the suspect (and, after askPair, the senior
		// waited out) stayed silent. A node whose own loop ran late
		// lately waits T as the text says: the silence may be its own.
		b.win()
	}
}

func (b *bully) peerDown(id string) {
	if !b.n.electing || id != b.asked {
		return
	}
	switch {
	case b.phase == bullyWaitAnswer && b.stage == 1:
		b.timeout()
	case b.phase == bullyAwaitSenior:
		// The awaited senior is gone: await the next one, or ask.
		b.clear()
		if !b.awaitSenior() {
			b.ask()
		}
	case b.phase == bullyWaitCoord && b.late:
		// The late senior is gone too: no announcement will come;
		// restart as when T' runs out, now.
		b.timeout()
	}
}

func (b *bully) tick() {
	if !b.n.electing || b.phase == bullyIdle {
		return
	}
	if b.timer--; b.timer > 0 {
		return
	}
	b.timeout()
}

func (b *bully) timeout() {
	n := b.n
	switch b.phase {
	case bullyWaitAnswer:
		if !b.pair && (b.stage == 1 || b.stage == 2 && b.more) && b.escalate() {
			return
		}
		b.declare()
	case bullyWaitCoord:
		// §1 step 2: answered but no COORDINATOR within T'.
		n.count().ElectionsRestarted++
		n.startElection(CauseRestart)
	case bullyAwaitSenior:
		senior := b.asked
		if b.seniorTakingOver(senior) {
			// No announcement yet, but the senior asked this node for
			// its pre-vote: it is alive and taking over, late (its own
			// process stalled, or its announcement to n - 1 peers is
			// under way). Wait T' for its COORDINATOR as after an ANSWER
			// (§1 step 2) rather than take the pair's short cut, which
			// wins against it and doubles the announcements (2n
			// messages instead of n). Silent after T', it asks.
			b.phase, b.timer, b.late = bullyWaitCoord, n.cfg.CoordinatorTimeout, true
			return
		}
		// No announcement from the senior: ask, in the same election.
		b.clear()
		if !b.askPair(senior) {
			b.ask()
		}
	}
}

func (b *bully) deadline() int {
	if !b.n.electing || b.phase == bullyIdle {
		return farTicks
	}
	return max(b.timer, 1)
}

func (b *bully) skip(k int) {
	if b.n.electing && b.phase != bullyIdle {
		b.timer -= k
	}
}
