package core

// link carries the ring algorithms' messages one hop clockwise to the next
// working member (docs/algorithms.md, ring: "if the successor does not respond, it
// sends to the one after, and so on, until a working participant is found").
//
// Textbook mode has no view, so every hop is acknowledged with MsgAck. A
// member that does not acknowledge within the hop timeout (HopTimeout, or
// more after longer round trips: Node.hopTimeout) is marked failed
// for the rest of the election and the message goes to the one after; the
// failed attempt was a sent message and is counted as one. A hop awaiting
// its Ack holds back the messages behind it (stop and wait), so per-link
// order is kept across skips and a dead member costs one failed attempt per
// election, not one per message.
//
// View mode skips members the view holds dead. An ELECTION whose
// Coordinator names its receiver asks for an Ack; a silent receiver is
// sent it again (resend) and then skipped as in Textbook mode; other hops
// are not acknowledged (a lost message is covered by the election's
// timeout). A node asks for Acks:
//   - on the hop to the coordinator it followed when the election began,
//     the one member likely to be dead before membership says so (its
//     silence is what usually starts an election): a live old coordinator
//     stays in the election, a dead one costs HopTimeout instead of the
//     election;
//   - on every ELECTION hop of an election that replaces a coordinator
//     (careful): a crash is under way that membership has not reported, and
//     failures come together (a rack, a redeploy, a kill of two processes),
//     so another member may be dead too. Without the Acks a lap handed to it
//     is lost, and so is every lap after it until membership notices, which
//     takes memberlist seconds. An election replaces a
//     coordinator when this node knew one (the old coordinator itself
//     included: it may be the member that is cut off), or when its term
//     is past the first epoch (a restarted node knows no coordinator, but
//     the term it learnt says there was one). The price is one Ack per
//     hop of such elections; the first election of a cluster (a cold
//     start) asks for none.
type link struct {
	n      *Node
	out    []hop               // hops held back; out[0] is in flight when busy
	failed map[string]struct{} // members that did not acknowledge
	// leader is the last coordinator this node knew (itself included);
	// suspect is the one that must acknowledge, in View mode, for this
	// election.
	leader, suspect string
	// ledTerm and ledFrom: the term this node last led in (0: none since
	// deposed) and the tick it was first seen leading it.
	ledTerm Term
	ledFrom int
	// exhausted receives a queued message that found no member left to
	// try (every other member is dead): the caller decides what it means.
	exhausted func(Message)
	// gave holds the last hops given up on (gaveAt: where the next
	// goes): the Ack of one may still come, and its round trip counts
	// (Node.rtts, hopTimeout). Allocated at the first hop given up on: a
	// member of a large ring seldom gives up on any.
	gave *[4]gaveUp
	// forked is the term of the last ELECTION hop given up on whose Ack
	// came after all: its receiver has the message, and so does the member
	// after it (peterson.step).
	forked Term
	// straggler is the receiver of that hop, in this election: it is
	// working, but a lap that went on without it does not list it
	// (lap.announce tells it the outcome).
	straggler string
	// vouched: this node's pre-vote for this election passed, so it
	// reaches a majority; the members it gives up on in the election are
	// refusing its hops (they sit out: link.refuses) or died since, and do
	// not make it isolated (tick).
	vouched bool
	// The flags last, next to each other (a link is in every ring node).
	busy bool // out[0] has been sent and awaits its Ack
	// careful: this election replaces a coordinator, so in View mode every
	// ELECTION hop is acknowledged too.
	careful bool
	gaveAt  uint8 // where the next hop given up on goes in gave
}

// send hands m to the first working member after position from (this
// node's ring index, or its index in m.List) and returns that member, or ""
// if m has to wait behind a hop awaiting its Ack. It reports false when no
// other member works at all (this node is alone); nothing was sent then.
func (l *link) send(m Message, rt route, from int) (string, bool) {
	l.release()
	if l.busy || len(l.out) > 0 {
		l.out = append(l.out, hop{m: m, route: rt, at: from})
		return "", true
	}
	at, ok := l.next(m, rt, from)
	if !ok {
		return "", false
	}
	h := hop{m: m, route: rt, at: at}
	if !l.needsAck(&h) {
		return l.transmit(&h), true
	}
	l.out = append(l.out, h)
	l.busy = true
	return l.transmit(&l.out[0]), true
}

