package core

// The quorum round of the pre-vote (prevote.go): with the guard, or for a
// preemption check, a majority of the quorum must answer, so the round's
// first wave asks every live voter and waits at least the longest round
// trip measured lately (guardWait). Invariant: after the first wave a
// voter is asked again only when its answer is due to change: the promise
// it refused for has ended, or it is silent and the next wave is due (the
// waves' gaps double from guardWait).

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
// and its quorum rounds' answers (roundTrips.late); ok is false if it
// measured none.
func (n *Node) longestRoundTrip() (longest int, ok bool) {
	memory := n.rttMemory()
	rt := n.det.rtts
	_, longest = rt.stats(n.now, memory)
	ok = rt.measured(n.now, memory)
	if rt != nil && rt.late > 0 && n.now-rt.lateAt <= memory {
		longest, ok = max(longest, rt.late-1), true
	}
	return longest, ok
}

// measuredAnswer records the round trip of an answer to a quorum round's
// question asked at tick at (roundTrips.late).
func (n *Node) measuredAnswer(at int) {
	rt := n.det.measuring()
	r := max(n.now-at, 0)
	if r+1 >= rt.late || n.now-rt.lateAt > n.rttMemory() {
		rt.late, rt.lateAt = r+1, n.now
	}
}

// quorumRound reports whether the round in progress needs a majority's
// answers: an election's pre-vote with the guard, or a preemption check.
func (n *Node) quorumRound() bool { return n.guard.on() || n.pv.kind == preVotePreempt }

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
//     a round trip lately (longestRoundTrip) and some voter has answered
//     a question of the last wave: the first such wave comes guardWait
//     after the round's start, each later one twice as long after the
//     one before it, so a silent voter is asked again at most once per
//     measured round trip (guardWait is at least the longest).
//
// A round trip measured lately, and an answer to the last wave, say the
// network delivers: a voter still silent after them is probably lost, and
// asking it again is worth a message. Silence with nothing measured, or
// with no answer to the last wave, says the round trips may exceed the
// wait (a cold start on a slow network, or a network that slowed down
// since the round trips were measured, where every question is still on
// its way), and a wave every wait would have n members put n(n-1)
// questions on the network per wait. So a round asks a silent voter once
// while nothing is measured, and at most 1 + log2(1 + span /
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
		// it while nothing says the questions are answered at all: no
		// round trip measured lately, or no answer to the last wave yet
		// (a network slower than the round trips measured before it).
		_, measured := n.longestRoundTrip()
		silent = measured && pv.waveAnswered
		pv.gap *= 2
		pv.reaskAt = n.now + pv.gap
	}
	if silent {
		pv.waveAt, pv.waveAnswered = n.now, false
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

// answerRoundTrip measures the round trip of an answer to the round in
// progress (Node.rtts from the round's last question; a quorum round's
// own estimate from the last question to its sender), and returns the
// tick that question was asked at.
func (n *Node) answerRoundTrip(m Message) (asked int) {
	pv := &n.pv
	n.det.measuring().add(n.now, n.now-pv.asked)
	asked = pv.asked
	if a, ok := pv.asks[m.From]; ok {
		asked = a.at
		n.measuredAnswer(asked)
	}
	if asked >= pv.waveAt {
		pv.waveAnswered = true
	}
	return asked
}

// measureLate measures the round trip of an answer that came after its
// quorum round ended (the last round, or the one before it): the next
// waves and rounds wait that long (guardWait).
func (n *Node) measureLate(m Message) {
	pv := &n.pv
	if pv.preVoteWork == nil {
		return // no round asked anything
	}
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
