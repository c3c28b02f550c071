package election

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// What the loop reports of each name after a flush: the observers, the
// callbacks, the snapshot, the lease Check reads and the Recorder's
// Update. Every name has its own; the membership (counted members, the
// roster's spare room) is the Elector's (loop.go).

// account takes what the name's node counted into the next Update and
// logs the elections this member takes part in.
func (el *Election) account(rd *core.Ready) {
	if rd.Counters != (core.Counters{}) {
		el.u().Add(&rd.Counters)
	}
	if rd.ElectionsStarted > 0 {
		el.u().Cause = rd.Cause
		el.electionBegan = true
		el.logger().Info("election started", "term", rd.Status.Term, "cause", rd.Cause)
	}
	if rd.ElectionsRestarted > 0 {
		el.logger().Info("election restarted: no coordinator announced in time")
	}
}

// observe reports the name's status where it differs from the last one
// reported: st and electing are what its node reports now, viewChanged
// whether its view changed since the last observe.
func (el *Election) observe(st core.Status, electing, viewChanged bool) {
	startup := el.observeStartup()
	changed := !el.sameStatus(st) || electing != el.electing || startup
	if now := el.node().Now(); changed || viewChanged || now-el.holdRead >= el.e.holdEvery {
		el.holdRead = now
		changed = el.observeHold() || changed
	}
	if st.State != el.state {
		el.u().StateChanged = true
	}
	if st.Term != el.status.term {
		el.u().TermChanged = true
	}
	el.setStatus(st)
	el.electing = electing
	el.trackElection()
	newLeader := el.leadership() != el.lastLeader()
	if newLeader {
		el.changeLeader(el.leadership())
	}
	el.observeQuiet()
	el.dropLeader()
	if el.observeIsolated() {
		changed = true
	}
	if changed || newLeader {
		el.updateSnapshot()
	}
	if newLeader {
		// Last: a subscriber that wakes on the new Leadership finds
		// Status, the handler and Check (publishLease) saying the same.
		if o := el.obs.Load(); o != nil {
			o.publish(el.lastLeader())
		}
	}
}

// observeQuiet is what an input that changes neither the status nor the
// messages (an ack, a heartbeat) can still change: the lease this member
// holds and asks for, and the VerifyLeader calls it answers.
func (el *Election) observeQuiet() {
	el.publishLease()
	el.observeLease()
	if el.verifying() {
		el.checkVerifiers()
	}
}

// record hands the Recorder what changed since the previous Update, if
// anything did.
func (el *Election) record() {
	if el.upd == nil && !el.e.beatsSent.has(el) {
		return // nothing changed
	}
	u := el.u()
	u.State, u.Term, u.Leader, u.Lease = el.state, uint64(el.status.term), el.lastLeader(), el.leaseAsk()
	if !u.empty() {
		u.Election = el.name
		el.e.rec.Record(*u)
	}
	*u = Update{}
	el.upd = nil
	if len(el.e.spareUpd) < maxSpareUpdates {
		el.e.spareUpd = append(el.e.spareUpd, u)
	}
}

// maxSpareUpdates bounds the Updates an Elector keeps for reuse: a
// burst (every name elected at once) does not stay allocated.
const maxSpareUpdates = 64

// u returns the Update the name's next record hands over, taking one
// from the Elector's spares: a name holds one only while something is
// to be recorded (an Update is most of what a name would cost otherwise).
func (el *Election) u() *Update {
	if el.upd == nil {
		e := el.e
		if k := len(e.spareUpd); k > 0 {
			el.upd, e.spareUpd = e.spareUpd[k-1], e.spareUpd[:k-1]
		} else {
			el.upd = new(Update)
		}
		el.upd.Sent[core.MsgHeartbeat] += e.beatsSent.take(el)
	}
	return el.upd
}

