package core

// Pre-vote (docs/algorithms.md, "Pre-vote"; raft's §9.6 idea). In View mode
// a node raises the term only when others agree that it may: without the
// quorum guard, when a member it reaches does not hear a coordinator either
// (so a member cut off from everyone, or one whose detector fired alone,
// does not start a term that would depose a healthy coordinator when the
// link comes back); with the guard, when a majority of the quorum is free of
// its promises to another term (so a minority never raises the term, and a
// winner can gather its lease), in Textbook mode too, which that test needs
// no view for (a cut-off member deposed the majority's coordinator through
// the one member it still reached). A preemption check asks only whether a
// majority answers at all: a member that cannot reach a majority does not
// take the role from one that can.

// preVoteKind says what a pre-vote round is for.
type preVoteKind uint8

const (
	preVoteElection preVoteKind = iota // may this node raise the term?
	preVotePreempt                     // can this node reach a majority?
)

// preVoteRound is the node's pre-vote in progress.
type preVoteRound struct {
	active bool // first: read at every tick and input (Node.ticksToDeadline)
	kind   preVoteKind
	wide   bool   // no guard: every live voter was asked, not only the nearest
	timer  int    // ticks left before the next step (re-ask, widen, give up)
	round  uint64 // sent in Seq; answers carry it back
	// asked is the tick the round was last asked at. Node.rtts, which
	// the ring timers read, takes every answer's round trip as measured
	// from it (too short for the answer to an earlier question); a
	// quorum round also measures each answer from the last question to
	// its voter (asks, late), since a voter bound by a promise grants
	// only when asked after it ends.
	asked    int
	deadline int // guard: tick at which the round is given up
	hint     string
	granted  map[string]bool // voters that granted (election) or answered (preempt)
	// refused: with the guard, the voters that refused this round (an
	// answer all the same: a round that fails with a majority answering
	// failed for promises, not for slowness).
	refused map[string]bool
	// asks: in a quorum round (askQuorum), each voter asked: the tick it
	// was last asked at, from which its answer's round trip is measured,
	// and, while it refuses for a promise, the tick that promise ends.
	// lastAsks is asks of the round before, whose late answers measure
	// their round trips too.
	asks, lastAsks map[string]quorumAsk
	// late is the longest round trip a quorum round's answers took
	// lately, plus one (0: none), and lateAt the tick it was measured:
	// the pre-vote's own estimate, beside Node.rtts, which holds what
	// the ring timers read. Each answer is measured from the question
	// it answers, late answers to the round before included.
	late, lateAt int
	// gap is how long a quorum round waits before it asks again the
	// voters that have not answered, and reaskAt the tick it does: gap
	// starts at the round's wait for answers (guardWait) and doubles with
	// each such wave.
	gap, reaskAt int
	// others is sampleWide's buffer: the rank positions of the eligible
	// voters that are not watchers.
	others []int32
	// slow counts this node's election pre-votes in a row that nobody
	// answered in time (with the guard: fewer than a majority); each
	// doubles the next one's wait for answers (slowWait, guardWait).
	slow int
	// pslow is slow for preemption checks: checks in a row that fewer
	// than a majority answered, each doubling the next one's wait; a
	// check that succeeds, or a new coordinator to displace, ends it.
	pslow int
	// term is the node's term when the round began; interrupted says
	// that following a coordinator ended the round before it decided
	// (follow), so that a new round of the same term before the old
	// one's deadline resumes it (beginPreVote).
	term        Term
	interrupted bool
}

// maxSlow caps preVoteRound.slow: a round waits at most 16 times T.
const maxSlow = 4

// slowWait is how long a pre-vote round without the guard waits for its
// answers: T, doubled for each round in a row that nobody answered in
// time. The answers are only late when every member is slow: a process
// starved of CPU (64 members in one process on 2 shared cores), where a
// question and its answer take longer than 2 T: with a fixed wait every
// round would fail, the late grants be dropped, and nobody raise the
// term. A member that is cut off waits longer between its
// failed rounds, which costs nothing: nobody answers it anyway.
func (n *Node) slowWait() int { return n.cfg.AnswerTimeout << n.pv.slow }

