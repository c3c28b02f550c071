package core

// ring is the ring with a list of working members (docs/algorithms.md,
// "Ring with a list of live members"; LeLann, Chang–Roberts).
//
// An initiator sends ELECTION clockwise with the list [itself]; every
// working member appends itself (rating and NonVoter flag included) and
// passes it on, the link skipping members that do not work. The member that
// finds itself in the list (normally the initiator, or the one after it if
// the initiator died mid-lap) turns it into COORDINATOR naming the
// highest-ranked voter of the list, and sends it once more round the
// working members of the list; it is removed when it comes back. In View
// mode that member tells every other live member of its view directly
// instead (lap.tell): as many messages as the lap, one hop of latency
// instead of a lap's.
//
// Terms. An initiator opens a lap in a term of its own, one epoch past the
// highest it has seen (n.nextTerm), and the lap keeps that term. Every
// member that forwards it therefore holds that term, and a lap of a lower
// term than a member has seen is swallowed there (it is stale, or it
// competes with a lap of higher priority: Chang–Roberts with the term as
// priority). Of concurrent laps only the one with the highest term goes
// round; with IDs rising clockwise, as in the simulator, every other lap
// dies at the next initiator, so n initiators cost about 2n ELECTION hops.
// The coordinator's term is one epoch past the lap's term with the
// coordinator's tag, so it beats every term a listed member has seen. Should
// two laps complete anyway, the later COORDINATOR has the higher term, and
// every node keeps the highest: they end agreeing.
//
// A lap that does not return is caught by a timeout that grows with the
// ring (lapTicks); the member then opens a new lap in a new term.
//
// On the wire, an ELECTION carries the lap's term, its initiator and epoch
// (Initiator and Lap: the lap's identity) and the list; a COORDINATOR
// carries the coordinator's term, name and rank (Coordinator, Value) and
// the node that turned the lap (Initiator: where it ends); in Textbook
// mode also the list and, in Index, the receiver's place in it, while in
// View mode it has neither and its receiver passes it on to nobody. Both
// are acknowledged as the link says (ringlink.go).
type ring struct {
	lap // its timer is the lap's timeout (lapTicks)
	// own is the epoch of the lap this node opened (0: none), its ID on
	// the wire being (self, own) in Initiator and Lap.
	own uint32
	// seen lists the laps forwarded in this election, to tell a lap that
	// has gone round (this node is in its list) from a duplicate.
	seen []lapID
}

type lapID struct {
	initiator string
	epoch     uint32
}

// reset ends this node's part in the election (the link keeps delivering
// what it has queued, and remembers failed members until the next election).
func (r *ring) reset() {
	r.timer, r.own, r.seen, r.sentTo, r.waiting, r.held = 0, 0, r.seen[:0], "", false, 0
}

// start opens a lap, unless this node already takes part in an election:
// that one will name a coordinator (and a node that detects a failure
// after the lap passed it does not start a competing one). In View mode
// the lap, which raises the term, waits for a pre-vote (prevote.go): a
// member cut off from the others, or one whose detector fired alone, does
// not raise the term; with the quorum guard, a member that cannot reach a
// majority free of its promises does not either. A lap that reaches this
// node meanwhile is joined instead.
func (r *ring) start() bool {
	if r.n.electing {
		return false
	}
	r.handingOff = false
	if r.n.preVoteNeeded() {
		r.join()
		r.waiting, r.base = true, r.n.term
		r.preVote()
		return true
	}
	r.open(r.n.nextTerm())
	return true
}

// preVoted: the pre-vote passed; open the lap (unless one was joined).
// The answers carry their senders' terms: one that has joined a lap of the
// same round has raised its term to that lap's, and the lap will reach
// this node; opening one of the next round would only overtake it. So a
// node whose term has reached base's next epoch waits for that lap (its
// timer restarts the election if none comes).
func (r *ring) preVoted() {
	n := r.n
	if !n.electing || !r.waiting {
		return
	}
	r.vouch()
	t := MakeTerm(r.base.Epoch()+1, n.tag)
	switch {
	case t > n.term:
		r.open(t)
	case n.term.Epoch() == t.Epoch():
		r.waiting = false
	default:
		r.open(n.nextTerm())
	}
}

// open starts a lap in term t, a new term, if this node may make it
// (Node.mayRaiseTo); else it gives the election up.
func (r *ring) open(t Term) {
	n := r.n
	if !n.mayRaiseTo(t) {
		r.abandon()
		return
	}
	n.observeTerm(t)
	r.reset()
	r.join()
	r.own = t.Epoch()
	r.seen = append(r.seen, lapID{n.self.ID, r.own})
	m := Message{Type: MsgElection, Term: t, Initiator: n.self.ID, Lap: r.own, List: []Peer{r.entry()}}
	r.forward(m)
}

// join marks this node as taking part in an election (a lap it forwards
// replaces the one its pre-vote waited to open).
func (r *ring) join() {
	if !r.n.electing {
		r.link.begin()
	}
	if r.waiting {
		r.waiting, r.held = false, 0
		r.n.endPreVote()
	}
	r.n.electing = true
	r.n.setState(StateCandidate)
	r.timer = lapTicks(r.n)
}

// entry is this node as it goes into a list. A non-voter, and a coordinator
// handing off (resigned, no successor known yet), do not stand.
func (r *ring) entry() Peer {
	p := r.n.self
	p.NonVoter = p.NonVoter || r.handingOff || r.n.guard.sitsOut(r.n.now)
	return p
}