// observeStartup follows the start-up hold until it is over, and reports
// whether it changed. A hold that the window ended short of an expectation
// set in Config is a warning: the node elects without the members it was
// told to expect. Short of a default one (another voter, for a node with
// seeds; the quorum size) it is news: the seeds are still unreachable
// (the transport says so), or the quorum guard keeps a minority from
// leading anyway.
func (el *Election) observeStartup() bool {
	if !el.startupOpen {
		return false
	}
	su := el.node().Startup()
	if su == el.holds.startup {
		return false
	}
	if !su.Holding {
		el.startupOpen = false
		if su.Short {
			log := el.logger().Info
			if el.e.expectSet {
				log = el.logger().Warn
			}
			log("start-up window passed with fewer voters than expected: electing with those visible",
				"voters", su.Voters, "expect", su.Expect, "window", el.e.cfg.ExpectWindow)
		}
	}
	el.setHolds(su, el.holds.hold)
	return true
}

// observeHold follows the node's hold (core.Node.Hold) and reports
// whether it changed. A hold is logged once at Warn, with what it waits
// for, when it starts or changes its reason, and its end once at Info. The
// start-up hold is logged only once the start-up window has passed: every
// member of a cluster starting together holds while it runs. A change of
// the counts alone updates Status without a log line. The node's hold is
// O(n) to read while no coordinator is known, so it is read only when the
// status or the view changed (a hold ends only by one of those; a solo
// hold by an election, which changes the status), at the start of Run,
// and otherwise once a second (holdEvery).
func (el *Election) observeHold() bool {
	h := el.node().Hold()
	next := Hold{Reason: h.Reason, Voters: h.Voters, Need: h.Need, Found: h.Found}
	if h.Until > 0 {
		next.Until = el.instant(h.Until)
	}
	prev := el.holds.hold
	el.setHolds(el.holds.startup, next)
	early := next.Reason == core.HoldExpect && el.node().Now() < el.node().Config().ExpectWindow
	switch {
	case next.Held() && !early && (next.Reason != prev.Reason || !el.holdWarned):
		el.holdWarned = true
		el.logger().Warn(next.String(), "hold", next.Reason, "voters", next.Voters, "need", next.Need)
	case !next.Held() && prev.Held():
		if el.holdWarned {
			el.logger().Info("election hold over", "was", prev.Reason)
		}
		el.holdWarned = false
	case next.Reason != prev.Reason:
		el.holdWarned = false
	}
	return next != prev
}

// leadership is what this node reports: a coordinator only when the node
// says one is agreed (with the quorum guard on, one holding a lease), and
// itself only in state coordinator.
func (el *Election) leadership() Leadership {
	st := el.status
	if st.coordinator == "" {
		return Leadership{}
	}
	self := st.coordinator == el.e.id
	if self && el.state != core.StateCoordinator {
		return Leadership{}
	}
	return Leadership{Coordinator: st.coordinator, Term: uint64(st.term), IsSelf: self}
}

// trackElection measures how long this node goes without an agreed
// coordinator: from the moment it left sleep, lost its coordinator or
// started an election, until it knows a coordinator with no election
// running. An election that ends within the event that began it counts 0.
func (el *Election) trackElection() {
	st := el.status
	unsettled := st.coordinator == "" || el.electing
	began := el.electionBegan || unsettled && el.state != core.StateSleep
	el.electionBegan = false
	if began && el.unsettledAt == 0 {
		el.unsettledAt = time.Since(el.e.made) + 1
	}
	if unsettled || el.unsettledAt == 0 {
		return
	}
	d := time.Since(el.e.made) - (el.unsettledAt - 1)
	el.unsettledAt = 0
	el.u().ElectionEnded, el.u().ElectionDuration = true, d
	el.logger().Info("coordinator agreed", "coordinator", st.coordinator, "term", st.term, "after", d)
}

