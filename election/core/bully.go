package core

import "slices"

// bully is docs/algorithms.md, bully (Garcia-Molina 1982).
//
// Textbook mode follows the text to the letter, so message counts match the
// literature. View mode is the same algorithm with a membership view:
// peers known dead are skipped, a node with no live higher-rated peer
// declares at once, and a candidate first asks only the highest live peer
// above it (then the other live peers above it if that one stays silent:
// all at once in a small cluster, a band of escalateBand at a time, top
// down, when the heartbeats fan out), which keeps a failover that every
// survivor notices at O(n) messages. When the
// heartbeat detector fires, a follower with a live senior other than the
// suspect does not ask at all at first: it waits for the senior's
// announcement (awaitSenior), so such a failover costs about n messages.
type bully struct {
	n     *Node
	phase bullyPhase
	timer int // ticks left in the current wait
	// View mode: stage 1 asked only the top live peer, stage 2 the others
	// above (escalate): all of them, or, when the heartbeats fan out, a
	// band at a time; floor is the rank of the lowest one asked so far
	// and more says that some above us were left for the next band.
	stage int
	asked string
	floor Rank
	more  bool
	// pair: a surviving watcher waited out its senior, and the senior and
	// the suspect were all that was above it; it asked both at once
	// (askPair).
	pair bool
	// late: the wait for the senior ran out, but the senior had asked for
	// this node's pre-vote; it waits T' for the senior's COORDINATOR
	// (seniorTakingOver).
	late bool
	// excluded is a resigning coordinator, absent from the next election.
	excluded string
	// awaited is the suspect this node has already waited out a senior's
	// announcement for: after that wait it asks, as any candidate does.
	awaited string
	// direct: a coordinator transferred the role to this node, which
	// declares without asking anyone above it; hint names that coordinator.
	direct bool
	hint   string
	// senior is the last member ranked above this node whose election
	// pre-vote it granted, at tick seniorAt (grantedElection); not
	// cleared between elections.
	senior   string
	seniorAt int
}

type bullyPhase uint8

const (
	bullyIdle        bullyPhase = iota
	bullyWaitAnswer             // T: waiting for an ANSWER
	bullyWaitCoord              // T': answered, waiting for COORDINATOR
	bullyAwaitSenior            // View: the coordinator failed; a senior will announce
	bullyPreVote                // View: about to win; the pre-vote runs (Node.pv)
)

// reset abandons the election: a coordinator has been accepted.
func (b *bully) reset() {
	b.clear()
	b.awaited, b.direct, b.hint = "", false, ""
}

func (b *bully) clear() {
	b.phase, b.timer, b.stage, b.asked = bullyIdle, 0, 0, ""
	b.floor, b.more, b.pair, b.late = Rank{}, false, false, false
}

// higher calls fn for every voter ranked above this node that the election
// may ask, highest first, until fn returns false.
func (b *bully) higher(fn func(Peer) bool) {
	n := b.n
	r := n.view.r
	for k := r.Len() - 1; k >= 0; k-- {
		p := r.ByRank(k)
		if p.Rank().Compare(n.rank()) <= 0 {
			return
		}
		if p.NonVoter || p.ID == b.excluded || !n.view.alive(p.ID) {
			continue
		}
		if !fn(p) {
			return
		}
	}
}

// liveVotersAbove counts the members higher visits: the live voters
// ranked above this node, b.excluded left out. Every candidate of a
// fanned-out cluster asks it (deferral); a walk from the top down to its
// own rank made a failover in which every member noticed O(n²): 65 s
// instead of 2 s for the simulator's 100,000 members. While the roster
// has no non-voters it is a binary search for this node's rank, less the
// dead above it.
func (b *bully) liveVotersAbove() int {
	n := b.n
	r := n.view.r
	if r.nonVoters > 0 {
		above := 0
		b.higher(func(Peer) bool { above++; return true })
		return above
	}
	me := n.rank()
	k, _ := slices.BinarySearchFunc(r.byRank, me, func(a int32, rk Rank) int { return r.rank(a).Compare(rk) })
	for k < len(r.byRank) && r.rank(r.byRank[k]).Compare(me) <= 0 {
		k++
	}
	above := len(r.byRank) - k
	if n.view.mode == View {
		for id := range n.view.dead.all {
			if q, ok := r.Get(id); ok && q.Rank().Compare(me) > 0 {
				above--
			}
		}
	}
	if b.excluded != "" && n.view.alive(b.excluded) {
		if q, ok := r.Get(b.excluded); ok && q.Rank().Compare(me) > 0 {
			above--
		}
	}
	return above
}

