package core

// How long the rings wait: a hop of a lap (hopTicks), a whole lap
// (lapTicks), a hop's timeout (hopTimeout) and a member's doubt of a
// COORDINATOR lap (doubtTicks), for the election's timer and for a
// released follower (handoff.go). Invariant: each wait is at least its
// configured floor (RoundTrip, HopTimeout) and follows the round trips
// measured lately: the mean for the hops of a lap, twice the longest for a
// hop's timeout, which is capped at maxHopWait HopTimeouts.

// maxHopWait caps the measured hop timeout at maxHopWait·HopTimeout
// (memberlist's awareness multiplier has the same cap of 8): the other
// members' election timers count HopTimeout for a hop (lapTicks), and a
// member that waits much longer on a dead successor than they allow for
// saw them restart the election before its wait ended, lap after lap.
const maxHopWait = 8

// hopTimeout is how long a hop sent now waits for its Ack: HopTimeout, or
// twice the longest of the recent round trips (Node.rtts) if that is
// longer, at most maxHopWait·HopTimeout. A round trip measured as r ticks
// took less than r+1; a timer of 2r ticks waits more than 2r-1, which is
// at least r+1 from r = 2 on.
//
// The timeout follows the round trips as TCP's retransmission timeout
// does, and as Lifeguard's awareness stretches memberlist's probes: a hop
// given up on whose receiver was working has reached it all the same, so
// the lap runs twice from there, which the active/relay ring cannot tell
// from a lost message. With HopTimeout alone, a host whose round trips
// exceeded it (two cores shared with other work under the race detector:
// Acks took 19 – 29 ms at the median and up to 422) skipped working
// members in every careful lap, and the active/relay ring restarted for
// seconds.
func (n *Node) hopTimeout() int {
	hop := n.cfg.HopTimeout
	_, longest := n.det.rtts.stats(n.now, n.rttMemory())
	return min(max(hop, 2*longest), maxHopWait*hop)
}

// lapTicks bounds one lap of the ring: every member may cost a one-way trip
// (at most roundTrip) and, in Textbook mode, a hop timeout if it is dead;
// CoordinatorTimeout is slack. It grows with the ring, so that a 10,000
// member ring is not timed out mid-lap.
func lapTicks(n *Node) int {
	per := n.roundTrip()
	if n.cfg.Mode == Textbook {
		per += n.hopTimeout()
	}
	return n.view.r.Len()*per + n.cfg.CoordinatorTimeout
}

// hopTicks bounds one hop of a lap: a one-way trip (at most roundTrip)
// and, in Textbook mode, a hop timeout for a dead member skipped on the way.
func hopTicks(n *Node) int {
	if n.cfg.Mode == Textbook {
		return n.roundTrip() + n.hopTimeout()
	}
	return n.roundTrip()
}

// roundTrip is RoundTrip, or the mean of the round trips this node
// measured lately (Node.rtts) if that is longer: a loaded host or a slow
// network makes every hop of a lap slower than RoundTrip, and an election
// timer counted in RoundTrips ran out before the lap came round, election
// after election (the simulator's slow spell: round trips of 120 – 280
// ms). The mean, not the longest: a lap is the sum of its hops, and with
// the longest, one outlier (a 268 ms Ack where the median was 28 ms) made
// an active/relay ring whose lap had forked wait seconds for its silence
// timer.
func (n *Node) roundTrip() int {
	mean, _ := n.det.rtts.stats(n.now, n.rttMemory())
	return max(n.cfg.RoundTrip, mean+1)
}

// lapHops is how many hops after position self a lap that started at
// position start reaches position c, on a ring (or list) of size members:
// 0 when the lap has passed c already. An unknown start counts from self;
// an unknown c is taken as the farthest.
func lapHops(start, self, c, size int) int {
	if size == 0 || self < 0 {
		return 0
	}
	if c < 0 {
		return size - 1
	}
	if start < 0 {
		start = self
	}
	ds, dc := (self-start+size)%size, (c-start+size)%size
	return max(dc-ds, 0)
}

// doubtTicks is how long a node whose view holds dead the coordinator that
// a COORDINATOR lap names waits for that coordinator's heartbeat before it
// elects again: the lap's remaining hops and K heartbeat intervals, as a
// follower's detector would (at most a lap's timeout). The node passes the
// lap on but does not follow: the view may be right (the member died since
// the lap collected it) or behind (a paused member resumed, and gossip has
// not told every member yet). Restarting the election at once would make
// every such member veto the outcome, lap after lap, until gossip caught
// up (hundreds of epochs in a second after a paused ring coordinator
// resumed). A live coordinator's heartbeat
// ends the doubt; the view holding it dead does not stop the heartbeats.
func doubtTicks(n *Node, hops int) int {
	d := (hops+1)*hopTicks(n) + n.cfg.HeartbeatInterval*min(n.cfg.HeartbeatMisses, 1<<20)
	return min(d, lapTicks(n))
}
