package core

import (
	"cmp"
	"slices"
)

// The quorum guard (docs/design.md, "Leases"): a coordinator leads only
// while a majority of the quorum (Config.QuorumSize voters) acknowledges
// its heartbeat rounds, and a voter's acknowledgement is a promise to
// acknowledge no coordinator of another term until the lease it grants
// has run out (plus its margin) on its own clock. Invariant: a
// coordinator is confirmed (Check passes) only before its lease end, and
// no two coordinators of different terms hold a majority's promises at
// the same instant.
//
// The guard keeps its own books: the voter's promise (grant), the
// coordinator's rounds, acks and lease (newRound, noteAck, extend), its
// lapse and abdication with back-off (cannotLead, backOff), and
// isolation. Its methods read only its fields, its settings and their
// arguments (the tick, the term); the Node acts on what they say
// (heartbeat.go sends the rounds and the acks, confirms and steps down).
// Without the guard (QuorumSize 0) it is a no-op part: the promise, the
// rounds, the acks and the lease stay at zero, nobody is isolated, every
// coordinator holds (confirmed follows the coordinator), and its
// predicates give the answer of a cluster without the guard. The back-off serves without the guard too:
// a ring coordinator cut off from those that deposed it backs off
// (link.deposed).

// guard is the quorum guard's state of one node.
type guard struct {
	// cfg holds the settings it reads: QuorumSize (0: the guard is off)
	// and, in ticks, QuorumLease, QuorumLeaseMax, LeaseMargin and
	// HeartbeatInterval.
	cfg *Config

	confirmed bool // coordinator: it holds a lease (Status reports it)
	// announceRest: a bully winner with the guard and a fanned-out view
	// announced itself to the voters only; the others hear it once its
	// lease holds (announceConfirmed).
	announceRest bool
	// isolated: this node has found that it cannot reach a majority
	// (sitsOut).
	isolated    bool
	rttFresh    bool // coordinator: an ack was measured since the last round (rttHigh decays)
	coolUntil   int  // an abdicated node displaces no coordinator before this tick
	rttHigh     int  // coordinator: recent heartbeat round trips, high-water mark (leaseAsk)
	leaseEnd    int  // coordinator: tick at which the quorum lease lapses
	grantTerm   Term // follower: the term it last acknowledged
	grantEnd    int  // follower: until this tick it acknowledges no other term
	declared    int  // coordinator: tick it declared (became coordinator) at
	confirmedAt int  // coordinator: tick its lease was confirmed at
	failedLeads int  // leaderships in a row that lapsed or were never confirmed
	// books are a coordinator's rounds and acks, made when it first
	// leads with the guard (most nodes of a host of many names never
	// do) and kept; nil until then.
	books *leaderBooks
}

// keep returns the books, made at the first call.
func (g *guard) keep() *leaderBooks {
	if g.books == nil {
		g.books = &leaderBooks{acks: make(map[string]voterAck)}
	}
	return g.books
}

// configure sets the guard up for c (NewNode). With a quorum of more
// than one, a node that has just started may have acknowledged another
// coordinator before it restarted: it keeps that promise, unknown, which
// may have been a stretched lease (restartPromise).
func (g *guard) configure(c *Config) {
	g.cfg = c
	if g.needsOthers() {
		g.grantEnd = g.cfg.QuorumLeaseMax + g.marginFor(g.cfg.QuorumLeaseMax)
	}
}

// on reports whether the guard is on (QuorumSize > 0).
func (g *guard) on() bool { return g.cfg.QuorumSize > 0 }

// majority is a majority of the quorum.
func (g *guard) majority() int { return g.cfg.QuorumSize/2 + 1 }

// holds reports whether the coordinator this node knows (itself, or the
// one it follows) holds a majority lease, or there is no guard: without
// it every coordinator counts as confirmed.
func (g *guard) holds() bool { return g.cfg.QuorumSize == 0 || g.confirmed }