// forward passes an ELECTION to the next working member; with none left,
// the lap has come round to this node.
func (r *ring) forward(m Message) {
	to, ok := r.link.send(m, clockwise, r.n.view.r.Index(r.n.self.ID))
	if !ok {
		r.complete(m)
		return
	}
	r.sentTo = to
}

func (r *ring) onElection(m Message) {
	n := r.n
	// A lap of the term of the coordinator this node knows was overtaken by
	// that coordinator (a lap and a COORDINATOR share a term when the
	// initiator is the one named: both are one epoch up, with its tag).
	if m.Term < n.term || m.Term == n.term && n.coordinator != "" {
		if n.electing || n.coordinator != "" {
			// Stale, or beaten by a lap of a higher term that went by.
			n.drop(DropStaleTerm)
			return
		}
		// Idle without a coordinator: carry the lap on in our newer term
		// rather than let it die here.
		m.Term = n.term
	}
	id := lapID{m.Initiator, m.Lap}
	if r.forwarded(id) {
		if inList(m, n.self.ID) {
			r.complete(m) // it has gone round
		} else {
			n.drop(DropUnexpected) // a duplicate
		}
		return
	}
	if m.Initiator == n.self.ID {
		n.drop(DropUnexpected) // a lap opened before this node restarted
		return
	}
	r.join()
	r.seen = append(r.seen, id)
	m.List = append(m.List, r.entry())
	r.forward(m)
}

func (r *ring) forwarded(id lapID) bool {
	for _, s := range r.seen {
		if s == id {
			return true
		}
	}
	return false
}

// inList reports whether id is in m's list; the initiator looks at the head
// first, so the common return costs nothing.
func inList(m Message, id string) bool {
	if len(m.List) > 0 && m.List[0].ID == id {
		return true
	}
	return listIndex(m.List, id, 0) >= 0
}

// complete turns a lap that has come round into the COORDINATOR lap.
func (r *ring) complete(m Message) {
	n := r.n
	c, ok := r.choose(m.List)
	if !ok {
		// Nobody in the list stands (a hand-off with no voter left): wait
		// for the next election.
		r.abandon()
		return
	}
	t := MakeTerm(n.term.Epoch()+1, Tag(c.ID))
	if !n.mayRaiseTo(t) {
		r.abandon() // past MaxEpoch, or beyond the epoch allowance (term.go)
		return
	}
	at := listIndex(m.List, n.self.ID, 0)
	hops := 0 // View mode tells the coordinator directly (lap.tell): no lap to wait for
	if n.cfg.Mode != View {
		hops = lapHops(at, at, listIndex(m.List, c.ID, 0), len(m.List))
	}
	r.record(c.ID, t, hops)
	cm := Message{Type: MsgCoordinator, Term: t, Initiator: n.self.ID, Coordinator: c.ID,
		Value: c.Rank(), List: m.List}
	r.tell(cm, at)
}

// choose returns the highest-ranked voter of the list that the view does
// not hold dead (a member that died after the lap collected it is passed
// over rather than named; Textbook mode cannot tell).
func (r *ring) choose(list []Peer) (Peer, bool) {
	var best Peer
	found := false
	for _, p := range list {
		if p.NonVoter || !r.n.view.alive(p.ID) {
			continue
		}
		if !found || p.Rank().Compare(best.Rank()) > 0 {
			best, found = p, true
		}
	}
	return best, found
}

func (r *ring) onCoordinator(m Message) {
	n := r.n
	switch {
	case m.Coordinator == "" || m.Term.Tag() != Tag(m.Coordinator):
		n.drop(DropOrder) // a term names its winner
		return
	case m.Initiator == n.self.ID:
		return // the lap is back where it started: it is removed
	case r.coord.Term == m.Term:
		n.drop(DropUnexpected) // a duplicate (a term names one coordinator)
		return
	}
	at := listIndex(m.List, n.self.ID, int(m.Index))
	hops := 0 // View mode tells the coordinator directly (lap.tell): no lap to wait for
	if n.cfg.Mode != View {
		hops = lapHops(listIndex(m.List, m.Initiator, 0), at, listIndex(m.List, m.Coordinator, 0), len(m.List))
	}
	if !n.view.alive(m.Coordinator) {
		// The view holds the named coordinator dead: it died since the lap
		// collected it, or the view is behind (a paused member resumed).
		if !n.electing {
			r.join()
		}
		r.timer = min(r.timer, doubtTicks(n, hops))
		r.passOn(m, at)
		return
	}
	if m.Value.ID == m.Coordinator {
		// The list rated it; a view that never heard from it may not have.
		n.learnRating(m.Coordinator, m.Value.Rating)
	}
	r.record(m.Coordinator, m.Term, hops)
	if at < 0 {
		r.coord = m // told directly (View mode), or a straggler outside the list, told by the member that gave up on it (lap.announce)
	} else {
		r.passOn(m, at)
	}
	n.maybePreempt()
}

// exhausted: a queued hop found no working member left (Textbook mode).
func (r *ring) exhausted(m Message) {
	if m.Type == MsgElection && r.n.electing && r.n.term == m.Term {
		r.complete(m) // every other member is dead: the lap is back here
	}
}

func (r *ring) tick() {
	if !r.tickTimers() {
		return
	}
	if r.n.coordinator != "" || r.n.self.NonVoter {
		r.abandon() // nothing to restart: a coordinator is known, or we cannot stand
		return
	}
	r.n.count().ElectionsRestarted++
	r.restart()
}

// resign hands off at once: the coordinator opens a lap in which it does
// not stand (entry marks it NonVoter), so the next voter by rating wins.
func (r *ring) resign() {
	r.n.countStart(CauseHandoff)
	r.handingOff = true
	r.open(r.n.nextTerm())
}
