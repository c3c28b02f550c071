package core

// lap is what the two rings share (ring and peterson embed it): the link
// that carries their messages hop by hop (ringlink.go), the election's timer, the
// COORDINATOR lap that each passes on to the next working member, and how
// a ring election ends, restarts or is abandoned.
type lap struct {
	n    *Node
	alg  ringAlgorithm // the ring that embeds the lap
	link link
	// timer counts down while this node takes part in an election: the
	// ring's lap timeout, the active/relay ring's silence (idleTicks).
	timer int
	// sentTo is the member the last election message was handed to
	// (View mode: its death restarts the election).
	sentTo string
	// coord is the last COORDINATOR lap forwarded and coordTo its
	// receiver: View mode resends it if that receiver dies. coordRoute is
	// how it goes round: along the ring's list (listed), or clockwise.
	coord   Message
	coordTo string
	// base: the highest term this node had seen when it wanted to start
	// the election it waits for (waiting).
	base Term
	// held: ticks left before the pre-vote of the election this node
	// waits to start begins (seniorWait); 0: not held.
	held       int
	coordRoute route
	// handingOff: this node resigned and does not stand until a
	// coordinator is known.
	handingOff bool
	// waiting: this node wants to start an election and its pre-vote runs
	// (Node.pv); preVoted starts the one that follows base.
	waiting bool
}

// ringAlgorithm is a ring that embeds a lap: the lap hands it the
// election messages it takes (step), and resets it (abandon).
type ringAlgorithm interface {
	algorithm
	onElection(m Message)
	onCoordinator(m Message)
}

// newLap returns the lap of alg, a ring whose COORDINATOR lap goes by
// coordRoute; exhausted is told of a queued message that found no member
// left to try.
func newLap(n *Node, alg ringAlgorithm, coordRoute route, exhausted func(Message)) lap {
	return lap{n: n, alg: alg, link: link{n: n, exhausted: exhausted}, coordRoute: coordRoute}
}

// step takes a ring message: the sender is working (link.heard); an
// ELECTION the link does not refuse and a COORDINATOR are acknowledged as
// the link says, then handed to the ring, a COORDINATOR only if its term
// is current; an Ack goes to the link.
func (l *lap) step(m Message) {
	l.link.heard(m.From)
	switch m.Type {
	case MsgElection:
		if l.link.refuses(m) {
			return
		}
		l.link.ack(m)
		l.alg.onElection(m)
	case MsgCoordinator:
		l.link.ack(m)
		if m.Term < l.n.term {
			l.n.drop(DropStaleTerm) // acknowledged, then ignored
			return
		}
		l.alg.onCoordinator(m)
	case MsgAck:
		if !l.link.acked(m) {
			l.n.drop(DropUnexpected) // late: the hop was passed on already
		}
	default:
		l.n.drop(DropUnexpected)
	}
}

// tickTimers runs the link's hop timer and the election's timer, which
// runs while the node takes part in an election and does not wait for its
// pre-vote (the pre-vote has its own deadline). It reports whether the
// election's timer ran out in this tick.
func (l *lap) tickTimers() bool {
	l.link.tick()
	if l.held > 0 {
		if l.held--; l.held == 0 && l.waiting && l.n.electing {
			l.beginPreVote()
		}
	}
	if !l.n.electing || l.timer <= 0 || l.waiting {
		return false
	}
	l.timer--
	return l.timer <= 0
}

// preVote begins the pre-vote of the election this node wants to start
// (waiting), or holds it back for seniorWait ticks.
func (l *lap) preVote() {
	if l.held = l.seniorWait(); l.held == 0 {
		l.n.beginPreVote(preVoteElection, "")
	}
}

// beginPreVote ends the hold: the pre-vote begins, unless the view has
// changed so that none is needed (every other voter left it).
func (l *lap) beginPreVote() {
	if !l.n.preVoteNeeded() {
		l.alg.preVoted()
		return
	}
	l.n.beginPreVote(preVoteElection, "")
}

