package core

// Pre-vote (docs/algorithms.md, "Pre-vote"; raft's §9.6 idea). In View mode
// a node raises the term only when others agree that it may: without the
// quorum guard, when a member it reaches does not hear a coordinator either
// (so a member cut off from everyone, or one whose detector fired alone,
// does not start a term that would depose a healthy coordinator when the
// link comes back); with the guard, when a majority of QuorumSize is free of
// its promises to another term (so a minority never raises the term, and a
// winner can gather its lease), in Textbook mode too, which that test needs
// no view for (a cut-off member deposed the majority's coordinator through
// the one member it still reached; issue 13). A preemption check asks only whether a
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
	// asked is the tick the round was last asked at: an answer's round
	// trip is measured from it (Node.rtts), which is too short for the
	// answer to an earlier ask; from the first ask it was too long, since
	// with the guard a voter bound by a promise grants only when asked
	// after it ends.
	asked    int
	deadline int // guard: tick at which the round is given up
	hint     string
	granted  map[string]bool // voters that granted (election) or answered (preempt)
	// refused: with the guard, the voters that refused this round (an
	// answer all the same: a round that fails with a majority answering
	// failed for promises, not for slowness).
	refused map[string]bool
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
}

// maxSlow caps preVoteRound.slow: a round waits at most 16 times T.
const maxSlow = 4

// slowWait is how long a pre-vote round without the guard waits for its
// answers: T, doubled for each round in a row that nobody answered in
// time. The answers are only late when every member is slow: a process
// starved of CPU, as 64 members in one process on 2 shared cores were
// (issue 13), where a question and its answer took longer than 2 T, so
// every round failed, the late grants were dropped, and nobody raised
// the term for minutes. A member that is cut off waits longer between its
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
func (n *Node) cutOff() bool { return n.cfg.QuorumSize > 0 && n.cfg.Mode == Textbook && n.pv.slow > 0 }

// guardWait is the same for a round with the guard, which asks again
// every guardWait until its deadline: two round trips, doubled as
// slowWait is. The guard's rounds need a majority's answers, so a host
// whose round trips exceed the round's span (a loaded 2-core machine
// under the race detector, one-way delays of 100-300 ms in the
// simulator) elected nobody for minutes before the span grew.
// A preemption check counts its own slowness (pslow): an election's says
// nothing of the coordinator it would displace (a member of a partition's
// minority, whose election rounds failed, checks at once after the heal),
// and checks asked every 2 * RoundTrip over links slower than that were
// never answered in time and never stopped (46-180 pre-votes a second in
// the simulator at one-way delays of 100 ms and more, the highest voter
// never taking over).
func (n *Node) guardWait() int {
	if n.pv.kind == preVotePreempt {
		return 2 * n.cfg.RoundTrip << n.pv.pslow
	}
	return 2 * n.cfg.RoundTrip << n.pv.slow
}

// preVoteNeeded reports whether raising the term needs a pre-vote: with
// the guard, a majority of more than one (or a promise of this node's own)
// in either mode, except for a sitting Textbook coordinator; without it,
// View mode with at least one other live voter (a member alone in its
// view decides alone), or a member alone that is held back (soloHeld): its
// round asks nobody, fails, and the election is abandoned.
func (n *Node) preVoteNeeded() bool {
	if n.cfg.QuorumSize > 0 {
		if n.cfg.Mode != View && n.coordinator == n.self.ID {
			return false // Textbook bully: a lower member's ELECTION makes it win anew
		}
		return n.cfg.QuorumSize/2 > 0 || n.bound()
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
		n.soloUntil = n.now + n.cfg.SoloDelay
	}
}

// soloHeld reports whether this member, alone in its view, is held back
// from raising the term (without the guard; the guard's own rule decides
// with it).
func (n *Node) soloHeld() bool {
	return n.cfg.QuorumSize == 0 && n.now < n.soloUntil && !n.otherVoterAlive()
}