// needsAck reports whether the hop to position h.at must be acknowledged.
func (l *link) needsAck(h *hop) bool {
	if l.n.cfg.Mode == Textbook || h.m.Type == MsgElection && (l.careful || h.m.Term.Epoch() > 1) {
		return true
	}
	return l.suspect != "" && l.target(h) == l.suspect
}

// target is the ID of the member at h.at.
func (l *link) target(h *hop) string {
	if h.route == listed {
		return h.m.List[h.at].ID
	}
	return l.n.view.r.At(h.at).ID
}

// transmit sends h.m to the member at h.at and returns its ID.
func (l *link) transmit(h *hop) string {
	h.m.To = l.target(h)
	switch {
	case h.route == listed:
		h.m.Index = uint32(h.at) // the receiver's place in the list
	case h.m.Type == MsgElection:
		// An ELECTION names its receiver when it wants an Ack (View mode),
		// else nobody; one that wants an Ack needs no link order (the link
		// holds what follows it until the Ack) and may be lost (resend).
		asks := l.n.cfg.Mode == View && l.needsAck(h)
		h.m.Coordinator, h.m.Unordered = "", asks
		if asks {
			h.m.Coordinator = h.m.To
		}
	}
	h.timer, h.sent = l.n.hopTimeout(), l.n.now
	l.n.send(h.m)
	return h.m.To
}

// next finds the first usable member after position from on rt.
func (l *link) next(m Message, rt route, from int) (int, bool) {
	self := l.n.self.ID
	if rt == listed {
		for k := 1; k < len(m.List); k++ {
			j := (from + k) % len(m.List)
			switch id := m.List[j].ID; {
			case id == self:
				return 0, false
			case l.usable(id):
				return j, true
			case id == m.Initiator:
				return 0, false // the lap would pass its end
			}
		}
		return 0, false
	}
	r := l.n.view.r
	for k := 1; k < r.Len(); k++ {
		i := (from + k) % r.Len()
		switch id := r.At(i).ID; {
		case id == self:
			return 0, false
		case l.usable(id):
			return i, true
		}
	}
	return 0, false
}

func (l *link) usable(id string) bool {
	if !l.n.view.alive(id) {
		return false
	}
	_, f := l.failed[id]
	return !f
}

// ack acknowledges a ring message: always in Textbook mode; in View mode
// an ELECTION that names this node (its sender wants the Ack). The Ack echoes
// what identifies the message on its link; its term is this node's, so
// that a sender that is behind learns the newer term.
func (l *link) ack(m Message) {
	suspected := m.Type == MsgElection && m.Coordinator == l.n.self.ID
	if l.n.cfg.Mode != Textbook && !suspected || m.From == "" || m.From == l.n.self.ID {
		return
	}
	// In View mode a lost Ack costs a resend of the hop, which is
	// acknowledged again: it needs neither order nor delivery.
	l.n.send(Message{Type: MsgAck, To: m.From, Initiator: m.Initiator, Lap: m.Lap, Index: m.Index,
		Phase: m.Phase, Phases: m.Phases, Value: m.Value, Coordinator: m.Coordinator, Unordered: l.n.cfg.Mode == View})
}

// refuses reports whether this node turns down an ELECTION hop that asks
// for an Ack (every hop in Textbook mode), counting it as dropped: a
// member backing off (guard.backingOff: it abdicated, or an election
// deposed it, see deposed: it could not reach the others), or one that
// found it cannot reach a majority (guard.sitsOut), takes no part
// in elections, so the sender passes it over as it would a dead member and
// the lap goes round the members that reach each other. Forwarding it
// instead would hand the lap to members it may not reach, and a ring that
// runs through it is broken there. It follows whoever wins, from the
// winner's heartbeats.
func (l *link) refuses(m Message) bool {
	l.deposed(m)
	if !l.n.guard.sitsOut(l.n.now) || l.n.cfg.Mode == View && m.Coordinator != l.n.self.ID {
		return false // (Textbook mode acknowledges every hop)
	}
	l.n.drop(DropUnexpected)
	return true
}

// acked handles an Ack; it reports whether it matched the hop in flight.
func (l *link) acked(a Message) bool {
	if !l.busy || len(l.out) == 0 {
		l.late(a)
		return false
	}
	h := &l.out[0]
	if !acknowledges(a, h.m) {
		l.late(a)
		return false
	}
	if h.resent == 0 {
		l.measured(h.sent) // an Ack of a hop sent twice answers either copy
	}
	l.pop()
	l.pump()
	return true
}

