package core

// Deadlines, for a driver that ticks a node only when a timer of it can
// fire (the event-driven simulator): NextDeadline says when the next tick
// that may do something is, and Skip does what the ticks before it do,
// which is only to count (silence, idle time, timers running down).
//
// Every timer that Advance runs has its entry here, in Advance's order.
// A deadline that is earlier than necessary only costs a wasted tick; one
// that is late would change what the node does, so a timer this file does
// not know about must make it answer "the next tick" (see deadliner).

// farTicks bounds how far ahead a deadline is reported: beyond it the node
// has nothing to do (a follower whose detector is off, say), and sums of
// such distances cannot overflow.
const farTicks = 1 << 40

// deadliner is an algorithm that can tell when its timers fire and skip
// ticks that fire none of them (each algorithm's methods sit next to its
// tick, which they mirror). An algorithm without it is ticked at every
// tick.
type deadliner interface {
	// deadline returns how many ticks from now the algorithm's tick may
	// next act (1: the next tick), at most farTicks.
	deadline() int
	// skip runs k ticks, none of which reaches the deadline.
	skip(k int)
}

// NextDeadline returns the earliest tick count (compared with Now) at which
// Tick could send a message or change the node's state: the ticks that take
// Now below it only count, as Skip does. It holds until the node's next
// input (a message, a membership change, a call such as Detect); after one,
// ask again. It is always above Now. The node works it out once per input
// and keeps it (the ticks before it do not move it), so asking again, and
// Skip, cost nothing more.
func (n *Node) NextDeadline() int {
	if n.deadline == 0 {
		n.deadline = n.now + n.ticksToDeadline()
	}
	return n.deadline
}

// input starts an input: it may move a timer, so the cached NextDeadline
// is forgotten, and it ends the validity of a Ready handed over (begin).
func (n *Node) input() {
	n.deadline = 0
	n.begin()
}

// NextTimer returns the earliest tick count (compared with Now) at which a
// timer of the node other than its health score's fall (tickHealth) can
// fire, however the score falls before it: a coordinator's next heartbeat
// or lease check, a follower's detector (as if the score were 0 already:
// it gives up sooner as the score falls), an election's or a pre-vote's
// timeout, a hand-off's end. The ticks before it do nothing but count and
// lower the score. A driver whose loop ran late (Health above 0) can tell
// from it whether the node times anything soon, and need not watch every
// tick when it does not (election/wake.go). It equals NextDeadline while
// Health is 0; unlike it, it is worked out at each call.
func (n *Node) NextTimer() int {
	if n.det.health == 0 {
		return n.NextDeadline()
	}
	return n.now + n.ticksToTimer(0)
}

// ticksToDeadline is NextDeadline - now: at least 1, at most farTicks.
func (n *Node) ticksToDeadline() int {
	d := n.ticksToTimer(n.det.health)
	// tickHealth: the score falls after K*H ticks on time
	if n.det.health > 0 {
		d = min(d, max(n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses-n.det.healthyFor, 1))
	}
	return d
}

// ticksToTimer is the ticks from now to the first timer other than the
// health score's, with the follower's detector given health as the score:
// at least 1, at most farTicks.
func (n *Node) ticksToTimer(health int) int {
	d := farTicks
	at := func(tick int) { // an absolute tick
		d = min(d, max(tick-n.now, 1))
	}
	in := func(ticks int) { // a countdown that fires when it reaches 0
		d = min(d, max(ticks, 1))
	}
	// checkLease
	if n.leaseHeld() {
		at(n.guard.leaseEnd)
	}
	// tickCoolOff
	if n.guard.coolUntil != 0 {
		at(n.guard.coolUntil)
	}
	// tickHandoff
	if n.hand.handingOff {
		at(n.hand.handoffEnd())
	}
	// tickPreVote
	if n.pv.active {
		in(n.pv.timer)
	}
	// the algorithm's timers
	a, ok := n.alg.(deadliner)
	if !ok {
		return 1
	}
	if !n.algorithmQuiet() {
		in(a.deadline())
	}
	switch {
	case n.state == StateSleep:
		in(n.cfg.StartupDelay - n.idle)
	case n.coordinator == n.self.ID:
		in(n.cfg.HeartbeatInterval - n.det.hbTimer)
		if !n.guard.holds() {
			return 1 // a pending coordinator re-counts its acks every tick
		}
	case n.coordinator != "":
		in(n.followerDeadline(health))
	case !n.electing:
		in(max(n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses-n.idle, n.hand.releaseDue()-n.now))
	}
	return d
}

// followerDeadline is how many ticks from now the follower's detector gives
// up on the coordinator (tickFollower): when the silence reaches K*H plus
// its patience (the coordinator's reported lag and the node's health score,
// given: ticksToDeadline passes the score, which cannot change before its
// own health deadline; NextTimer 0, the score it may fall to).
func (n *Node) followerDeadline(health int) int {
	h := n.cfg.HeartbeatInterval
	fire := n.period()*n.cfg.HeartbeatMisses + n.det.grace + health*h
	return min(max(fire-n.det.silence, 1), farTicks)
}

// skip runs k ticks (k below ticksToDeadline): only counters move.
func (n *Node) skip(k int) {
	if k <= 0 {
		return
	}
	n.now += k
	n.hand.forget(n.now) // as tickHandoff
	if n.det.health > 0 {
		n.det.healthyFor += k
	}
	if n.pv.active {
		n.pv.timer -= k
	}
	if !n.algorithmQuiet() {
		n.alg.(deadliner).skip(k)
	}
	switch {
	case n.state == StateSleep:
		n.idle += k
	case n.coordinator == n.self.ID:
		n.det.hbTimer += k
		n.guard.lasted(n.now) // as tickCoordinator: a leadership that lasted
	case n.coordinator != "":
		n.skipFollower(k)
	case !n.electing:
		n.idle += k
	}
}

// algorithmQuiet reports whether the algorithm's skip would change
// nothing and its deadline is farTicks (Node.algQuiet): a ring member
// between elections, whose link holds no hop, once its last skip has
// recorded the coordinator and term (link.noteLeader). Every input used
// to read the algorithm's state for nothing then, a cache miss per
// heartbeat delivered in a simulator of 10,000 members.
func (n *Node) algorithmQuiet() bool { return n.algQuiet && !n.electing }

// quiet records, at the end of an algorithm's skip, whether it is quiet
// (algorithmQuiet): the skips and deadlines after it, until the next call
// into the algorithm or change of term or coordinator, would find
// nothing to do.
func (n *Node) quiet(q bool) { n.algQuiet = q }

// enter returns the algorithm, for a call that may change its state:
// it is no longer known to be quiet.
func (n *Node) enter() algorithm {
	n.algQuiet = false
	return n.alg
}

// skipFollower runs k ticks of tickFollower that do not fire the detector:
// the silence grows, and with it the intervals counted as missed.
func (n *Node) skipFollower(k int) {
	h, e := n.cfg.HeartbeatInterval, n.period()
	n.det.silence += k
	if m := (n.det.silence - e/2 - n.det.grace - n.det.health*h) / e; m > n.det.misses {
		n.det.misses = m
	}
}

// period is the follower's heartbeat period in ticks: H, or the longer
// one the coordinator told it (fanout.go).
func (n *Node) period() int {
	if n.det.every > 0 {
		return n.det.every
	}
	return n.cfg.HeartbeatInterval
}