// beginPreVote starts a round. hint names a coordinator that resigned to
// this node: members that still follow it do not count it as heard.
func (n *Node) beginPreVote(kind preVoteKind, hint string) {
	pv := &n.pv
	pv.round++
	pv.kind, pv.active, pv.wide, pv.hint = kind, true, false, hint
	clear(pv.granted)
	clear(pv.refused)
	if pv.granted == nil {
		pv.granted, pv.refused = make(map[string]bool), make(map[string]bool)
	}
	if n.cfg.QuorumSize > 0 || kind == preVotePreempt {
		pv.deadline = n.now + n.cfg.LeaseTicks + n.cfg.LeaseMargin + n.guardWait()
		n.askPreVote(true)
		n.preVoteDecide()
		return
	}
	if n.askPreVote(false) == 0 {
		n.askPreVote(true)
		pv.wide = true
	}
}

// askPreVote sends the round's question. Without the guard a first round
// goes to the two live voters nearest below this node by rank (above when
// there are none below), skipping the suspect and the hint; a wide one to
// every live voter, or to wideAsk of them (sampleWide) in a larger
// cluster, the watchers first when the coordinator's rounds fan out; with
// the guard, and for a preemption check, every round goes to every live
// voter that has not granted yet. It returns how many were asked.
func (n *Node) askPreVote(wide bool) int {
	pv := &n.pv
	r := n.view.r
	self := r.RankOf(r.Index(n.self.ID))
	asked := 0
	eligible := func(p Peer) bool {
		return p.ID != n.self.ID && !p.NonVoter && n.view.alive(p.ID) && !pv.granted[p.ID] &&
			(wide || p.ID != n.suspect && p.ID != pv.hint)
	}
	ask := func(p Peer) bool {
		if !eligible(p) {
			return true
		}
		n.send(Message{Type: MsgPreVote, To: p.ID, Seq: pv.round, Coordinator: pv.hint, Phase: uint32(pv.kind)})
		asked++
		return wide || asked < 2
	}
	if !wide || n.cfg.QuorumSize > 0 || pv.kind != preVoteElection || !n.sampleWide(self, eligible, ask) {
		for k := self - 1; k >= 0 && ask(r.ByRank(k)); k-- {
		}
		if wide || asked == 0 {
			for k := self + 1; k < r.Len() && ask(r.ByRank(k)); k++ {
			}
		}
	}
	pv.timer, pv.asked = n.slowWait(), n.now
	if n.cfg.QuorumSize > 0 || pv.kind == preVotePreempt {
		pv.timer = n.guardWait()
	}
	return asked
}

