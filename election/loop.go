package election

import (
	"context"
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// loop is the one goroutine that owns the node. Every event is followed by
// flush: send what the node queued, then report what changed (PeerUps
// that arrive together share one flush: morePeerUps). Nothing in the loop
// blocks but the select.
func (e *Elector) loop(ctx context.Context) error {
	ticker := time.NewTicker(e.cfg.Tick)
	defer ticker.Stop()
	e.origin = time.Now()
	events := e.tr.Events()
	e.log.Info("elector running", "algorithm", e.self.Algorithm, "rating", e.status.Rating,
		"non_voter", e.self.NonVoter, "quorum", e.cfg.QuorumSize, "expect", e.cfg.ExpectVoters)
	for {
		select {
		case <-ticker.C:
			e.advance()
		case <-e.workWake:
			e.workEnded()
		case ev, ok := <-events:
			if !ok {
				err := e.transportClosed()
				e.finish()
				return err
			}
			// The core's clock first: a loop that ran late must not stamp
			// a heartbeat's receipt (where the promise its ack makes
			// starts) with a time before the heartbeat was even sent.
			e.advance()
			e.handle(ev)
			if ev.Kind == EventPeerUp {
				if next, ok := e.morePeerUps(events); ok {
					e.flush()
					e.advance()
					e.handle(next)
				}
			}
		case r := <-e.requests:
			e.advance()
			err := r.fn()
			e.flush()
			r.result <- err
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

// handle feeds one transport event to the node.
func (e *Elector) handle(ev Event) {
	switch ev.Kind {
	case EventMessage:
		m := ev.Message
		if e.log.IsDebug() {
			e.log.Debug("receive", "type", m.Type, "peer", m.From, "term", core.Term(m.Term))
		}
		e.node.Step(m)
	case EventPeerUp:
		e.log.Debug("peer up", "peer", ev.Peer.ID, "rating", ev.Peer.Rating, "non_voter", ev.Peer.NonVoter)
		e.node.PeerUp(ev.Peer)
		e.membersDirty = true
	case EventPeerDown:
		e.log.Debug("peer down", "peer", ev.Peer.ID)
		e.node.PeerDown(ev.Peer.ID)
		e.membersDirty = true
	case EventPeerRating:
		e.log.Debug("peer rating", "peer", ev.Peer.ID, "rating", ev.Peer.Rating)
		e.node.PeerRating(ev.Peer.ID, ev.Peer.Rating)
		e.membersDirty = true
	default:
		e.log.Warn("ignoring transport event of unknown kind", "kind", ev.Kind)
	}
}

// maxPeerUps bounds the PeerUps handled before one flush (morePeerUps).
const maxPeerUps = 256

// morePeerUps handles the PeerUps already waiting behind one (a join's
// push-pull reports up to the whole cluster at once), so that one flush
// follows them all: the member list the status publishes is rebuilt once,
// not once per member, which at n = 1,000 was O(n) garbage for each of the
// n members every member learns. A PeerUp changes the view alone (a
// coordinator also queues a heartbeat to the newcomer, sent by the flush).
// It stops at the first other event and returns it, to be handled after
// the flush like any event.
func (e *Elector) morePeerUps(events <-chan Event) (Event, bool) {
	for range maxPeerUps {
		select {
		case ev, ok := <-events:
			if !ok {
				return Event{}, false // the closed channel is read again by the loop
			}
			if ev.Kind != EventPeerUp {
				return ev, true
			}
			e.handle(ev)
		default:
			return Event{}, false
		}
	}
	return Event{}, false
}

// flush sends what the node queued and reports every change since the
// last flush.
func (e *Elector) flush() {
	for _, m := range e.node.Ready() {
		e.send(m)
	}
	e.account()
	e.observe()
	if e.node.HandoffPending() && e.workTerm == 0 {
		// The leader work has stopped (or there is none): pass the role on.
		e.node.CompleteHandoff()
		e.flush()
	}
}

// markWorkDone is the notifier's word that the leader work of term (Claim,
// OnStartedLeading) has returned. It never blocks.
func (e *Elector) markWorkDone(term uint64) {
	e.workDone.Store(term)
	select {
	case e.workWake <- struct{}{}:
	default:
	}
}

// workEnded: the leader work of workTerm may have returned; a hand-off
// waiting for it goes on.
func (e *Elector) workEnded() {
	if e.workTerm != 0 && e.workDone.Load() >= e.workTerm {
		e.workTerm = 0
	}
}

// send hands m to the transport. Ready's buffer is reused by the node, so
// the transport gets a copy.
func (e *Elector) send(m core.Message) {
	if e.log.IsDebug() {
		e.log.Debug("send", "type", m.Type, "peer", m.To, "term", core.Term(m.Term))
	}
	if err := e.tr.Send(m.Clone()); err != nil {
		e.rec.MessagesDropped(DropSendFailed, 1)
		e.log.Debug("send failed", "type", m.Type, "peer", m.To, "error", err)
		return
	}
	e.rec.MessagesSent(m.Type, 1)
}

// account turns the node's cumulative counters into Recorder deltas and
// logs the elections this node takes part in.
func (e *Elector) account() {
	c, p := e.node.Counters(), &e.counters
	for t := range c.Received {
		if d := c.Received[t] - p.Received[t]; d > 0 {
			e.rec.MessagesReceived(core.MsgType(t), d)
		}
	}
	for r := range c.Dropped {
		if d := c.Dropped[r] - p.Dropped[r]; d > 0 {
			e.rec.MessagesDropped(core.DropReason(r).String(), d)
		}
	}
	if d := c.HeartbeatMisses - p.HeartbeatMisses; d > 0 {
		e.rec.HeartbeatMisses(d)
	}
	if d := c.ElectionsStarted - p.ElectionsStarted; d > 0 {
		e.electionBegan = true
		e.rec.Elections(ElectionStarted, d)
		e.log.Info("election started", "term", core.Term(e.node.Status().Term))
	}
	if d := c.ElectionsRestarted - p.ElectionsRestarted; d > 0 {
		e.rec.Elections(ElectionRestarted, d)
		e.log.Info("election restarted: no coordinator announced in time")
	}
	if d := c.ElectionsWon - p.ElectionsWon; d > 0 {
		e.rec.Elections(ElectionWon, d)
	}
	if d := c.ElectionsLost - p.ElectionsLost; d > 0 {
		e.rec.Elections(ElectionLost, d)
	}
	e.counters = *c
}

// observe compares the node's status with the last one reported and
// reports the differences.
func (e *Elector) observe() {
	st, electing := e.node.Status(), e.node.Electing()
	if r := e.node.Roster(); r != e.roster || r.Gen() != e.rosterGen {
		e.roster, e.rosterGen = r, r.Gen() // a member or rating learned from a message
		e.membersDirty = true
	}
	startup := e.observeStartup()
	changed := st != e.status || electing != e.electing || e.membersDirty || startup
	if st.State != e.status.State {
		e.rec.SetState(st.State)
	}
	if st.Term != e.status.Term {
		e.rec.SetTerm(uint64(st.Term))
	}
	e.status, e.electing = st, electing
	e.trackElection()
	if l := e.leadership(); l != e.last {
		e.changeLeader(l)
	}
	e.publishLease()
	if len(e.verifiers) > 0 {
		e.checkVerifiers()
	}
	if changed {
		e.updateSnapshot()
	}
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
	e.rec.ElectionDuration(d.Seconds())
	e.log.Info("coordinator agreed", "coordinator", st.Coordinator, "term", core.Term(st.Term), "after", d)
}

// changeLeader reports a new Leadership: it ends this node's leadership
// (Check fails, then its context is cancelled) before it announces
// anything else. OnNewLeader hears each (coordinator, term) once, and
// OnStartedLeading each term once, however often the coordinator is lost
// and found again in between.
func (e *Elector) changeLeader(l Leadership) {
	prev := e.last
	e.last = l
	if prev.IsSelf && e.leading != nil {
		e.lease.Store(nil)
		e.stopLeading(prev)
	}
	e.rec.SetLeader(l)
	if l.Known() {
		e.rec.LeaderChanged()
		if l.Coordinator != e.announced.Coordinator || l.Term != e.announced.Term {
			e.announced = l
			e.log.Info("new coordinator", "coordinator", l.Coordinator, "term", core.Term(l.Term))
			e.notify.push(notification{kind: notifyNewLeader, l: l})
		}
	} else {
		e.log.Debug("no coordinator", "last", prev.Coordinator, "term", core.Term(prev.Term))
	}
	if l.IsSelf && l.Term != e.ledTerm {
		e.startLeading(l)
	}
	e.obs.publish(l)
}

func (e *Elector) startLeading(l Leadership) {
	ctx, cancel := context.WithCancel(e.runCtx)
	e.leading, e.ledTerm = cancel, l.Term
	e.log.Info("started leading", "term", core.Term(l.Term))
	if e.notify.push(notification{kind: notifyStarted, l: l, ctx: ctx}) {
		e.workTerm = l.Term
	}
}

func (e *Elector) stopLeading(l Leadership) {
	e.leading()
	e.leading = nil
	e.log.Info("stopped leading", "term", core.Term(l.Term))
	e.notify.push(notification{kind: notifyStopped, l: l})
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
			e.handle(ev)
		case <-e.workWake:
			e.workEnded()
		case <-stop.C:
			if e.node.HandoffPending() {
				e.log.Warn("leader work still running after StopTimeout; handing off anyway", "timeout", e.cfg.StopTimeout)
				e.workTerm = 0
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
	if e.last.IsSelf && e.leading != nil {
		e.stopLeading(e.last)
	}
	for _, v := range e.verifiers {
		v.done <- ErrNotLeader
	}
	e.verifiers = nil
	e.last = Leadership{}
	e.rec.SetLeader(e.last)
	e.rec.SetState(core.StateSleep) // a stopped node takes no steps: not "coordinator" any more
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
