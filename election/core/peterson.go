package core

// peterson is the active/relay ring (docs/algorithms.md, "Active/relay
// ring"; Dolev–Klawe–Rodeh 1982, Peterson 1982): O(n log n) messages on a
// unidirectional ring with FIFO links.
//
// Every voter starts active with d = its own rank. In each phase an active
// sends d clockwise (the phase's first message), receives e, the d of its
// nearest active counter-clockwise neighbour, and:
//   - if e == d it is the only active left and d is the leader's rank: it
//     announces the leader (the member whose rank d is, not necessarily
//     itself) to every member (tell);
//   - else it sends e on (the phase's second message) and receives f, the
//     d of its second-nearest active neighbour; if e > max(d, f) it takes
//     d := e into the next phase, else it becomes a relay. In View mode
//     an active whose f is its own d is one of the last two: the one whose
//     e is the greater announces e at once (onF), a lap before the text
//     would.
//
// Relays forward every election message unchanged. Of two neighbouring
// actives at least one becomes a relay, so at most ⌊a/2⌋ of a actives
// survive a phase: at most ⌊log₂ n⌋ + 1 phases, 2n election messages in
// each phase with two actives or more and n in the last.
//
// On the wire an election message carries the election's term, the phase
// and which of its two messages it is (packed in Phase, see packPhase), the
// value (Value) and the active that sent it (Initiator; relays keep it).
// The COORDINATOR carries the number of phases the election took (Phases).
//
// Terms. An election runs in term electionTerm(t): one epoch past the
// highest term t its initiator has seen, with tag 0. Every node that has
// seen t and starts an election therefore starts the same one (all may
// start at once), the election's messages make the nodes they reach leave
// the coordinator of t, whose heartbeats are stale to them from then on,
// and the leader's term (one epoch further, the leader's tag) beats them.
//
// Joining. A node that receives a message of an election it does not take
// part in yet wakes up: if it is the first message of phase 1 it becomes
// active and sends its own d before treating the message as its e (so a
// single initiator costs exactly what all starting at once costs: every
// voter ends up active in phase 1). Any later message finds it too late to
// compete: it becomes a relay. Non-voters are relays from the start and
// never initiate.
//
// Faults. A message of a higher term makes a node leave its election and
// join the newer one; messages of an older election are dropped. An active
// that receives a later message than the one its phase waits for has lost
// that one for good (FIFO links) and restarts the election. A node that
// hears nothing of its election for idleTicks (a crashed member held a
// message, a message was lost) restarts it in a new term, which pulls every
// other node in. Dead members are skipped by the link (view, or Ack and
// skip in Textbook mode). In View mode a node whose successor dies restarts
// at once (a message may have died with it), and a leader the view holds
// dead is not announced.
type peterson struct {
	lap       // its timer counts ticks without traffic of the election (idleTicks)
	term Term // the election this node takes part in (while n.electing)
	// Active state: relay, d, the e received in this phase, the phase, and
	// whether the phase's first message (e) has been received (second).
	d, e  Rank
	phase uint32
	// last is the highest packed phase this node has sent in the election:
	// with FIFO links the (phase, which) of the messages through a node
	// only grow, so a relay drops anything not above it (a message that
	// went round because no active is left to take it, or a duplicate).
	last uint32
	// phases is the number of phases of the last election this node saw
	// end, as announced (Node.Phases).
	phases int
	// The flags last, next to each other (a peterson is in every node of
	// the active/relay ring).
	relay  bool
	second bool
	woken  bool // a relay has passed a hand-off's wake-up call on
	// heard: a message of the election reached this node. unheard: the
	// last election timed out with none reaching it (its predecessors
	// skip it), so the next one it starts it starts as a relay.
	heard, unheard bool
}

