package core

import "slices"

// The bully candidate's actions: asking the members above it, waiting for
// a senior's announcement, escalating band by band, declaring, winning and
// announcing, and resigning; what it reacts to (messages, deaths, pre-votes,
// timers) is in bullyevents.go. Invariant: a candidate asks only live
// voters ranked above it (higher), and the term is raised only in win:
// once nobody above it answered (declare, or a pre-vote that corroborated
// the suspect's silence: preVoted), or when the coordinator handed the
// role to it.

// bully is the bully algorithm (docs/algorithms.md, "Bully"; Garcia-Molina
// 1982).
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
	timer int // ticks left in the current wait
	// View mode: stage 1 asked only the top live peer, stage 2 the others
	// above (escalate): all of them, or, when the heartbeats fan out, a
	// band at a time; floor is the rank of the lowest one asked so far
	// and more says that some above us were left for the next band.
	stage int
	asked string
	floor Rank
	phase bullyPhase
	more  bool
	// pair: a surviving watcher waited out its senior, and the senior and
	// the suspect were all that was above it; it asked both at once
	// (askPair).
	pair bool
	// late: the wait for the senior ran out, but the senior had asked for
	// this node's pre-vote; it waits T' for the senior's COORDINATOR
	// (seniorTakingOver).
	late bool
	// direct: a coordinator transferred the role to this node, which
	// declares without asking anyone above it; hint names that coordinator.
	direct bool
	hint   string
	// excluded is a resigning coordinator, absent from the next election.
	excluded string
	// awaited is the suspect this node has already waited out a senior's
	// announcement for: after that wait it asks, as any candidate does.
	awaited string
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
	if r.hasNonVoters() {
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
	c := b.n.cfg
	return c.HeartbeatInterval + c.AnswerTimeout + c.RoundTrip + b.deferral()
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
	if !n.guard.holds() {
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
	deferRest := n.guard.on() && n.fanningOut()
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

// resign hands off to the member TransferTo or a preemption named, or to
// the highest live voter: it elects without us and, having no one above,
// declares at once.
func (b *bully) resign() {
	n := b.n
	if to := n.hand.handoffTo(); to != "" {
		n.send(Message{Type: MsgResign, To: to, Transfer: n.hand.handoffDirect})
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