// acknowledges reports whether Ack a answers hop m: it comes from m's
// receiver and echoes what identifies m on its link (link.ack).
func acknowledges(a, m Message) bool {
	return m.To == a.From && m.Initiator == a.Initiator && m.Lap == a.Lap && m.Index == a.Index &&
		m.Phase == a.Phase && m.Phases == a.Phases && m.Value == a.Value && m.Coordinator == a.Coordinator
}

// late takes an Ack that matched no hop in flight: one of a hop this
// node gave up on is a round trip longer than the timeout was.
func (l *link) late(a Message) {
	if l.gave == nil {
		return
	}
	for i := range l.gave {
		g := &l.gave[i]
		if g.m.To != "" && acknowledges(a, g.m) {
			l.measured(g.sent)
			if g.m.Type == MsgElection {
				l.forked, l.straggler = g.m.Term, a.From
			}
			*g = gaveUp{}
			return
		}
	}
}

// measured records the round trip of a hop sent at tick sent and
// acknowledged now.
func (l *link) measured(sent int) {
	l.n.det.measuring().add(l.n.now, l.n.now-sent)
}

// heard notes that id is working: a member that sent us something is no
// longer skipped nor suspected.
func (l *link) heard(id string) {
	if l.failed != nil {
		delete(l.failed, id)
	}
	if id == l.suspect {
		l.suspect = ""
	}
}

// noteLeader records the coordinator this node knows now, if any.
func (l *link) noteLeader(at int) {
	c := l.n.coordinator
	switch {
	case c != l.n.self.ID:
		l.ledTerm = 0 // not leading (deposed, stepped down or never led)
	case l.ledTerm != l.n.term:
		l.ledTerm, l.ledFrom = l.n.term, at
	}
	if c != "" {
		l.leader = c
	}
}

// deposed handles an ELECTION that has just deposed this node as
// coordinator (its term is above the one it led in): if it had led for
// K heartbeat intervals, the election's initiator, and a member that let
// it through the pre-vote, have heard nothing from it for that long while
// it can still be reached: it is cut off from them, and the members that
// still reach it would elect it again, lap after lap, and nobody would
// hear it. It backs off as a coordinator whose lease
// lapsed does (guard.backOff): it does not stand, refuses the election's
// hops (refuses) and follows the winner; after the back-off it may
// displace the winner, if a majority answers its preemption check. A
// coordinator deposed sooner was overtaken by a racing election, not cut
// off; it stays in.
func (l *link) deposed(m Message) {
	n := l.n
	if m.Type != MsgElection || l.ledTerm == 0 || m.Term <= l.ledTerm || n.coordinator != "" || n.electing {
		return
	}
	if n.now-l.ledFrom >= n.cfg.HeartbeatInterval*(n.cfg.HeartbeatMisses-1) {
		n.guard.backOff(n.now)
	}
	l.ledTerm = 0
}

// begin starts a new election's memory: no member failed yet (one that
// failed last time may be back), the last coordinator suspected, and
// careful if there is one (itself included).
func (l *link) begin() {
	clear(l.failed)
	l.vouched, l.straggler = false, ""
	l.suspect = ""
	if l.leader != l.n.self.ID {
		l.suspect = l.leader
	}
	l.careful = l.n.cfg.Mode == View && l.leader != ""
}

// release abandons a hop in flight whose term this node has left behind
// (the message no longer matters, and its Ack, stamped with the older term
// of its receiver, would be dropped as stale), without holding its receiver
// failed, and sends what waits behind it.
func (l *link) release() {
	if l.busy && l.out[0].m.Term < l.n.term {
		l.pop()
		l.pump()
	}
}