// Phases returns the number of active/relay phases of the last election
// this node saw end, as announced by the node that found itself the only
// active one (docs/algorithms.md, active/relay ring: at most ⌊log₂ n⌋ + 1). It is 0 before the
// first such election and for the other algorithms. The simulator and the
// demo report it.
func (n *Node) Phases() int {
	if p, ok := n.alg.(*peterson); ok {
		return p.phases
	}
	return 0
}

func (p *peterson) reset() {
	p.relay, p.d, p.e, p.phase, p.second, p.last, p.woken = false, Rank{}, Rank{}, 0, false, 0, false
	p.heard = false
	p.timer, p.sentTo, p.waiting, p.held = 0, "", false, 0
}

// idleTicks bounds the silence within an election: the longest a node waits
// between two of its messages is about two laps (the last phase's message,
// then the announcement); three laps leave room.
func (p *peterson) idleTicks() int { return 3 * lapTicks(p.n) }

// finish: this is the only active left and d is the leader's rank.
func (p *peterson) finish() {
	n := p.n
	leader := p.d.ID
	t := MakeTerm(n.term.Epoch()+1, Tag(leader))
	if !n.mayRaiseTo(t) {
		p.abandon() // past MaxEpoch, or beyond the epoch allowance (term.go)
		return
	}
	m := Message{Type: MsgCoordinator, Term: t, Coordinator: leader, Value: p.d,
		Phases: p.phase, Initiator: n.self.ID}
	at := n.view.r.Index(n.self.ID)
	hops := 0 // View mode tells the leader directly (tell): no lap to wait for
	if n.cfg.Mode != View {
		hops = lapHops(at, at, n.view.r.Index(leader), n.view.r.Len())
	}
	if !n.view.alive(leader) {
		p.doubt(m, at, hops)
		return
	}
	// record resets the election state: m is built first.
	p.record(leader, t, p.phase, hops)
	p.tell(m, at)
}

// record accepts c as coordinator in term t after an election of the given
// number of phases; the COORDINATOR lap reaches c hops after this node.
func (p *peterson) record(c string, t Term, phases uint32, hops int) {
	p.phases = int(phases)
	p.lap.record(c, t, hops)
}

func (p *peterson) onCoordinator(m Message) {
	n := p.n
	switch {
	case m.Coordinator == "" || m.Term.Tag() != Tag(m.Coordinator):
		n.drop(DropOrder)
		return
	case m.Initiator == n.self.ID:
		return // the lap is back where it started: it is removed
	case p.coord.Term == m.Term:
		n.drop(DropUnexpected) // a duplicate, or a lap whose end died
		return
	}
	r := n.view.r
	at := r.Index(n.self.ID)
	hops := 0 // View mode tells the coordinator directly (tell): no lap to wait for
	if n.cfg.Mode != View {
		hops = lapHops(r.Index(m.Initiator), at, r.Index(m.Coordinator), r.Len())
	}
	if !n.view.alive(m.Coordinator) {
		p.doubt(m, at, hops)
		return
	}
	if m.Value.ID == m.Coordinator {
		// d was its rank; a view that never heard from it may not know it.
		n.learnRating(m.Coordinator, m.Value.Rating)
	}
	p.record(m.Coordinator, m.Term, m.Phases, hops)
	p.passOn(m, at)
	n.maybePreempt()
}

// doubt passes on a COORDINATOR naming a member the view holds dead
// without following it (see doubtTicks); the election goes on until the
// named member's heartbeat arrives or the shortened timer restarts it.
func (p *peterson) doubt(m Message, at, hops int) {
	if p.n.electing {
		p.timer = min(p.timer, doubtTicks(p.n, hops))
	}
	if m.Initiator == p.n.self.ID {
		p.tell(m, at)
		return
	}
	p.passOn(m, at)
}

func (p *peterson) tick() {
	if !p.tickTimers() {
		return
	}
	if p.n.self.NonVoter {
		p.abandon()
		return
	}
	p.n.count().ElectionsRestarted++
	p.unheard = !p.heard
	p.restart()
}
