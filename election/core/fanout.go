package core

import "slices"

// Heartbeat fan-out (docs/design.md, "Heartbeat fan-out"). In View mode a
// coordinator of a cluster larger than HeartbeatWatchers + HeartbeatBatch
// + 1 does not heartbeat every member every round. Each round goes to
//
//   - the watchers: the HeartbeatWatchers top-rated live voters other than
//     the coordinator. They are the members that act on a silence (the top
//     survivor asks the silent coordinator, the voters just below it
//     corroborate its suspicion in the pre-vote, the others wait for its
//     announcement), so failover keeps its detection floor of K·H;
//   - every live voter when the quorum guard is on: the lease needs a
//     majority of acknowledgements every round, so with the guard the
//     coordinator's cost is O(voters), not O(n);
//   - a rotating slice of the other members, about HeartbeatBatch a round,
//     so that each of them hears the coordinator once per period of
//     ceil(rest / HeartbeatBatch) rounds.
//
// Every heartbeat says when its receiver should expect the next one
// (Message.Every, in ticks; 0 means H) and the follower's detector waits
// K·Every (plus the usual patience) before it gives up. A member that
// stops being a watcher is sent the new period in the round it stops; one
// that becomes a watcher is told H by its next heartbeat. When the period
// grows (members joined) the coordinator first promises the new period
// through a whole lap at the old one, then switches, so no member is
// promised less than the gap it will see. A follower that learns a new
// coordinator from anything but a heartbeat expects the period its own
// view gives (followerEvery). Textbook mode has no view and heartbeats
// every member every round, as do clusters small enough (n ≤ W + B + 1),
// whose heartbeats are exactly what they were before the fan-out.

// fanningOut reports whether the coordinator's rounds fan out: View mode
// and more live members besides coord than W + B.
func (n *Node) fanningOut() bool {
	return n.cfg.Mode == View && n.liveCount()-1 > n.cfg.HeartbeatWatchers+n.cfg.HeartbeatBatch
}

// fast reports whether p hears every round: a watcher (in ws) or, with
// the quorum guard, a voter.
func (n *Node) fast(p Peer, ws []string) bool {
	if n.guard.on() && !p.NonVoter {
		return true
	}
	return slices.Contains(ws, p.ID)
}

// watchers appends to ws the W top-rated live voters other than coord.
func (n *Node) watchers(ws []string, coord string) []string {
	r := n.view.r
	for k := r.Len() - 1; k >= 0 && len(ws) < n.cfg.HeartbeatWatchers; k-- {
		if p := r.ByRank(k); p.ID != coord && !p.NonVoter && n.view.alive(p.ID) {
			ws = append(ws, p.ID)
		}
	}
	return ws
}

// rest counts the live members other than coord that are not fast, given
// the watchers ws.
func (n *Node) rest(coord string, ws []string) int {
	if !n.guard.on() {
		k := n.liveCount() - len(ws)
		if n.view.alive(coord) && n.view.r.Index(coord) >= 0 {
			k-- // coord itself
		}
		return k
	}
	k := 0
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); p.ID != coord && p.NonVoter && n.view.alive(p.ID) {
			k++
		}
	}
	return k
}

// periodFor is the rotation period, in rounds, for rest members.
func (n *Node) periodFor(rest int) int {
	b := n.cfg.HeartbeatBatch
	return max((rest+b-1)/b, 1)
}

// promise is the Every a rotating member is sent: the promised period
// and one round of slack for the rotation's drift as the view changes.
func (n *Node) promise() uint32 {
	return uint32(min((n.det.fan.promised+1)*n.cfg.HeartbeatInterval, maxEvery))
}

// heartbeatFanOut sends one fanned-out round: to the members that hear
// every round, to the former watchers (their new period), and to the
// rotation's share of the others.
func (n *Node) heartbeatFanOut() {
	f := n.det.fan
	f.prev, f.watch = f.watch, f.prev[:0]
	f.watch = n.watchers(f.watch, n.self.ID)
	rest := n.rest(n.self.ID, f.watch)
	f.retarget(n.periodFor(rest), n.det.hbSeq)
	n.heartbeatFast(f.watch)
	every := n.promise()
	// Former watchers learn their new period at once.
	for _, id := range f.prev {
		if p, ok := n.view.r.Get(id); ok && id != n.self.ID && n.view.alive(id) && !n.fast(p, f.watch) {
			n.sendHeartbeat(id, every)
		}
	}
	n.heartbeatRotation(every)
}