// leased reports whether, with the guard, a lease confirms the
// coordinator this node knows (holds, but false without the guard: there
// is no lease to report or to end).
func (g *guard) leased() bool { return g.cfg.QuorumSize > 0 && g.confirmed }

// counts is what a coordinator's word that its lease holds
// (Message.Confirmed) makes of it: without the guard, every coordinator
// is confirmed.
func (g *guard) counts(confirmed bool) bool { return confirmed || g.cfg.QuorumSize == 0 }

// needsOthers reports whether a majority of the quorum takes other
// voters than this node (a quorum of more than one).
func (g *guard) needsOthers() bool { return g.cfg.QuorumSize > 1 }

// sufficient is how many live voters a node must have seen to have found
// its cluster, given the expectation expect: with a quorum of more than
// one, a majority of it if that is fewer (a lease needs no more).
func (g *guard) sufficient(expect int) int {
	if g.needsOthers() {
		return min(expect, g.majority())
	}
	return expect
}

// leavesNoMajority reports whether, with the guard, failed voters leave
// fewer than a majority of the quorum.
func (g *guard) leavesNoMajority(failed int) bool {
	return g.cfg.QuorumSize > 0 && failed > g.cfg.QuorumSize-g.majority()
}

// The voter's side: its promise.

// promised reports whether a promise this node gave still holds at now.
func (g *guard) promised(now int) bool { return now < g.grantEnd }

// freeIn is how many ticks from now the promise this node gave holds
// (0 or less: none holds).
func (g *guard) freeIn(now int) int { return g.grantEnd - now }

// bound reports whether this node has promised its acknowledgement to a
// coordinator of another term than t and the promise still holds at now.
func (g *guard) bound(now int, t Term) bool { return now < g.grantEnd && g.grantTerm != t }

// restartPromise reports whether, with a quorum of more than one, this
// node is still in the hold every starting voter keeps for a promise it
// may have made before it restarted (configure), and has acknowledged
// nobody since.
func (g *guard) restartPromise(now int) bool {
	return g.needsOthers() && g.grantTerm == 0 && now < g.grantEnd
}

// grant records the promise that acknowledging round of term t, which
// asks for the lease asked (Message.Lease), gives at now, and returns
// the lease promised in its Message.Lease form; ok is false when a
// promise to another term forbids acknowledging it (or the guard is off).
// An acknowledgement is a promise: until the lease the round asks for
// (QuorumLease, or a stretched one up to QuorumLeaseMax) and its margin
// after its receipt, this node acknowledges no coordinator of another
// term, so no other coordinator can gather a majority before the lease
// it helps to hold has run out on the coordinator's clock. A promise
// only grows: a shorter lease asked later does not shorten one already
// given.
func (g *guard) grant(now int, t Term, asked uint32) (lease uint32, ok bool) {
	if g.cfg.QuorumSize == 0 || g.bound(now, t) {
		return 0, false
	}
	l := g.cfg.QuorumLease
	if asked != 0 {
		l = min(max(int(asked), g.cfg.QuorumLease), g.cfg.QuorumLeaseMax)
	}
	end := now + l + g.marginFor(l)
	if g.grantTerm == t {
		end = max(end, g.grantEnd)
	}
	g.grantTerm, g.grantEnd = t, end
	return g.wire(l), true
}

// forgetPromise drops the promise to term t: its coordinator released
// this node.
func (g *guard) forgetPromise(t Term) {
	if g.grantTerm == t {
		g.grantEnd = 0
	}
}

// settleFollower and settleLead set up, with the guard, a node put
// straight into a settled cluster in term t at now (Node.Bootstrap): a
// voter as if it had just acknowledged the coordinator, the coordinator
// as if a majority had just acknowledged it. settleLead reports whether
// the guard is on.
func (g *guard) settleFollower(now int, t Term) {
	if g.cfg.QuorumSize > 0 {
		g.grantTerm, g.grantEnd = t, now+g.cfg.QuorumLease+g.cfg.LeaseMargin
	}
}