// wideAsk bounds a wide pre-vote round without the guard. One grant is
// all such a round needs, and asking every live voter costs O(n) messages
// a round: at 64 members in one process (issue 13) the wide rounds of
// members whose answers came late (a process starved of CPU) were 2,000
// pre-votes a second, which starved it further (docs/reliability.md, "64
// members on real memberlist").
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
			if p := r.ByRank(k); p.ID != n.suspect && eligible(p) {
				watcher, got = k, got+1
			}
		}
	}
	others, total := n.pv.others[:0], 0
	for k := 1; k < size; k++ {
		rk := (self - k + size) % size
		if p := r.ByRank(rk); eligible(p) {
			total++
			if rk < watcher || p.ID == n.suspect {
				others = append(others, int32(rk))
			}
		}
	}
	n.pv.others = others
	if total <= wideAsk+2 {
		return false
	}
	for k := size - 1; k >= watcher; k-- {
		if p := r.ByRank(k); p.ID != n.suspect {
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
	if g, is := n.alg.(interface{ grantedElection(string) }); is && ok && preVoteKind(m.Phase) == preVoteElection {
		g.grantedElection(m.From)
	}
	a := Message{Type: MsgPreVoteAck, To: m.From, Seq: m.Seq, Confirmed: ok, Coordinator: heard}
	if !ok && heard == "" && n.cfg.QuorumSize > 0 {
		a.Phase = uint32(n.grantEnd - n.now) // refused for a promise: free in Phase ticks
	}
	n.send(a)
}

// grantsPreVote decides an answer; heard names the coordinator this node
// still hears when that is why it refuses.
func (n *Node) grantsPreVote(m Message) (ok bool, heard string) {
	if preVoteKind(m.Phase) == preVotePreempt {
		return true, "" // the answer itself is what counts
	}
	leading := n.coordinator == n.self.ID && n.state == StateCoordinator
	if n.cfg.QuorumSize > 0 {
		if leading {
			return false, n.self.ID
		}
		return n.now >= n.grantEnd, ""
	}
	c := n.coordinator
	if leading || c != "" && c != m.From && c != m.Coordinator && n.misses < n.cfg.HeartbeatMisses-1 && n.view.alive(c) {
		return false, c
	}
	return true, ""
}

// onPreVoteAck counts an answer to the round in progress.
func (n *Node) onPreVoteAck(m Message) {
	pv := &n.pv
	p, ok := n.view.r.Get(m.From)
	if !pv.active || m.Seq != pv.round || !ok || p.NonVoter {
		n.drop(DropUnexpected)
		return
	}
	n.rtts.add(n.now, n.now-pv.asked)
	if pv.kind == preVotePreempt || m.Confirmed {
		pv.granted[m.From] = true
		n.preVoteDecide()
		return
	}
	pv.refused[m.From] = true
	if n.cfg.QuorumSize > 0 && m.Phase > 0 && int(m.Phase) < pv.timer {
		// Refused for a promise that runs out in Phase ticks: ask again
		// then rather than a round later (the promises of the old
		// coordinator's followers run out together, a little after their
		// detectors give up on it; issue 13).
		pv.timer = int(m.Phase)
	}
	c := m.Coordinator
	if n.cfg.QuorumSize == 0 && c != "" && c != n.self.ID && m.Term.Tag() == Tag(c) && m.Term >= n.term {
		// Refused: the answerer hears c. Follow c on its word; its own
		// heartbeats (or their absence) decide from here.
		n.endPreVote()
		n.follow(c, m.Term, false)
		n.relayed = c
	}
}

// preVoteDecide ends the round when it has what it needs: a majority of
// QuorumSize (this node included when it is free) with the guard or for a
// preemption check, one grant without it.
func (n *Node) preVoteDecide() {
	pv := &n.pv
	votes := len(pv.granted)
	need := 1
	if n.cfg.QuorumSize > 0 || pv.kind == preVotePreempt {
		need = n.majority() - 1 // this node counts itself...
		if pv.kind == preVoteElection && n.now < n.grantEnd {
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
		n.setIsolated(false)
		n.enter().preVoted()
	case preVotePreempt:
		pv.pslow = 0
		n.setIsolated(false)
		n.sendPreempt()
	}
}

// majority is a majority of the configured size; without the guard, of the
// voters in the view.
func (n *Node) majority() int {
	if n.cfg.QuorumSize > 0 {
		return n.cfg.QuorumSize/2 + 1
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
	case n.cfg.QuorumSize > 0 || pv.kind == preVotePreempt:
		if n.now < pv.deadline {
			n.askPreVote(true)
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
		n.preemptAfter = n.now + n.preemptRetry()
		return
	}
	if n.cfg.QuorumSize == 0 || len(n.pv.granted)+len(n.pv.refused) < n.majority()-1 {
		n.pv.slow = min(n.pv.slow+1, maxSlow)
		n.setIsolated(true) // (with the guard: fewer than a majority answered)
	}
	n.enter().reset()
	n.electing = false
	n.idle = 0
	if n.soloHeld() {
		// Alone and held: nobody to ask until a member comes back. The
		// idle timer (K intervals) fires again at the tick the hold ends:
		// the Advance that runs this (tickPreVote) counts the idle tick
		// after it, hence the one less.
		n.idle = n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses - (n.soloUntil - n.now) - 1
	}
	if n.state != StateSleep {
		n.setState(StateLost)
	}
}

func (n *Node) preemptRetry() int { return 2 * n.cfg.LeaseTicks }