// cutOff reports, with the guard, that this node's last election
// pre-vote failed for want of answers from a majority (not for their
// promises): it cannot win now, so it does not answer a lower member's
// ELECTION either (bully.onElection). In Textbook mode a coordinator cut
// off with a few members it still reached answered their ELECTIONs, its
// own pre-votes failed, and they waited for its announcement and started
// again, every T', for ever: the 15 others of 16 elected nobody in 30 s
// (explore-found 14-textbook-guard-…-seed5674). A pre-vote that a
// majority answers, or a change in the view, ends it.
// Textbook mode only: in View mode a candidate asks the members its view
// holds alive, and one it cannot reach leaves the view.
func (n *Node) cutOff() bool { return n.guard.on() && n.cfg.Mode == Textbook && n.pv.slow > 0 }

// guardWait is how long a quorum round (quorumRound) waits for the
// answers to a wave of its questions: twice RoundTrip, doubled for each
// round in a row that fewer than a majority answered (slow; pslow for
// preemption checks, whose slowness says nothing of an election's), or
// one tick more than the longest round trip this node measured lately
// (longestRoundTrip) if that is longer; at most 2 * RoundTrip << maxSlow.
// The round's span is this wait past the promises it may have to outlast
// (beginPreVote): a round whose voters answer within the round trips
// measured lately ends with their answers, and on a network slower than
// RoundTrip, before anything is measured, the spans grow with the failed
// rounds.
func (n *Node) guardWait() int {
	slow := n.pv.slow
	if n.pv.kind == preVotePreempt {
		slow = n.pv.pslow
	}
	wait := 2 * n.cfg.RoundTrip << slow
	if longest, ok := n.longestRoundTrip(); ok && longest >= wait {
		wait = min(longest+1, 2*n.cfg.RoundTrip<<maxSlow)
	}
	return wait
}

// longestRoundTrip returns the longest round trip this node measured
// lately (within rttMemory): its ring hops' and pre-votes' (Node.rtts),
// and its quorum rounds' answers (preVoteRound.late); ok is false if it
// measured none.
func (n *Node) longestRoundTrip() (longest int, ok bool) {
	memory := n.rttMemory()
	_, longest = n.det.rtts.stats(n.now, memory)
	ok = n.det.rtts.measured(n.now, memory)
	if pv := &n.pv; pv.late > 0 && n.now-pv.lateAt <= memory {
		longest, ok = max(longest, pv.late-1), true
	}
	return longest, ok
}

// measuredAnswer records the round trip of an answer to a quorum round's
// question asked at tick at (preVoteRound.late).
func (n *Node) measuredAnswer(at int) {
	pv := &n.pv
	r := max(n.now-at, 0)
	if r+1 >= pv.late || n.now-pv.lateAt > n.rttMemory() {
		pv.late, pv.lateAt = r+1, n.now
	}
}

// quorumRound reports whether the round in progress needs a majority's
// answers: an election's pre-vote with the guard, or a preemption check.
func (n *Node) quorumRound() bool { return n.guard.on() || n.pv.kind == preVotePreempt }

// preVoteNeeded reports whether raising the term needs a pre-vote: with
// the guard, a majority of more than one (or a promise of this node's own)
// in either mode, except for a sitting Textbook coordinator; without it,
// View mode with at least one other live voter (a member alone in its
// view decides alone), or a member alone that is held back (soloHeld): its
// round asks nobody, fails, and the election is abandoned.
func (n *Node) preVoteNeeded() bool {
	if n.guard.on() {
		if n.cfg.Mode != View && n.coordinator == n.self.ID {
			return false // Textbook bully: a lower member's ELECTION makes it win anew
		}
		return n.guard.needsOthers() || n.guard.bound(n.now, n.term)
	}
	if n.cfg.Mode != View {
		return false
	}
	return n.otherVoterAlive() || n.soloHeld()
}

// The lone member (docs/design.md, "Pre-vote"): a member alone in its view
// leads without asking anyone, so that the lone survivor of a crash can
// lead. But a member whose last two or more voters leave its view within
// SoloDelay of each other is more likely cut off itself (Lifeguard's local
// suspicion: the common factor of many failures is oneself) than the
// survivor of simultaneous crashes: it does not raise the term until
// SoloDelay after the departure that left it with one voter, so that a
// partition shorter than SoloDelay heals with the coordinator's term
// unchanged. A member that loses its voters further apart than that, or a
// member of two that loses its one peer, leads at once.