func (g *guard) settleLead(now int, t Term) bool {
	if g.cfg.QuorumSize == 0 {
		return false
	}
	g.grantTerm, g.grantEnd = t, 0
	g.leaseEnd = now + g.cfg.QuorumLease
	return true
}

// The coordinator's side: its rounds, the acks and the lease (its books:
// leasebooks.go).

// newLeadership starts a leadership in term t at now: no acks yet, no
// lease. One declared again while no majority has confirmed it (again:
// Node.becomeCoordinator says why) keeps the tick it first declared at,
// or, if its lease lapsed, the abdication that the lapse set, an interval
// after it. The rounds of the terms it led before stay (roundOf); those
// of t, if it declares in t again, go: their numbers start again at 1.
func (g *guard) newLeadership(now int, t Term, again bool) {
	b := g.keep()
	clear(b.acks)
	declared := now
	switch {
	case again && g.leaseEnd > 0:
		declared = g.leaseEnd + g.cfg.HeartbeatInterval - g.abdicateWait() - 1
	case again:
		declared = g.declared
	}
	b.rounds = slices.DeleteFunc(b.rounds, func(r sentRound) bool { return r.term == t })
	g.leaseEnd, g.declared = 0, declared
}

// neverConfirmed reports whether, with the guard, no majority has
// confirmed this node's leadership since it declared.
func (g *guard) neverConfirmed() bool { return g.cfg.QuorumSize > 0 && g.leaseEnd == 0 }

// newRound records round seq of term t, sent at now, with the lease it
// asks for (leaseAsk), and lets the recent round trips decay: a slow
// spell is forgotten within about 16 acknowledged rounds. A round whose
// acks have not come back yet says nothing about the round trip, so the
// decay waits for an ack since the last round (rttFresh). Rounds older
// than QuorumLeaseMax go: their acks could no longer give a lease.
func (g *guard) newRound(now int, t Term, seq uint64) {
	if g.cfg.QuorumSize == 0 {
		return
	}
	if g.rttFresh {
		g.rttHigh -= (g.rttHigh + 15) / 16
		g.rttFresh = false
	}
	b := g.keep()
	b.rounds = append(trimRounds(b.rounds, now-g.cfg.QuorumLeaseMax), sentRound{term: t, seq: seq, at: now, lease: g.leaseAsk()})
}

// lastRound returns the newest round of term t, if any (rounds of the
// terms before are kept to measure their late acks).
func (g *guard) lastRound(t Term) (sentRound, bool) {
	if g.books == nil {
		return sentRound{}, false
	}
	if rs := g.books.rounds; len(rs) > 0 && rs[len(rs)-1].term == t {
		return rs[len(rs)-1], true
	}
	return sentRound{}, false
}

// wireAsk is the Message.Lease of the newest round of term t: the lease it
// asks its voters for (0: QuorumLease, or no round).
func (g *guard) wireAsk(t Term) uint32 {
	if r, ok := g.lastRound(t); ok {
		return g.wire(r.lease)
	}
	return 0
}

// roundOf finds round seq of term t, of this node's current term or of
// one it led before, if it is still remembered (rounds are kept for
// QuorumLeaseMax, across terms: a coordinator that abdicates before its
// acks come back may lead again, in a newer term, before they do).
func (g *guard) roundOf(t Term, seq uint64) (sentRound, bool) {
	if seq == 0 || g.books == nil {
		return sentRound{}, false
	}
	for _, r := range g.books.rounds {
		if r.seq == seq && r.term == t {
			return r, true
		}
	}
	return sentRound{}, false
}

// measure raises the recent round trips by that of round r, whose ack
// arrived at now.
func (g *guard) measure(now int, r sentRound) {
	g.rttHigh, g.rttFresh = max(g.rttHigh, now-r.at), true
}

