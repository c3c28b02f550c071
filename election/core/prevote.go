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
	if pv.preVoteWork == nil {
		pv.preVoteWork = &preVoteWork{granted: make(map[string]bool), refused: make(map[string]bool),
			asks: make(map[string]quorumAsk), lastAsks: make(map[string]quorumAsk)}
	}
	pv.round++
	pv.term, pv.interrupted = n.term, false
	pv.kind, pv.active, pv.wide, pv.hint = kind, true, false, hint
	clear(pv.granted)
	clear(pv.refused)
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
		n.hand.setPreemptAfter(n.now + n.preemptRetry())
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

func (n *Node) sendPreempt() {
	if n.coordinator == "" || n.coordinator == n.self.ID {
		return
	}
	n.send(Message{Type: MsgPreempt, To: n.coordinator})
	n.hand.setPreemptAfter(n.now + n.cfg.CoordinatorTimeout + n.cfg.StopTimeout)
}