// noteDeparture is told of a member that has just left the view: the
// departure of a voter that leaves another one alive opens the window.
func (n *Node) noteDeparture(id string) {
	// The view changed: answers may come at once now, or nobody is left
	// to ask (a lone member decides alone), so the waits start over.
	if n.pv.slow > 0 {
		n.pv.slow = 0
		n.pv.timer = min(n.pv.timer, n.cfg.AnswerTimeout)
	}
	if p, ok := n.view.r.Get(id); ok && !p.NonVoter && n.otherVoterAlive() {
		n.start.soloUntil = n.now + n.cfg.SoloDelay
	}
}

// soloHeld reports whether this member, alone in its view, is held back
// from raising the term (without the guard; the guard's own rule decides
// with it).
func (n *Node) soloHeld() bool {
	return !n.guard.on() && n.now < n.start.soloUntil && !n.otherVoterAlive()
}

// beginPreVote starts a round. hint names a coordinator that resigned to
// this node: members that still follow it do not count it as heard.
func (n *Node) beginPreVote(kind preVoteKind, hint string) {
	pv := &n.pv
	if pv.interrupted && kind == preVoteElection && pv.term == n.term && n.quorumRound() && n.now < pv.deadline {
		// A late heartbeat of the coordinator this round was for ended
		// it, and the coordinator failed again: the round's questions
		// are still on their way and their answers count, so it goes
		// on. Asking every voter afresh at each such interruption puts
		// n(n-1) questions on the network per late heartbeat when every
		// voter is a candidate.
		pv.interrupted, pv.active = false, true
		n.preVoteDecide()
		if pv.active {
			n.quorumTimer()
		}
		return
	}
	pv.round++
	pv.term, pv.interrupted = n.term, false
	pv.kind, pv.active, pv.wide, pv.hint = kind, true, false, hint
	clear(pv.granted)
	clear(pv.refused)
	if pv.granted == nil {
		pv.granted, pv.refused = make(map[string]bool), make(map[string]bool)
		pv.asks, pv.lastAsks = make(map[string]quorumAsk), make(map[string]quorumAsk)
	}
	pv.asks, pv.lastAsks = pv.lastAsks, pv.asks
	clear(pv.asks)
	if n.quorumRound() {
		pv.deadline = n.now + n.cfg.QuorumLease + n.cfg.LeaseMargin + n.guardWait()
		n.askQuorum(true)
		n.preVoteDecide()
		return
	}
	if n.askPreVote(false) == 0 {
		n.askPreVote(true)
		pv.wide = true
	}
}

// askPreVote sends the question of a round without the guard. A first
// round goes to the two live voters nearest below this node by rank (above
// when there are none below), skipping the suspect and the hint; a wide
// one to every live voter, or to wideAsk of them (sampleWide) in a larger
// cluster, the watchers first when the coordinator's rounds fan out. It
// returns how many were asked.
func (n *Node) askPreVote(wide bool) int {
	pv := &n.pv
	r := n.view.r
	self := r.RankOf(r.Index(n.self.ID))
	asked := 0
	eligible := func(p Peer) bool { return n.mayAskPreVote(p, wide) }
	ask := func(p Peer) bool {
		if !eligible(p) {
			return true
		}
		n.send(Message{Type: MsgPreVote, To: p.ID, Seq: pv.round, Coordinator: pv.hint, Preempt: pv.kind == preVotePreempt})
		asked++
		return wide || asked < 2
	}
	if !wide || !n.sampleWide(self, eligible, ask) {
		for k := self - 1; k >= 0 && ask(r.ByRank(k)); k-- {
		}
		if wide || asked == 0 {
			for k := self + 1; k < r.Len() && ask(r.ByRank(k)); k++ {
			}
		}
	}
	pv.timer, pv.asked = n.slowWait(), n.now
	return asked
}

// mayAskPreVote reports whether a round without the guard asks p: a live
// voter other than this node that has not granted it yet and, unless the
// round is wide, neither the suspect nor the hint.
func (n *Node) mayAskPreVote(p Peer, wide bool) bool {
	return p.ID != n.self.ID && !p.NonVoter && n.view.alive(p.ID) && !n.pv.granted[p.ID] &&
		(wide || p.ID != n.det.suspect && p.ID != n.pv.hint)
}

// quorumAsk is what a quorum round keeps of one voter it asked: the tick
// of its last question, and the tick the promise it refused for ends (0:
// none known).
type quorumAsk struct{ at, free int }