// noteAck records voter from's acknowledgement of round seq, which
// promised the lease promised (Message.Lease); r is that round, when
// known. It reports false when the voter had acknowledged that round or
// a newer one already.
func (g *guard) noteAck(from string, seq uint64, r sentRound, known bool, promised uint32) bool {
	acks := g.keep().acks
	a := acks[from]
	if seq <= a.seq {
		return false
	}
	a.seq = seq
	if known {
		l := g.cfg.QuorumLease
		if promised != 0 {
			l = int(promised)
		}
		a.end = max(a.end, r.at+min(l, r.lease))
	}
	acks[from] = a
	return true
}

// extend moves the lease end of this coordinator of term t to the tick
// until which a majority of the quorum (this node included) is bound by
// its promises (quorumLeaseEnd), and reports whether that confirms a
// pending coordinator at now (it records when). A coordinator still
// bound by its own promise to another term (bound) does not count itself
// until that promise runs out: it needs acks from a majority without
// itself. Every such majority meets every majority the other term's
// lease could rest on in a member that is free of its promise to that
// term, so the leases still never overlap; and the connected majority's
// winner, often the member that still heard the cut-off coordinator (and
// so still acknowledged it), leads as soon as the others acknowledge it
// instead of a lease and a margin after its last acknowledgement of the
// old coordinator.
func (g *guard) extend(now int, t Term) bool {
	if g.cfg.QuorumSize == 0 {
		return false
	}
	if end := g.quorumLeaseEnd(t, g.bound(now, t)); end > g.leaseEnd {
		g.leaseEnd = end
	}
	if g.confirmed || now >= g.leaseEnd {
		return false
	}
	g.confirmedAt = now
	return true
}

// quorumLeaseEnd returns the tick at which the lease given by the acks so
// far lapses: the tick until which need voters besides this one are bound
// by their promises (the need-th latest of their ends, voterAck); 0 when
// fewer have acknowledged. Alone (need 0) the lease is the newest round's.
// It is a floor on the configured size, not on the live view. A bound node
// does not count itself: it needs one ack more.
func (g *guard) quorumLeaseEnd(t Term, bound bool) int {
	need := g.cfg.QuorumSize / 2 // acks needed besides our own
	if bound {
		need++
	}
	r, ok := g.lastRound(t)
	if !ok {
		return 0
	}
	if need == 0 {
		return r.at + r.lease
	}
	b := g.books // lastRound found a round: the books are kept
	if len(b.acks) < need {
		return 0
	}
	ends := b.scratch[:0]
	for _, a := range b.acks {
		ends = append(ends, a.end)
	}
	slices.SortFunc(ends, func(a, b int) int { return cmp.Compare(b, a) })
	b.scratch = ends
	return ends[need-1]
}

// verified reports whether voters that make a majority of the quorum with
// this coordinator have acknowledged round seq or a later one.
func (g *guard) verified(seq uint64) bool {
	if g.books == nil {
		return false
	}
	k := 0
	for _, a := range g.books.acks {
		if a.seq >= seq {
			k++
		}
	}
	return k >= g.cfg.QuorumSize/2
}

// lasted forgets the back-off of a confirmed coordinator whose
// leadership has lasted eight leases at now.
func (g *guard) lasted(now int) {
	if g.leased() && now-g.confirmedAt > 8*g.cfg.QuorumLease {
		g.failedLeads = 0
	}
}

// cannotLead reports whether a pending coordinator (not confirmed) cannot
// reach a majority at now: its lease lapsed an interval ago while its own
// loop ran on time (onTime: the acks are not late because it was), or no
// majority confirmed it within abdicateWait of declaring.
func (g *guard) cannotLead(now int, onTime bool) bool {
	if g.confirmed {
		return false
	}
	lapsed := g.leaseEnd > 0 && now-g.leaseEnd >= g.cfg.HeartbeatInterval && onTime
	never := g.leaseEnd == 0 && now-g.declared > g.abdicateWait()
	return lapsed || never
}