// changeLeader takes in a new Leadership, which observe publishes once
// Status and Check agree with it: it ends this node's span (Check fails,
// then its context is cancelled) before it announces anything else, and starts a new span (its context exists, then Check
// passes: publishLease) whenever this node leads, also again in a term it
// led in before. OnNewLeader hears each (coordinator, term) once, however
// often the coordinator is lost and found again in between.
func (el *Election) changeLeader(l Leadership) {
	prev := el.lastLeader()
	el.lastCoordinator, el.lastTerm = l.Coordinator, l.Term
	if prev.IsSelf && el.leading.Load() != nil {
		el.lease.Store(nil)
		el.stopLeading()
	}
	el.u().LeaderChanged = true
	if l.Known() {
		if l.Coordinator != el.announcedCoordinator || l.Term != el.announcedTerm {
			el.announcedCoordinator, el.announcedTerm = l.Coordinator, l.Term
			el.logger().Info("new coordinator", "coordinator", l.Coordinator, "term", core.Term(l.Term))
			el.notify.push(notification{kind: notifyNewLeader, l: l})
		}
	} else {
		el.logger().Debug("no coordinator", "last", prev.Coordinator, "term", core.Term(prev.Term))
	}
	if l.IsSelf {
		el.startLeading(l)
	}
}

// startLeading starts a span of l and queues its Claim and
// OnStartedLeading: the notifier runs them once the callbacks queued
// before (the previous span's included) have returned.
func (el *Election) startLeading(l Leadership) {
	run := el.startSpan(l)
	el.logger().Info("started leading", "term", core.Term(l.Term), "span", run.span.Number)
	if el.notify.push(notification{kind: notifyStarted, l: l, ctx: run.ctx, work: run.work}) {
		el.leader().workSpan = run.work
		el.e.working = append(el.e.working, el)
	}
}

// stopLeading ends the current span: its context is cancelled and its
// OnStoppedLeading queued.
func (el *Election) stopLeading() {
	run := el.leading.Load()
	el.leading.Store(nil)
	run.cancel()
	el.logger().Info("stopped leading", "term", core.Term(run.span.Term), "span", run.span.Number)
	el.notify.push(notification{kind: notifyStopped, l: Leadership{Coordinator: el.e.id, Term: run.span.Term, IsSelf: true}, work: run.work})
}

// instant turns a tick of the name's node (its clock starts when the
// group builds it, which for a name added after Run is later than the
// group's) into an instant of the monotonic clock.
func (el *Election) instant(tick int) time.Time {
	n := el.node()
	return el.e.origin.Add(time.Duration(tick-n.Now()+el.e.g.Now()) * el.e.cfg.Tick)
}

// markWorkDone is the notifier's word that the leader work (Claim,
// OnStartedLeading) of the name's span numbered work (spanRun.work) has
// returned, and that of every span before it. It never blocks.
func (el *Election) markWorkDone(work uint64) {
	el.notify.workDone.Store(work)
	select {
	case el.e.workWake <- struct{}{}:
	default:
	}
}

// end ends the name's part on this member: its leadership ends, its
// VerifyLeader calls fail, its observers see no coordinator and are
// closed, its snapshot says stopped.
func (el *Election) end() {
	el.lease.Store(nil)
	if el.lastLeader().IsSelf && el.leading.Load() != nil {
		el.stopLeading()
	}
	if el.lead != nil {
		for _, v := range el.lead.verifiers {
			v.done <- ErrNotLeader
		}
		el.lead.verifiers = nil
	}
	el.lastCoordinator, el.lastTerm = "", 0
	el.state = core.StateSleep // a stopped node takes no steps: not "coordinator" any more
	el.u().StateChanged, el.u().LeaderChanged, el.u().Ended = true, true, true
	el.record()
	s := *el.snap.Load()
	s.coordinator, s.stopped = "", true
	el.snap.Store(&s) // before the observers close (observers)
	if o := el.obs.Load(); o != nil {
		o.close(Leadership{})
	}
}