// tick runs the hop timer of the message in flight.
func (l *link) tick() {
	l.noteLeader(l.n.now)
	l.release()
	if !l.busy {
		return
	}
	if l.out[0].timer--; l.out[0].timer > 0 {
		return
	}
	h := &l.out[0]
	if l.resend(h) {
		return
	}
	if l.failed == nil {
		l.failed = make(map[string]struct{})
	}
	l.failed[h.m.To] = struct{}{}
	if l.gave == nil {
		l.gave = new([4]gaveUp)
	}
	g := gaveUp{m: h.m, sent: h.sent}
	g.m.List = nil // not needed to match its Ack, and not to be kept alive
	l.gave[l.gaveAt%uint8(len(l.gave))] = g
	l.gaveAt++
	if !l.vouched && l.n.guard.leavesNoMajority(len(l.failed)) && l.unreached() {
		l.n.guard.setIsolated(true)
	}
	l.busy = false
	h.m = h.m.Clone() // the list must not share memory with a copy that arrived
	h.resent = 0      // the next receiver has not been sent it
	l.pump()
}

// resend sends h again to its receiver, whose Ack has not come in time,
// and reports whether it did: in View mode, once, to a member the view
// holds alive other than the suspect, with the same wait. Such a member is
// slow (a loaded host, a pause) far more often than it is dead, and one
// that is slow has the message: passing it over would fork the lap (two
// members carrying it on, the active/relay ring's phases pairing values
// that do not belong together). A lost message is sent again the same
// way. Its receiver drops a copy it has taken already (ring.forwarded,
// peterson's packed phases). A member still silent is given up on as in
// Textbook mode (one that refuses the hop, sitting out, costs two waits);
// one that dies meanwhile is skipped once the view says so (peerDown
// restarts the election if it held its message).
func (l *link) resend(h *hop) bool {
	n := l.n
	if n.cfg.Mode != View || h.resent > 0 || h.m.To == l.suspect || !n.view.alive(h.m.To) {
		return false
	}
	h.resent++
	h.timer = n.hopTimeout()
	n.send(h.m)
	return true
}

// unreached reports, with the guard, whether the members this node gave
// up on in this election leave fewer than a majority of the quorum that it
// reaches: the live voters of its view, itself included, that did not fail.
func (l *link) unreached() bool {
	r, reach := l.n.view.r, 0
	for i := 0; i < r.Len(); i++ {
		p := r.At(i)
		if _, f := l.failed[p.ID]; !p.NonVoter && !f && (p.ID == l.n.self.ID || l.n.view.alive(p.ID)) {
			reach++
		}
	}
	return reach < l.n.majority()
}

// pump sends the first queued message that has somewhere to go, handing
// the others to exhausted.
func (l *link) pump() {
	for !l.busy && len(l.out) > 0 {
		h := &l.out[0]
		if h.m.Term < l.n.term {
			l.pop() // outdated: this node has seen a newer term since
			continue
		}
		at, ok := l.next(h.m, h.route, l.origin(h))
		if !ok {
			m := h.m
			l.pop()
			if l.exhausted != nil {
				l.exhausted(m) // may queue more; the loop picks it up
			}
			continue
		}
		h.at = at
		if !l.needsAck(h) {
			sent := *h
			l.pop()
			l.transmit(&sent)
			continue
		}
		l.busy = true
		l.transmit(h)
	}
}

// origin is the position to go on from: the member h was last sent to,
// or this node for a hop not sent yet. Ring positions are looked up by ID,
// since a roster that grows by membership events shifts them.
func (l *link) origin(h *hop) int {
	if h.route == listed {
		return h.at
	}
	id := h.m.To
	if id == "" {
		id = l.n.self.ID
	}
	if i := l.n.view.r.Index(id); i >= 0 {
		return i
	}
	return h.at
}

// pop removes out[0]. A short queue keeps its array for the hops to come
// (the others move up): every ELECTION of a ring election passes through
// the link, and a fresh array for each cost an allocation per hop
// (peterson n = 10,000: 190,000). A long one drops its head instead.
func (l *link) pop() {
	l.busy = false
	k := len(l.out)
	if k > 8 {
		l.out[0] = hop{}
		l.out = l.out[1:]
		return
	}
	copy(l.out, l.out[1:])
	l.out[k-1] = hop{}
	l.out = l.out[:k-1]
}

// deadline mirrors link.tick: a hop in flight whose term is behind is
// released at the next tick, else its receiver is given up on when the
// hop timer runs out.
func (l *link) deadline() int {
	if !l.busy {
		return farTicks
	}
	if l.out[0].m.Term < l.n.term {
		return 1
	}
	return max(l.out[0].timer, 1)
}

func (l *link) skip(k int) {
	l.noteLeader(l.n.now - k + 1) // as the first of the k ticks would
	if l.busy {
		l.out[0].timer -= k
	}
}