// leaseAsk is the lease this coordinator asks its voters for: QuorumLease,
// stretched while its rounds' acknowledgements come back late (a loaded
// or paused host, a slow network) to twice the recent round trip plus a
// heartbeat interval, so that a round's acks arrive within its lease and
// the next round renews it before it lapses; at most QuorumLeaseMax. A
// round trip longer than QuorumLease otherwise means no lease ever holds
// (docs/design.md, "Leases").
func (g *guard) leaseAsk() int {
	return min(max(g.cfg.QuorumLease, 2*g.rttHigh+g.cfg.HeartbeatInterval), g.cfg.QuorumLeaseMax)
}

// marginFor is the margin a voter adds to a lease of l ticks: one tick
// for the driver's rounding, and LeaseMargin - 1 scaled with the lease, so
// that a stretched lease tolerates the same clock-rate difference.
func (g *guard) marginFor(l int) int {
	if l <= g.cfg.QuorumLease {
		return g.cfg.LeaseMargin
	}
	return 1 + ((g.cfg.LeaseMargin-1)*l+g.cfg.QuorumLease-1)/g.cfg.QuorumLease
}

// wire is the Message.Lease form of a lease: 0 for QuorumLease.
func (g *guard) wire(l int) uint32 {
	if l == g.cfg.QuorumLease {
		return 0
	}
	return uint32(l)
}

// abdicateWait is how long after declaring a coordinator that no majority
// confirms waits before it abdicates: two leases and a margin, of the
// lease it asks for (a stretched one when its round trips were slow: the
// acks of its first rounds may take that long).
func (g *guard) abdicateWait() int {
	l := g.leaseAsk()
	return 2*l + g.marginFor(l)
}

// Back-off and isolation.

// backOff starts the back-off of a node that failed to lead, at now: it
// doubles with each failed leadership, from 2 leases to 64.
func (g *guard) backOff(now int) {
	g.failedLeads = min(g.failedLeads+1, 6)
	g.coolUntil = now + g.cfg.QuorumLease<<g.failedLeads
}

// backingOff reports an abdicated node's back-off at now: it does not
// stand in elections nor displace a coordinator.
func (g *guard) backingOff(now int) bool { return now < g.coolUntil }

// cooledOff reports whether a back-off has just run out at now, and ends
// it.
func (g *guard) cooledOff(now int) bool {
	if g.coolUntil == 0 || now < g.coolUntil {
		return false
	}
	g.coolUntil = 0
	return true
}

// sitsOut reports whether this node stays out of the rings' elections at
// now: it does not stand, and it refuses the hops that ask for an Ack, so
// that its predecessor passes it over (link.refuses). A node backing off
// does; so does, with the guard, a node that has found that it cannot
// reach a majority (isolated): the members of its election it gave up on
// leave fewer than a majority it reaches (link.tick), or its last
// election pre-vote failed for want of a majority's answers. A member
// that reaches only one other (a cut that memberlist's indirect probes
// hide from the view) would otherwise stay in the ring, and every lap
// through it went back to that one member: the members after it would
// hear nothing, and the active/relay ring would restart election after
// election once a deposed coordinator's back-off ran out before the
// election ended (a loaded host; docs/design.md, "Rings on a slow host").
// A pre-vote or preemption check that a majority answers, or a heartbeat
// of a confirmed coordinator, ends it.
func (g *guard) sitsOut(now int) bool { return g.backingOff(now) || g.isolated }

// setIsolated records whether this node can reach a majority (sitsOut);
// without the guard it is never isolated.
func (g *guard) setIsolated(v bool) {
	if g.isolated == v || v && g.cfg.QuorumSize == 0 {
		return
	}
	g.isolated = v
}