// askQuorum sends a wave of a quorum round's questions (quorumRound). A
// majority must answer, so the first wave goes to every live voter; after
// it, a voter that has not granted is asked again only when its answer is
// due to change:
//
//   - one that refused for a promise, once that promise ends (its refusal
//     said when): one question per answer it gave, so at most one per
//     round trip to it;
//   - one that has not answered (or refused because it leads), in the
//     next wave to the silent voters, and only if this node has measured
//     a round trip lately (longestRoundTrip): the first such wave comes
//     guardWait after the round's start, each later one twice as long
//     after the one before it, so a silent voter is asked again at most
//     once per measured round trip (guardWait is at least the longest).
//
// A round trip measured lately says the network delivers: a voter still
// silent after it is probably lost, and asking it again is worth a
// message. Silence with nothing measured says the round trips may exceed
// the wait (a cold start on a slow network, where every question is
// still on its way), and a wave every wait would have n members put
// n(n-1) questions on the network per wait. So a round asks a silent
// voter once while nothing is measured, and at most 1 + log2(1 + span /
// guardWait) times in all (3 at the defaults), where the span is
// QuorumLease + LeaseMargin + guardWait; plus once for each refusal the
// voter sends it.
func (n *Node) askQuorum(first bool) {
	pv := &n.pv
	r := n.view.r
	self := r.RankOf(r.Index(n.self.ID))
	silent := first
	if !first && n.now >= pv.reaskAt {
		// The next wave to the silent voters is due: send it, or skip
		// it while nothing says the questions are answered at all.
		_, silent = n.longestRoundTrip()
		pv.gap *= 2
		pv.reaskAt = n.now + pv.gap
	}
	ask := func(p Peer) {
		if p.ID == n.self.ID || p.NonVoter || !n.view.alive(p.ID) || pv.granted[p.ID] {
			return
		}
		if a := pv.asks[p.ID]; a.free > n.now || a.free == 0 && !silent {
			return // bound by its promise still, or not due
		}
		pv.asks[p.ID] = quorumAsk{at: n.now}
		n.send(Message{Type: MsgPreVote, To: p.ID, Seq: pv.round, Coordinator: pv.hint, Preempt: pv.kind == preVotePreempt})
	}
	for k := self - 1; k >= 0; k-- {
		ask(r.ByRank(k))
	}
	for k := self + 1; k < r.Len(); k++ {
		ask(r.ByRank(k))
	}
	if first {
		pv.gap = n.guardWait()
		pv.reaskAt = n.now + pv.gap
	}
	pv.asked = n.now
	n.quorumTimer()
}

// measured reports whether a round trip was measured within the last
// memory ticks.
func (r *roundTrips) measured(now, memory int) bool {
	for j, x := range r.s {
		if x != 0 && now-int(r.at[j]) <= memory {
			return true
		}
	}
	return false
}

// quorumTimer sets a quorum round's timer to its next step: the next wave
// to its silent voters, the end of a promise that holds a voter (or this
// node) back, or its deadline.
func (n *Node) quorumTimer() {
	pv := &n.pv
	next := min(pv.reaskAt, pv.deadline)
	for _, a := range pv.asks {
		if a.free > n.now {
			next = min(next, a.free)
		}
	}
	if n.guard.promised(n.now) {
		next = min(next, n.guard.grantEnd)
	}
	pv.timer = max(next-n.now, 1)
}

// wideAsk bounds a wide pre-vote round without the guard. One grant is
// all such a round needs, and asking every live voter costs O(n) messages
// a round: the wide rounds of members whose answers come late (a process
// starved of CPU) would then starve it further.
const wideAsk = 8