// seniorWait is how long a member whose detector gave up on the
// coordinator holds back its pre-vote when the coordinator's heartbeats
// fan out (View mode, a large cluster) and no quorum guard makes every
// voter hear every round: AnswerTimeout for each live voter ranked above
// it, the suspect aside, up to HeartbeatWatchers of them. The watchers hear
// every round and give up on a silent coordinator together; the members
// outside hear it seldom and go on refusing a pre-vote for longer. A
// pre-vote asks the nearest voters below by rank, so the top survivor's
// question reaches watchers that gave up too, and its lap then reaches the
// others, who join it. A lower watcher asking at once would ask members
// outside, be refused, follow the coordinator again on their word, and
// refuse the top survivor in turn, until the detectors' next round.
func (l *lap) seniorWait() int {
	n := l.n
	if n.det.suspect == "" || n.guard.on() || !n.fanningOut() {
		return 0
	}
	r := n.view.r
	above := 0
	for k := r.RankOf(r.Index(n.self.ID)) + 1; k < r.Len() && above < n.cfg.HeartbeatWatchers; k++ {
		if p := r.ByRank(k); !p.NonVoter && p.ID != n.det.suspect && n.view.alive(p.ID) {
			above++
		}
	}
	return above * n.cfg.AnswerTimeout
}

// vouch: the pre-vote of the election this node takes part in passed
// (link.vouched).
func (l *lap) vouch() { l.link.vouched = true }

// record accepts c as coordinator in term t as an announcement tells it,
// c hearing it hops after this node: the rest of a COORDINATOR lap, or 0
// when every member is told directly (the active/relay ring in View mode).
//
// The announcement is how the winner learns that it has won, so a follower
// that a lap reaches before the winner cannot hear a heartbeat until the
// lap has gone those hops: its failure detector starts counting only then
// (plus the heartbeat's own trip); counted from the moment the lap passed,
// every follower more than about K·H of lap time upstream of the winner
// (some 45 hops at the defaults) would time out and start a new election,
// over and over (docs/reliability.md, "Ring liveness at scale").
func (l *lap) record(c string, t Term, hops int) {
	l.handingOff = false
	l.accept(c, t, hops)
	l.link.noteLeader(l.n.now)
}

// followed: this node follows a coordinator now, or leads (Node.follow,
// Node.becomeCoordinator), however it learned of it (a heartbeat, a
// relayed announcement): a hand-off of its own is over. Only a
// COORDINATOR lap ended it before, and a member that resigned, then
// followed the next coordinator on a heartbeat, went on refusing to stand
// in every later lap (its lap of the hand-off lost under loss; the
// random-fault test's seed 1697).
func (l *lap) followed() { l.handingOff = false }

// accept follows c, or becomes coordinator, in term t, unless it does
// already (record).
func (l *lap) accept(c string, t Term, hops int) {
	n := l.n
	if n.coordinator == c && n.term == t {
		return
	}
	if c == n.self.ID {
		n.becomeCoordinator(t)
		if !n.guard.holds() {
			n.heartbeat() // collect the acks that confirm us
		}
		return
	}
	n.follow(c, t, false)
	n.det.silence = -(hops*hopTicks(n) + n.cfg.RoundTrip)
}

// announce sends the COORDINATOR lap m on from position at (in its list,
// or on the ring); the lap ends at its Initiator. A lap that goes along
// its list passes a straggler by: a member this node gave up on in the
// ELECTION lap, which acknowledged after all (it was slow, not dead) and
// so took part late, outside the list. This node sends it m too, so that it
// learns the outcome now rather than from a heartbeat, which a member
// outside the watchers of a large cluster hears about once a second.
func (l *lap) announce(m Message, at int) {
	l.coord = m
	l.coordTo, _ = l.link.send(m, l.coordRoute, at)
	if s := l.link.straggler; s != "" && l.coordRoute == listed && listIndex(m.List, s, 0) < 0 {
		l.link.straggler = ""
		m.To = s
		l.n.send(m)
	}
}

