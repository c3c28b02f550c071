package election

import (
	"context"
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// loop is the one goroutine that owns the node. Every event is followed by
// flush: send what the node queued, then report what changed (PeerUps
// that arrive together share one flush: morePeerUps). Between events it
// sleeps until the node's next deadline (wake.go). Nothing in the loop
// blocks but the select.
//
// The loop itself only selects: each case's work is a method of its own
// (go:noinline), so that loop's frame, which the goroutine keeps while it
// waits, holds the received Event and little else. Inlined, those methods
// made it 1,160 bytes, and the goroutine waited with about 1,700 bytes of
// stack in use, so the garbage collector never shrank its stack below
// 8 KiB (it shrinks a stack only while less than a quarter is in use);
// the event paths also stay within 4 KiB (docs/performance.md, "Memory per
// member").
func (e *Elector) loop(ctx context.Context) error {
	timer := e.loopStart()
	defer timer.Stop()
	events := e.tr.Events()
	var ok bool
	for {
		e.wakes.Add(1) // the start, or the wake that ended the last select
		e.schedule(timer)
		select {
		case <-timer.C:
			e.tick()
		case <-e.workWake:
			e.workEnded()
		case e.in, ok = <-events:
			if !ok {
				err := e.transportClosed()
				e.finish()
				return err
			}
			e.event(events)
		case r := <-e.requests:
			e.request(r)
			continue
		case <-ctx.Done():
			e.handoff(events)
			e.finish()
			return nil
		case <-e.closing:
			e.finish()
			return nil
		}
		e.flush()
	}
}

// loopStart readies the loop's clock and returns its timer (set by
// schedule).
//
//go:noinline
func (e *Elector) loopStart() *time.Timer {
	e.setSleep()
	timer := time.NewTimer(time.Hour)
	e.armed = -1
	e.origin = time.Now()
	e.log.Info("elector running", "algorithm", e.self.Algorithm, "rating", e.status.Rating,
		"non_voter", e.self.NonVoter, "quorum", e.cfg.QuorumSize, "expect", e.cfg.ExpectVoters)
	if e.observeHold() { // a start-up hold is in force from the start
		e.updateSnapshot()
	}
	return timer
}

// tick: the timer fired at the node's deadline.
//
//go:noinline
func (e *Elector) tick() {
	e.armed = -1
	e.advance()
}

// event hands the node one transport event, and the PeerUps waiting
// behind a PeerUp.
//
//go:noinline
func (e *Elector) event(events <-chan Event) {
	// The core's clock first: a loop that ran late must not stamp
	// a heartbeat's receipt (where the promise its ack makes
	// starts) with a time before the heartbeat was even sent.
	e.advance()
	e.handle(&e.in)
	peerUp := e.in.Kind == EventPeerUp
	e.in = Event{} // keeps no strings of the event alive
	if peerUp {
		e.morePeerUps(events)
	}
}

// request runs a local request (Elector.do) on the loop.
//
//go:noinline
func (e *Elector) request(r request) {
	e.advance()
	err := r.fn()
	e.flush()
	r.result <- err
}

// handle feeds one transport event to the node; any of them can change
// its view, which Status reads (e.view).
func (e *Elector) handle(ev *Event) {
	e.view.Lock()
	defer e.view.Unlock()
	switch ev.Kind {
	case EventMessage:
		m := ev.Message
		if e.log.IsDebug() {
			e.log.Debug("receive", msgFields(m, m.From)...)
		}
		e.node.Step(m)
	case EventPeerUp:
		e.log.Debug("peer up", "peer", ev.Peer.ID, "rating", ev.Peer.Rating, "non_voter", ev.Peer.NonVoter)
		e.node.PeerUp(ev.Peer)
	case EventPeerDown:
		e.log.Debug("peer down", "peer", ev.Peer.ID)
		e.node.PeerDown(ev.Peer.ID)
	case EventPeerRating:
		e.log.Debug("peer rating", "peer", ev.Peer.ID, "rating", ev.Peer.Rating)
		e.node.PeerRating(ev.Peer.ID, ev.Peer.Rating)
	default:
		e.log.Warn("ignoring transport event of unknown kind", "kind", ev.Kind)
	}
}

// maxPeerUps bounds the PeerUps handled before one flush (morePeerUps).
const maxPeerUps = 256

// morePeerUps handles the PeerUps already waiting behind one (a join's
// push-pull reports up to the whole cluster at once), so that one flush
// follows them all: the members are counted (countMembers) once, not once
// per member, which at n = 1,000 was O(n) work (and, while the status
// published a member list, garbage) for each of the n members every
// member learns. A PeerUp changes the view alone (a
// coordinator also queues a heartbeat to the newcomer, sent by the flush).
// It stops at the first other event and handles it after the flush like
// any event (the loop flushes after it).
func (e *Elector) morePeerUps(events <-chan Event) {
	for range maxPeerUps {
		select {
		case ev, ok := <-events:
			if !ok {
				return // the closed channel is read again by the loop
			}
			if ev.Kind != EventPeerUp {
				e.flush()
				e.plan() // the flush is the loop's wake: late only from here
				e.advance()
				e.handle(&ev)
				return
			}
			e.handle(&ev)
		default:
			return
		}
	}
}

// flush takes the node's Ready: it sends the messages, reports what
// changed to observers, callbacks, the snapshot and the Recorder.
func (e *Elector) flush() {
	rd := e.node.Ready()
	for _, m := range rd.Messages {
		e.send(m)
	}
	e.account(rd)
	e.observe(rd)
	e.record()
	if e.node.HandoffPending() && e.workSpan == 0 {
		// The leader work has stopped (or there is none): pass the role on.
		e.node.CompleteHandoff()
		e.flush()
	}
}

// markWorkDone is the notifier's word that the leader work (Claim,
// OnStartedLeading) of the span numbered work (spanRun.work) has returned,
// and that of every span before it. It never blocks.
func (e *Elector) markWorkDone(work uint64) {
	e.workDone.Store(work)
	select {
	case e.workWake <- struct{}{}:
	default:
	}
}

// workEnded: the leader work of workSpan may have returned; a hand-off
// waiting for it goes on.
func (e *Elector) workEnded() {
	if e.workSpan != 0 && e.workDone.Load() >= e.workSpan {
		e.workSpan = 0
	}
}

// msgFields are the fields of a message's debug line: its type, the peer
// it came from or goes to, and its term; for a ring's messages also what
// identifies a hop (docs/algorithms.md): the initiator, the ring's lap
// or list index or the active/relay ring's phase (or phase count), and the
// value, so that a lap can be followed member by member.
func msgFields(m core.Message, peer string) []any {
	f := []any{"type", m.Type, "peer", peer, "term", core.Term(m.Term)}
	switch m.Type {
	case core.MsgElection, core.MsgCoordinator, core.MsgAck:
		if m.Initiator != "" {
			f = append(f, "initiator", m.Initiator)
			for _, n := range [...]struct {
				key string
				v   uint32
			}{{"lap", m.Lap}, {"index", m.Index}, {"phase", m.Phase}, {"phases", m.Phases}} {
				if n.v != 0 {
					f = append(f, n.key, n.v)
				}
			}
			if m.Value.ID != "" {
				f = append(f, "value", m.Value.ID)
			}
			if m.Coordinator != "" {
				f = append(f, "coordinator", m.Coordinator)
			}
		}
	}
	return f
}

// send hands m to the transport. Ready's buffer is reused by the node, so
// the transport gets a copy.
func (e *Elector) send(m core.Message) {
	if e.log.IsDebug() {
		e.log.Debug("send", msgFields(m, m.To)...)
	}
	if err := e.tr.Send(m.Clone()); err != nil {
		e.upd.SendFailed++
		e.log.Debug("send failed", "type", m.Type, "peer", m.To, "error", err)
		return
	}
	e.upd.Sent[m.Type]++
}

// account takes what the node counted into the next Update and logs the
// elections this node takes part in.
func (e *Elector) account(rd *core.Ready) {
	e.upd.Add(&rd.Counters)
	if rd.ElectionsStarted > 0 {
		e.upd.Cause = rd.Cause
		e.electionBegan = true
		e.log.Info("election started", "term", rd.Status.Term, "cause", rd.Cause)
	}
	if rd.ElectionsRestarted > 0 {
		e.log.Info("election restarted: no coordinator announced in time")
	}
}

// observe reports the node's status where it differs from the last one
// reported.
func (e *Elector) observe(rd *core.Ready) {
	st, electing := rd.Status, rd.Electing
	e.membersDirty = e.membersDirty || rd.ViewChanged
	startup := e.observeStartup()
	changed := st != e.status || electing != e.electing || startup
	if now := e.node.Now(); changed || rd.ViewChanged || now-e.holdRead >= e.holdEvery {
		e.holdRead = now
		changed = e.observeHold() || changed
	}
	if st.State != e.status.State {
		e.upd.StateChanged = true
	}
	if st.Term != e.status.Term {
		e.upd.TermChanged = true
	}
	e.status, e.electing = st, electing
	e.trackElection()
	newLeader := e.leadership() != e.last
	if newLeader {
		e.changeLeader(e.leadership())
	}
	e.publishLease()
	e.observeLease()
	if e.observeIsolated() {
		changed = true
	}
	if len(e.verifiers) > 0 {
		e.checkVerifiers()
	}
	if changed || newLeader {
		e.updateSnapshot()
	}
	if newLeader {
		// Last: a subscriber that wakes on the new Leadership finds
		// Status, the handler and Check (publishLease) saying the same.
		e.obs.publish(e.last)
	}
	if e.membersDirty {
		e.countMembers()
	}
	e.clipRoster(rd.ViewChanged)
}

// rosterClipAfter is how long the view goes unchanged before the node's
// roster gives back its spare room (core.Node.ClipRoster): longer than the
// burst of joins of a cluster forming or a partition healing.
const rosterClipAfter = 30 * time.Second

// clipRoster has the node's roster give back its spare room once the view
// has not changed for rosterClipAfter (once after each change).
func (e *Elector) clipRoster(changed bool) {
	now := time.Now()
	if changed || e.viewSince.IsZero() {
		e.viewSince, e.clipped = now, false
		return
	}
	if e.clipped || now.Sub(e.viewSince) < rosterClipAfter {
		return
	}
	e.view.Lock() // Status reads the roster
	e.node.ClipRoster()
	e.view.Unlock()
	e.clipped = true
}

// record hands the Recorder what changed since the previous Update, if
// anything did.
func (e *Elector) record() {
	u := &e.upd
	u.State, u.Term, u.Leader, u.Lease = e.status.State, uint64(e.status.Term), e.last, e.leaseAsk
	if !u.empty() {
		e.rec.Record(*u)
	}
	*u = Update{}
}

// observeStartup follows the start-up hold until it is over, and reports
// whether it changed. A hold that the window ended short of an expectation
// set in Config is a warning: the node elects without the members it was
// told to expect. Short of a default one (another voter, for a node with
// seeds; the quorum size) it is news: the seeds are still unreachable
// (the transport says so), or the quorum guard keeps a minority from
// leading anyway.
func (e *Elector) observeStartup() bool {
	if !e.startupOpen {
		return false
	}
	su := e.node.Startup()
	if su == e.startup {
		return false
	}
	if !su.Holding {
		e.startupOpen = false
		if su.Short {
			log := e.log.Info
			if e.expectSet {
				log = e.log.Warn
			}
			log("start-up window passed with fewer voters than expected: electing with those visible",
				"voters", su.Voters, "expect", su.Expect, "window", e.cfg.ExpectWindow)
		}
	}
	e.startup = su
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
func (e *Elector) observeHold() bool {
	h := e.node.Hold()
	next := Hold{Reason: h.Reason, Voters: h.Voters, Need: h.Need, Found: h.Found}
	if h.Until > 0 {
		next.Until = e.origin.Add(time.Duration(h.Until) * e.cfg.Tick)
	}
	prev := e.hold
	e.hold = next
	early := next.Reason == core.HoldExpect && e.node.Now() < e.node.Config().ExpectWindow
	switch {
	case next.Held() && !early && (next.Reason != prev.Reason || !e.holdWarned):
		e.holdWarned = true
		e.log.Warn(next.String(), "hold", next.Reason, "voters", next.Voters, "need", next.Need)
	case !next.Held() && prev.Held():
		if e.holdWarned {
			e.log.Info("election hold over", "was", prev.Reason)
		}
		e.holdWarned = false
	case next.Reason != prev.Reason:
		e.holdWarned = false
	}
	return next != prev
}

// leadership is what this node reports: a coordinator only when the node
// says one is agreed (with the quorum guard on, one holding a lease), and
// itself only in state coordinator.
func (e *Elector) leadership() Leadership {
	st := e.status
	if st.Coordinator == "" {
		return Leadership{}
	}
	self := st.Coordinator == e.id
	if self && st.State != core.StateCoordinator {
		return Leadership{}
	}
	return Leadership{Coordinator: st.Coordinator, Term: uint64(st.Term), IsSelf: self}
}

// trackElection measures how long this node goes without an agreed
// coordinator: from the moment it left sleep, lost its coordinator or
// started an election, until it knows a coordinator with no election
// running. An election that ends within the event that began it counts 0.
func (e *Elector) trackElection() {
	st := e.status
	unsettled := st.Coordinator == "" || e.electing
	began := e.electionBegan || unsettled && st.State != core.StateSleep
	e.electionBegan = false
	if began && e.unsettledSince.IsZero() {
		e.unsettledSince = time.Now()
	}
	if unsettled || e.unsettledSince.IsZero() {
		return
	}
	d := time.Since(e.unsettledSince)
	e.unsettledSince = time.Time{}
	e.upd.ElectionEnded, e.upd.ElectionDuration = true, d
	e.log.Info("coordinator agreed", "coordinator", st.Coordinator, "term", core.Term(st.Term), "after", d)
}

// changeLeader takes in a new Leadership, which observe publishes once
// Status and Check agree with it: it ends this node's span (Check fails,
// then its context is cancelled) before it announces anything else, and starts a new span (its context exists, then Check
// passes: publishLease) whenever this node leads, also again in a term it
// led in before. OnNewLeader hears each (coordinator, term) once, however
// often the coordinator is lost and found again in between.
func (e *Elector) changeLeader(l Leadership) {
	prev := e.last
	e.last = l
	if prev.IsSelf && e.leading.Load() != nil {
		e.lease.Store(nil)
		e.stopLeading()
	}
	e.upd.LeaderChanged = true
	if l.Known() {
		if l.Coordinator != e.announced.Coordinator || l.Term != e.announced.Term {
			e.announced = l
			e.log.Info("new coordinator", "coordinator", l.Coordinator, "term", core.Term(l.Term))
			e.notify.push(notification{kind: notifyNewLeader, l: l})
		}
	} else {
		e.log.Debug("no coordinator", "last", prev.Coordinator, "term", core.Term(prev.Term))
	}
	if l.IsSelf {
		e.startLeading(l)
	}
}

// startLeading starts a span of l and queues its Claim and
// OnStartedLeading: the notifier runs them once the callbacks queued
// before (the previous span's included) have returned.
func (e *Elector) startLeading(l Leadership) {
	run := e.startSpan(l)
	e.log.Info("started leading", "term", core.Term(l.Term), "span", run.span.Number)
	if e.notify.push(notification{kind: notifyStarted, l: l, ctx: run.ctx, work: run.work}) {
		e.workSpan = run.work
	}
}

// stopLeading ends the current span: its context is cancelled and its
// OnStoppedLeading queued.
func (e *Elector) stopLeading() {
	run := e.leading.Load()
	e.leading.Store(nil)
	run.cancel()
	e.log.Info("stopped leading", "term", core.Term(run.span.Term), "span", run.span.Number)
	e.notify.push(notification{kind: notifyStopped, l: Leadership{Coordinator: e.id, Term: run.span.Term, IsSelf: true}, work: run.work})
}

// handoff runs when Run's context ends: a leader resigns (its leader work
// has been cancelled with Run's context; the successor is asked once that
// work has returned, or StopTimeout has passed), then keeps handling
// transport events (not ticks, so it cannot stand again) until it sees a
// successor, HandoffTimeout passes or Close is called.
func (e *Elector) handoff(events <-chan Event) {
	if err := e.node.Resign(); err != nil {
		e.flush()
		return // not leading, or nobody to hand off to
	}
	e.flush()
	e.log.Info("resigned on shutdown; waiting for a successor", "timeout", e.cfg.HandoffTimeout)
	stop := time.NewTimer(e.cfg.StopTimeout)
	defer stop.Stop()
	timer := time.NewTimer(e.cfg.StopTimeout + e.cfg.HandoffTimeout)
	defer timer.Stop()
	for !e.last.Known() {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			e.handle(&ev)
		case <-e.workWake:
			e.workEnded()
		case <-stop.C:
			if e.node.HandoffPending() {
				e.log.Warn("leader work still running after StopTimeout; handing off anyway", "timeout", e.cfg.StopTimeout)
				e.workSpan = 0
			}
		case <-timer.C:
			e.log.Warn("no successor announced before the hand-off timeout")
			return
		case <-e.closing:
			return
		}
		e.flush()
	}
}

// finish ends this node's part: leadership ends, observers see no
// coordinator and are closed, the snapshot says stopped.
func (e *Elector) finish() {
	e.lease.Store(nil)
	if e.last.IsSelf && e.leading.Load() != nil {
		e.stopLeading()
	}
	for _, v := range e.verifiers {
		v.done <- ErrNotLeader
	}
	e.verifiers = nil
	e.last = Leadership{}
	e.status.State = core.StateSleep // a stopped node takes no steps: not "coordinator" any more
	e.upd.StateChanged, e.upd.LeaderChanged = true, true
	e.record()
	e.obs.close(e.last)
	s := *e.snap.Load()
	s.Coordinator, s.Stopped = "", true
	e.snap.Store(&s)
	e.log.Info("elector stopped")
}

// transportClosed logs why the transport closed its events and returns
// ErrTransportClosed, wrapping the transport's own error if it has one.
func (e *Elector) transportClosed() error {
	if f, ok := e.tr.(FailingTransport); ok {
		if err := f.Err(); err != nil {
			e.log.Error("transport failed; stopping", "error", err)
			return fmt.Errorf("%w: %w", ErrTransportClosed, err)
		}
	}
	e.log.Warn("transport closed its events; stopping")
	return ErrTransportClosed
}