// heartbeatFast sends the round to the members that hear every round: the
// watchers ws, or every live voter with the guard.
func (n *Node) heartbeatFast(ws []string) {
	if !n.guard.on() {
		for _, id := range ws {
			n.sendHeartbeat(id, 0)
		}
		return
	}
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); p.ID != n.self.ID && !p.NonVoter && n.view.alive(p.ID) {
			n.sendHeartbeat(p.ID, 0)
		}
	}
}

// heartbeatRotation sends the round, promising every, to the rest members
// in the round's slot: those whose position in the roster's ring order
// is the round's number modulo the period (the others hear every round).
// Every position is in one slot, so each rest member hears a round once
// a period. The round's number counts the intervals of the driver's
// clock (Node.round), not the term's rounds: the names a member leads share
// their roster's ring order, so in each interval their rounds visit the
// same members, which the group sends one packet each.
func (n *Node) heartbeatRotation(every uint32) {
	f := n.det.fan
	r := n.view.r
	for pos := n.round() % f.period; pos < r.Len(); pos += f.period {
		p := r.At(pos)
		if p.ID == n.self.ID || !n.view.alive(p.ID) || n.fast(p, f.watch) || n.fast(p, f.prev) {
			continue
		}
		n.sendHeartbeat(p.ID, every)
	}
}

// round is the number of the heartbeat interval this node is in, on the
// driver's clock when it sets one (Host.SetClock), else on the node's
// own: interval k runs from tick k·H + 1 to tick (k+1)·H, the round
// instant at which a driver that holds routine heartbeats for the
// instants (group.Group) sends them.
func (n *Node) round() int {
	t := n.now
	if n.cfg.clocked {
		t = n.cfg.clock
	}
	return max(t-1, 0) / n.cfg.HeartbeatInterval
}

// heartbeatEvery is the Every to send id outside a round (it has just come
// up): 0 when it hears every round.
func (n *Node) heartbeatEvery(id string) uint32 {
	p, ok := n.view.r.Get(id)
	if !ok || !n.fanningOut() || n.det.fan.period == 0 || n.fast(p, n.det.fan.watch) {
		return 0
	}
	return n.promise()
}

// followerEvery is the heartbeat period, in ticks, that this node expects
// from coordinator c before c has told it (it follows c on an
// announcement): H when the view is small enough or this node would be a
// watcher of c, else the rotation period its view gives, with the slack
// the coordinator promises.
func (n *Node) followerEvery(c string) int {
	h := n.cfg.HeartbeatInterval
	if n.cfg.Mode != View {
		return h
	}
	live := n.liveCount()
	if n.view.alive(c) && n.view.r.Index(c) >= 0 {
		live--
	}
	if live <= n.cfg.HeartbeatWatchers+n.cfg.HeartbeatBatch {
		return h
	}
	var buf [8]string
	ws := n.watchers(buf[:0], c)
	if n.fast(n.self, ws) {
		return h
	}
	return min((n.periodFor(n.rest(c, ws))+1)*h, maxEvery)
}

// payOwed sends the members owed a confirmation (fanOut.owed) a heartbeat
// of the current round, now confirmed; called when the lease holds again,
// after that round (its number is above every unconfirmed one they heard,
// so onHeartbeat takes it).
func (n *Node) payOwed() {
	f := n.det.fan
	if len(f.owed) == 0 {
		return
	}
	slices.Sort(f.owed)
	for _, id := range slices.Compact(f.owed) {
		if p, ok := n.view.r.Get(id); ok && n.view.alive(id) && !n.fast(p, f.watch) {
			n.sendHeartbeat(id, n.heartbeatEvery(id))
		}
	}
	clear(f.owed)
	f.owed = f.owed[:0]
}

// sendHeartbeat sends the current round to id, telling it to expect the
// next within every ticks (0: H).
func (n *Node) sendHeartbeat(id string, every uint32) {
	if every != 0 && !n.guard.holds() {
		n.det.fan.owed = append(n.det.fan.owed, id) // told "unconfirmed" for a period
	}
	n.send(Message{Type: MsgHeartbeat, To: id, Coordinator: n.self.ID, Confirmed: n.guard.confirmed, Seq: n.det.hbSeq,
		Lag: uint32(min(n.det.lag, n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses)), Every: every, Lease: n.guard.wireAsk(n.term)})
}