// tell announces the election's outcome m from position at (in its list,
// or on the ring). In View mode it goes straight to every other live
// member of the view, highest rated first (the coordinator and its
// watchers, whose detectors act, hear it first): the same n − 1 messages
// as a COORDINATOR lap, one hop of latency instead of a lap, and a member
// the election passed by (a straggler, one that joined late) is told as
// well. Textbook mode, which has no view of who works, sends the lap.
func (l *lap) tell(m Message, at int) {
	n := l.n
	if n.cfg.Mode != View {
		l.announce(m, at)
		return
	}
	m.List, m.Index = nil, 0 // nobody passes it on
	l.coord, l.coordTo = m, ""
	n.reserve(n.liveCount() - 1)
	r := n.view.r
	for k := r.Len() - 1; k >= 0; k-- {
		if id := r.ByRank(k).ID; id != n.self.ID && n.view.alive(id) {
			m.To = id
			n.send(m)
		}
	}
}

// passOn takes an announcement this node has been told: a lap (Textbook
// mode) goes on from position at; one told directly (View mode, tell)
// ends here.
func (l *lap) passOn(m Message, at int) {
	if l.n.cfg.Mode == View {
		l.coord = m
		return
	}
	l.announce(m, at)
}

// restart abandons the election and starts the next one, in a new term,
// which every other node joins when its first message reaches it (in the
// active/relay ring, nodes that time out together start the same one); a
// non-voter, which cannot stand, only abandons. A hand-off that did not
// come through becomes an ordinary election.
func (l *lap) restart() {
	l.n.electing = false
	if l.n.self.NonVoter {
		l.abandon()
		return
	}
	l.n.startElection(CauseRestart)
}

// abandon stops taking part in the election without a result; the node's
// idle timer starts an election later if no coordinator turns up.
func (l *lap) abandon() {
	l.alg.reset()
	l.n.electing = false
	if l.n.coordinator == "" {
		l.n.setState(StateLost)
	}
}

// peerDown (View mode): the member this node handed the election's
// message to died, and the message may have died with it: restart in a
// new term (docs/algorithms.md: a ring whose membership changes
// mid-election restarts). A COORDINATOR lap handed to a member that died
// is sent on to the next one instead: its outcome stands.
func (l *lap) peerDown(id string) {
	n := l.n
	if n.electing && id == l.sentTo {
		n.count().ElectionsRestarted++
		l.restart()
		return
	}
	if id == l.coordTo && l.coord.Term == n.term {
		l.coordTo = ""
		at := n.view.r.Index(id)
		if l.coordRoute == listed {
			at = listIndex(l.coord.List, id, int(l.coord.Index)+1)
		}
		l.announce(l.coord, at)
	}
}

// deadline mirrors tickTimers: the hop in flight, and the election's
// timer.
func (l *lap) deadline() int {
	d := l.link.deadline()
	if l.held > 0 {
		d = min(d, l.held)
	}
	if l.n.electing && l.timer > 0 && !l.waiting {
		d = min(d, l.timer)
	}
	return d
}

// skip runs k ticks of tickTimers that reach no deadline. Between
// elections, with no hop held, the next skip would only record the same
// coordinator again (link.noteLeader): the node is told that its ring is
// quiet.
func (l *lap) skip(k int) {
	l.link.skip(k)
	if l.held > 0 {
		l.held -= k
	}
	if l.n.electing && l.timer > 0 && !l.waiting {
		l.timer -= k
	}
	l.n.quiet(!l.n.electing && !l.link.busy)
}

// listIndex returns id's index in list, trying hint first, or -1.
func listIndex(list []Peer, id string, hint int) int {
	if hint >= 0 && hint < len(list) && list[hint].ID == id {
		return hint
	}
	for i := range list {
		if list[i].ID == id {
			return i
		}
	}
	return -1
}