// sampleWide asks the wide round of an election's pre-vote without the
// guard when more than wideAsk + 2 voters are eligible (else it asks
// nobody and reports false: the round asks them all, as always). When the
// coordinator's rounds fan out it asks the watchers first: the W
// top-rated eligible voters other than the suspect, who hear every
// heartbeat round and are the ones that act on its silence, so a lone
// suspicion (a newcomer that missed its first heartbeat, a member whose
// loop ran late) is answered by those who know. It fills the rest of the
// round's wideAsk questions (at least one, if W ≥ wideAsk) with the other
// eligible voters, consecutive in rank order going down from this node
// (round the top), from an offset that moves on with each round, so that
// the rounds of a node that keeps failing come to ask every voter in turn
// (a member on the majority side of a partition whose nearest voters by
// rank and whose watchers are on the other side finds one of its own).
func (n *Node) sampleWide(self int, eligible, ask func(Peer) bool) bool {
	r := n.view.r
	size := r.Len()
	watcher := size // the watchers are the eligible voters from this rank position up, but the suspect
	if n.fanningOut() {
		for k, got := size-1, 0; k >= 0 && got < n.cfg.HeartbeatWatchers; k-- {
			if p := r.ByRank(k); p.ID != n.det.suspect && eligible(p) {
				watcher, got = k, got+1
			}
		}
	}
	others, total := n.pv.others[:0], 0
	for k := 1; k < size; k++ {
		rk := (self - k + size) % size
		if p := r.ByRank(rk); eligible(p) {
			total++
			if rk < watcher || p.ID == n.det.suspect {
				others = append(others, int32(rk))
			}
		}
	}
	n.pv.others = others
	if total <= wideAsk+2 {
		return false
	}
	for k := size - 1; k >= watcher; k-- {
		if p := r.ByRank(k); p.ID != n.det.suspect {
			ask(p)
		}
	}
	fill := max(wideAsk-(total-len(others)), 1)
	if len(others) == 0 {
		return true
	}
	fill = min(fill, len(others))
	from := int(n.pv.round%uint64((len(others)+fill-1)/fill)) * fill
	for i := range fill {
		ask(r.ByRank(int(others[(from+i)%len(others)])))
	}
	return true
}

// onPreVote answers a pre-vote. A non-voter does not answer.
func (n *Node) onPreVote(m Message) {
	if n.self.NonVoter {
		n.drop(DropUnexpected)
		return
	}
	ok, heard := n.grantsPreVote(m)
	if g, is := n.alg.(interface{ grantedElection(string) }); is && ok && !m.Preempt {
		g.grantedElection(m.From)
	}
	a := Message{Type: MsgPreVoteAck, To: m.From, Seq: m.Seq, Granted: ok, Coordinator: heard}
	if !ok && heard == "" && n.guard.on() {
		a.PromiseLeft = uint32(n.guard.freeIn(n.now)) // refused for a promise: free then
	}
	n.send(a)
}

// grantsPreVote decides an answer; heard names the coordinator this node
// still hears when that is why it refuses.
func (n *Node) grantsPreVote(m Message) (ok bool, heard string) {
	if m.Preempt {
		return true, "" // the answer itself is what counts
	}
	leading := n.coordinator == n.self.ID && n.state == StateCoordinator
	if n.guard.on() {
		if leading {
			return false, n.self.ID
		}
		return !n.guard.promised(n.now), ""
	}
	c := n.coordinator
	if leading || c != "" && c != m.From && c != m.Coordinator && n.det.misses < n.cfg.HeartbeatMisses-1 && n.view.alive(c) {
		return false, c
	}
	return true, ""
}

// onPreVoteAck counts an answer to the round in progress.
func (n *Node) onPreVoteAck(m Message) {
	pv := &n.pv
	p, ok := n.view.r.Get(m.From)
	if !pv.active || m.Seq != pv.round || !ok || p.NonVoter {
		if ok && !p.NonVoter {
			n.measureLate(m)
		}
		n.drop(DropUnexpected)
		return
	}
	asked := n.answerRoundTrip(m)
	if pv.kind == preVotePreempt || m.Granted {
		pv.granted[m.From] = true
		n.preVoteDecide()
		return
	}
	n.preVoteRefused(m, asked)
}

// answerRoundTrip measures the round trip of an answer to the round in
// progress (Node.rtts from the round's last question; a quorum round's
// own estimate from the last question to its sender), and returns the
// tick that question was asked at.
func (n *Node) answerRoundTrip(m Message) (asked int) {
	pv := &n.pv
	n.det.rtts.add(n.now, n.now-pv.asked)
	asked = pv.asked
	if a, ok := pv.asks[m.From]; ok {
		asked = a.at
		n.measuredAnswer(asked)
	}
	return asked
}