func (b *bully) start() bool {
	n := b.n
	b.clear()
	n.electing = true
	n.setState(StateCandidate)
	if b.direct {
		b.direct = false
		b.excluded = ""
		b.declare()
		return true
	}
	if n.cfg.Mode == View && n.det.suspect != "" && n.det.suspect != b.awaited && n.det.suspect != n.det.relayed && b.awaitSenior() {
		return true
	}
	b.ask()
	return true
}

// awaitSenior: View mode, the detector gave up on the coordinator and a
// live senior other than the suspect will take over: wait H + T + RoundTrip
// for its COORDINATOR, sending nothing (docs/algorithms.md, bully, View
// mode), and, far below the top of a fanned-out cluster, longer (deferral).
// It reports false for the top survivor, and for a node that follows the
// suspect on a relay's word (it asks at once).
func (b *bully) awaitSenior() bool {
	n := b.n
	senior := b.stageOneTarget()
	if senior == "" || senior == n.det.suspect {
		return false
	}
	b.awaited = n.det.suspect
	b.asked = senior
	b.phase = bullyAwaitSenior
	b.timer = b.seniorWait()
	return true
}

// seniorWait is how long awaitSenior waits for the senior's announcement:
// H + T + RoundTrip, and the deferral far below the top.
func (b *bully) seniorWait() int {
	c := &b.n.cfg
	return c.HeartbeatInterval + c.AnswerTimeout + c.RoundTrip + b.deferral()
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

// seniorTakingOver reports whether the senior this node awaited asked it
// for a pre-vote lately: within the detector's K intervals and the wait
// before this moment, i.e. about the failure at hand.
func (b *bully) seniorTakingOver(senior string) bool {
	n := b.n
	recent := n.cfg.HeartbeatMisses*n.cfg.HeartbeatInterval + b.seniorWait()
	return senior != "" && b.senior == senior && n.now-b.seniorAt <= recent
}

// deferral is how much longer than H + T + RoundTrip a member waits for a
// senior's announcement when the coordinator's heartbeats fan out
// (n > W + B + 1) and it is below the top: when its first question and
// the first band (escalate) would not reach every live voter above it.
// Such a member neither hears every heartbeat round nor decides the
// election: the watchers detect a crash within K·H of the last round and
// the top survivor among them wins, its COORDINATOR ending this member's
// wait. It waits T for each further band above it, the time a candidate
// above it takes to ask its way down through a band of the dead, so that
// the members below start asking a band's worth at a time, deepest last,
// and in a failover that the top survivors settle they ask nobody.
// Asking at once, each of them would ask the dead first watcher and a
// band: O(n) messages for every member that noticed, not O(1). 0 in a
// small cluster, and for the watchers and the members just below them.
func (b *bully) deferral() int {
	n := b.n
	if !n.fanningOut() {
		return 0
	}
	above := b.liveVotersAbove()
	band := n.electionBand()
	if bands := (above - 1 + band - 1) / band; bands > 1 {
		return (bands - 1) * n.cfg.AnswerTimeout
	}
	return 0
}

// ask sends this candidate's ELECTIONs (or declares when no one is above).
func (b *bully) ask() {
	n := b.n
	if n.cfg.Mode == View {
		b.asked = b.stageOneTarget()
		if b.asked == "" {
			b.excluded = ""
			b.declare()
			return
		}
		b.stage = 1
		n.send(Message{Type: MsgElection, To: b.asked})
		if b.asked == n.det.suspect && n.preVoteNeeded() {
			// The top survivor asks the silent coordinator and, at the
			// same time, others whether they hear it: a grant (they do
			// not either) corroborates the suspicion, and it wins without
			// waiting T for an answer that a crashed coordinator never
			// sends. A lone false suspicion gets no grant.
			n.beginPreVote(preVoteElection, "")
		}
	} else {
		sent := false
		b.higher(func(p Peer) bool {
			n.send(Message{Type: MsgElection, To: p.ID})
			sent = true
			return true
		})
		if !sent {
			b.excluded = ""
			b.declare()
			return
		}
	}
	b.excluded = ""
	b.phase, b.timer = bullyWaitAnswer, n.cfg.AnswerTimeout
}

// stageOneTarget is the one peer a View-mode candidate asks first: the
// highest live voter above it, passing over the coordinator the heartbeat
// detector gave up on (Node.suspect) when anyone else is above. So when all
// survivors miss the same heartbeats, only the top survivor waits T on the
// silent coordinator; the rest wait for the top survivor (awaitSenior), or
// ask it when that wait runs out, instead of each waiting T in vain and
// then asking every node above it (O(n²) messages in a burst, which
// overloads a large cluster). awaitSenior uses it to find the senior. A false
// suspicion still costs no new term: the suspect is asked by the top
// survivor and, alive, re-announces itself.
func (b *bully) stageOneTarget() string {
	target, suspect := "", ""
	b.higher(func(p Peer) bool {
		if p.ID == b.n.det.suspect {
			suspect = p.ID
			return true
		}
		target = p.ID
		return false
	})
	if target == "" {
		return suspect
	}
	return target
}

// declare: no higher-rated site answered within T (§1 step 2). In View
// mode the term is raised only once a pre-vote has passed (preVoted).
func (b *bully) declare() {
	n := b.n
	if n.pv.active && n.pv.kind == preVoteElection {
		b.phase = bullyPreVote // started with the question to the suspect
		return
	}
	if b.hint == "" && n.preVoteNeeded() { // a hand-off needs no pre-vote
		b.phase = bullyPreVote
		n.beginPreVote(preVoteElection, b.hint)
		return
	}
	b.win()
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

// win raises the term and announces this node.
func (b *bully) win() {
	n := b.n
	t := n.nextTerm()
	if !n.mayRaiseTo(t) {
		n.refuseTerm() // past MaxEpoch, or beyond the epoch allowance (term.go)
		return
	}
	n.becomeCoordinator(t)
	b.announce(t)
	if n.cfg.QuorumSize > 0 {
		n.heartbeat() // collect the acks that confirm us
	}
}

// announce sends COORDINATOR in term t to the members that hear it now
// (announcedTo), highest-rated first: a node's messages leave one after
// another (a TCP connection each in the runtime), and the watchers, whose
// detectors act on the old coordinator's silence, are the members just
// below; at the end of a list in ring order they heard the announcement
// hundreds of ms late in a 1,000-member cluster, and elected meanwhile.
//
// With the guard in a fanned-out view, the non-voters hear the
// announcement once a majority has confirmed the lease
// (announceConfirmed): they report a coordinator only when it holds one,
// and they hear a heartbeat once a rotation period (about 10 s among
// 1,000 members), so an announcement now would leave them reporting none
// until then.
//
// In a fanned-out view the members that hear the heartbeats only in
// rotation get the announcement best effort (one datagram each in the
// runtime, not a TCP connection): their next heartbeat, a rotation period
// later, makes up for a lost one. The members that hear every round, whose
// detectors act, get it reliably.
func (b *bully) announce(t Term) {
	n := b.n
	deferRest := n.cfg.QuorumSize > 0 && n.fanningOut()
	n.guard.announceRest = deferRest
	if n.cfg.Mode == View && !deferRest {
		n.reserve(n.liveCount() - 1) // the live peers: one allocation, not a doubling series
	}
	lossy := n.fanningOut()
	var ws []string
	if lossy {
		ws = n.watchers(make([]string, 0, n.cfg.HeartbeatWatchers), n.self.ID)
	}
	r := n.view.r
	for k := r.Len() - 1; k >= 0; k-- {
		if p := r.ByRank(k); b.announcedTo(p, deferRest) {
			n.send(Message{Type: MsgCoordinator, To: p.ID, Coordinator: n.self.ID, Term: t, BestEffort: lossy && !n.fast(p, ws)})
		}
	}
}

// announcedTo reports whether member p hears this node's announcement now:
// a live peer (a voter when the non-voters' is deferred); in Textbook mode
// one of the sites below this node (§1 step 2) or a non-voter, in View
// mode every one, so that a resigned or silent higher node learns at once
// too.
func (b *bully) announcedTo(p Peer, deferRest bool) bool {
	n := b.n
	if p.ID == n.self.ID || !n.view.alive(p.ID) || deferRest && p.NonVoter {
		return false
	}
	return n.cfg.Mode == View || p.NonVoter || p.Rank().Compare(n.rank()) < 0
}

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
	case n.self.NonVoter || n.hand.yielded && n.coordinator == "" || n.backingOff() || n.cutOff():
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
		case n.coordinator == n.self.ID && n.cfg.QuorumSize > 0:
			// The coordinator's own election would name it again at
			// once; with the guard it announces itself to the sender in
			// the term it holds instead of a new one, which would throw
			// away its lease (its followers acknowledge no other term
			// until their promises run out) and, when it is cut off
			// from the majority, restart its wait to abdicate.
			n.send(Message{Type: MsgCoordinator, To: m.From, Coordinator: n.self.ID})
		case n.cfg.QuorumSize > 0 && b.vouches(m.From):
			// It follows a coordinator that holds a majority lease and
			// outranks the sender: its own election would end only in
			// that coordinator's announcement, and meanwhile it and every
			// member above it would stop following. A member cut off from
			// that coordinator disturbed the majority so every T' (issue
			// 13); its detector starts an election when it stops hearing
			// the coordinator.
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
		n.cfg.QuorumSize > 0 && !n.guard.confirmed {
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

// askPair: View mode, a fanned-out cluster, the wait for the senior's
// announcement ran out, and the senior and the suspect are the only live
// voters above this node (a surviving watcher when the coordinator and
// its first watcher crashed together). It asks both at once and, as the
// top survivor does with the suspect alone (ask), whether others still
// hear a coordinator: a grant corroborates the suspect's silence, and the
// senior has had H + T + RoundTrip since this node's detector fired to
// announce itself, so it wins one pre-vote round trip later instead of
// waiting T for the senior and then T for the suspect. An ANSWER or a
// COORDINATOR from either ends it. It reports false, asking nobody,
// otherwise.
func (b *bully) askPair(senior string) bool {
	n := b.n
	if !n.fanningOut() || senior == "" || n.det.suspect == "" || senior == n.det.suspect {
		return false
	}
	others := false
	b.higher(func(p Peer) bool {
		others = p.ID != senior && p.ID != n.det.suspect
		return !others
	})
	if others {
		return false
	}
	b.stage, b.asked, b.pair = 1, senior, true
	b.higher(func(p Peer) bool { // the senior, and the suspect while the view holds it alive
		n.send(Message{Type: MsgElection, To: p.ID})
		return true
	})
	if n.preVoteNeeded() {
		n.beginPreVote(preVoteElection, "")
	}
	b.excluded = ""
	b.phase, b.timer = bullyWaitAnswer, n.cfg.AnswerTimeout
	return true
}

// escalate: View mode, the peer asked first stayed silent; ask the other
// live peers above us. In a small cluster it asks them all at once. When
// the coordinator's heartbeats fan out (n > W + B + 1) it asks them a band
// at a time, top down (electionBand), and the next band only when nobody
// answered within T; it declares only when nobody above it answered. The first band holds the watchers, which detect a crash first
// and hold their own elections, so a candidate far down normally asks
// about 9 members, not the hundreds above it: asking them all, every
// candidate of a failover that many members noticed at once (a starved
// process) would send O(n) ELECTIONs, O(n²) in all. It reports whether
// anyone was asked.
func (b *bully) escalate() bool {
	n := b.n
	first := b.stage == 1
	b.stage, b.more = 2, false
	band := n.electionBand()
	sent := 0
	b.higher(func(p Peer) bool {
		if p.ID == b.asked || !first && p.Rank().Compare(b.floor) >= 0 {
			return true // asked already
		}
		if sent == band {
			b.more = true
			return false
		}
		n.send(Message{Type: MsgElection, To: p.ID})
		sent++
		b.floor = p.Rank()
		return true
	})
	if sent > 0 {
		b.phase, b.timer = bullyWaitAnswer, n.cfg.AnswerTimeout
	}
	return sent > 0
}

// electionBand bounds a band of escalate's questions: the first
// max(escalateBand, W) live peers above the candidate are the watchers and
// those just below them. Unbounded (every peer above) when the heartbeats
// do not fan out, as in the text.
func (n *Node) electionBand() int {
	if !n.fanningOut() {
		return -1
	}
	return max(escalateBand, n.cfg.HeartbeatWatchers)
}

// escalateBand is the number of peers above it that a candidate asks at a
// time in a fanned-out cluster when the peer it asked first stays silent;
// the same bound as a wide pre-vote round's (wideAsk).
const escalateBand = wideAsk

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

// resign hands off to the member TransferTo or a preemption named, or to
// the highest live voter: it elects without us and, having no one above,
// declares at once.
func (b *bully) resign() {
	n := b.n
	if n.hand.handoffTo != "" {
		n.send(Message{Type: MsgResign, To: n.hand.handoffTo, Transfer: n.hand.handoffDirect})
		return
	}
	r := n.view.r
	for k := r.Len() - 1; k >= 0; k-- {
		p := r.ByRank(k)
		if p.ID != n.self.ID && !p.NonVoter && n.view.alive(p.ID) {
			n.send(Message{Type: MsgResign, To: p.ID})
			return
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