// preVoteRefused counts a refusal of the round in progress, m, whose
// question was asked at tick asked.
func (n *Node) preVoteRefused(m Message, asked int) {
	pv := &n.pv
	pv.refused[m.From] = true
	if n.guard.on() && m.PromiseLeft > 0 {
		// Refused for a promise that runs out in PromiseLeft ticks: ask it
		// again then rather than a wave later (the promises of the old
		// coordinator's followers run out together, a little after their
		// detectors give up on it).
		pv.asks[m.From] = quorumAsk{at: asked, free: n.now + int(m.PromiseLeft)}
		pv.timer = min(pv.timer, int(m.PromiseLeft))
	}
	c := m.Coordinator
	if !n.guard.on() && c != "" && c != n.self.ID && m.Term.Tag() == Tag(c) && m.Term >= n.term {
		// Refused: the answerer hears c. Follow c on its word; its own
		// heartbeats (or their absence) decide from here.
		n.endPreVote()
		n.follow(c, m.Term, false)
		n.det.relayed = c
	}
}

// measureLate measures the round trip of an answer that came after its
// quorum round ended (the last round, or the one before it): the next
// waves and rounds wait that long (guardWait).
func (n *Node) measureLate(m Message) {
	pv := &n.pv
	var asks map[string]quorumAsk
	switch m.Seq {
	case pv.round:
		asks = pv.asks
	case pv.round - 1:
		asks = pv.lastAsks
	}
	if a, ok := asks[m.From]; ok {
		n.measuredAnswer(a.at)
	}
}

// preVoteDecide ends the round when it has what it needs: a majority of
// the quorum (this node included when it is free) with the guard or for a
// preemption check, one grant without it.
func (n *Node) preVoteDecide() {
	pv := &n.pv
	votes := len(pv.granted)
	need := 1
	if n.quorumRound() {
		need = n.majority() - 1 // this node counts itself...
		if pv.kind == preVoteElection && n.guard.promised(n.now) {
			need++ // ...unless a promise of its own still holds
		}
	}
	if votes < need {
		return
	}
	kind := pv.kind
	n.endPreVote()
	switch kind {
	case preVoteElection:
		pv.slow = 0
		n.guard.setIsolated(false)
		n.enter().preVoted()
	case preVotePreempt:
		pv.pslow = 0
		n.guard.setIsolated(false)
		n.sendPreempt()
	}
}

// majority is a majority of the configured size; without the guard, of the
// voters in the view.
func (n *Node) majority() int {
	if n.guard.on() {
		return n.guard.majority()
	}
	v := 0
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); !p.NonVoter && n.view.alive(p.ID) {
			v++
		}
	}
	return v/2 + 1
}

func (n *Node) endPreVote() { n.pv.active = false }

// tickPreVote re-asks, widens or gives up the round in progress.
func (n *Node) tickPreVote() {
	pv := &n.pv
	if !pv.active {
		return
	}
	if pv.timer--; pv.timer > 0 {
		return
	}
	n.preVoteDecide() // a promise of this node's own may have run out
	if !pv.active {
		return
	}
	switch {
	case n.quorumRound():
		if n.now < pv.deadline {
			n.askQuorum(false)
			return
		}
	case !pv.wide:
		pv.wide = true
		if n.askPreVote(true) > 0 {
			return
		}
	}
	n.preVoteFailed()
}

// preVoteFailed gives the round up: nobody that could agree answered. An
// election is abandoned (the node tries again when its idle timer runs
// out); a preemption waits PreemptRetry before it is checked again.
func (n *Node) preVoteFailed() {
	kind := n.pv.kind
	n.endPreVote()
	if kind == preVoteElection && !n.preVoteNeeded() {
		// Every other voter has left the view meanwhile: this node
		// decides alone, as it would have from the start.
		n.enter().preVoted()
		return
	}
	if kind == preVotePreempt {
		if len(n.pv.granted) < n.majority()-1 {
			n.pv.pslow = min(n.pv.pslow+1, maxSlow)
		}
		n.hand.preemptAfter = n.now + n.preemptRetry()
		return
	}
	if !n.guard.on() || len(n.pv.granted)+len(n.pv.refused) < n.majority()-1 {
		n.pv.slow = min(n.pv.slow+1, maxSlow)
		n.guard.setIsolated(true) // (with the guard: fewer than a majority answered)
	}
	n.enter().reset()
	n.electing = false
	n.idle = 0
	if n.soloHeld() {
		// Alone and held: nobody to ask until a member comes back. The
		// idle timer (K intervals) fires again at the tick the hold ends:
		// the Advance that runs this (tickPreVote) counts the idle tick
		// after it, hence the one less.
		n.idle = n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses - (n.start.soloUntil - n.now) - 1
	}
	if n.state != StateSleep {
		n.setState(StateLost)
	}
}

func (n *Node) preemptRetry() int { return 2 * n.cfg.QuorumLease }
