package election

import (
	"context"
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
	"github.com/coordelect/coordelect/internal/grow"
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
	e.log.Info("elector running", "algorithm", e.self.Algorithm, "rating", e.def.status.rating,
		"non_voter", e.self.NonVoter, "quorum", e.cfg.QuorumSize, "expect", e.cfg.ExpectVoters,
		"elections", e.g.Len())
	e.view.Lock()
	defer e.view.Unlock()
	for _, el := range e.list {
		if el.observeHold() { // a start-up hold is in force from the start
			el.updateSnapshot()
		}
	}
	return timer
}

// tick: the timer fired at the group's deadline.
//
//go:noinline
func (e *Elector) tick() {
	e.view.Lock()
	defer e.view.Unlock()
	e.armed = -1
	e.advance()
	e.flush()
}

// workEnded: the leader work of some names' spans may have returned; a
// hand-off waiting for it goes on.
//
//go:noinline
func (e *Elector) workEnded() {
	e.view.Lock()
	defer e.view.Unlock()
	e.endWork()
	e.flush()
}

// event hands the node one transport event, and the PeerUps waiting
// behind a PeerUp.
//
//go:noinline
func (e *Elector) event(events <-chan Event) {
	e.view.Lock()
	defer e.view.Unlock()
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
	e.flush()
}

// request runs a local request (Elector.do) on the loop.
//
//go:noinline
func (e *Elector) request(r request) {
	e.view.Lock()
	e.advance()
	e.view.Unlock()
	err := r.fn() // it holds e.view while it calls into the group (inView)
	e.view.Lock()
	e.flush()
	e.view.Unlock()
	r.result <- err
}

// inView runs f, which calls into the group, holding e.view: the part of
// a request (Elector.do) that changes what Status reads. The rest of the
// request runs without it, so that Status answers while a request waits.
func (e *Elector) inView(f func() error) error {
	e.view.Lock()
	defer e.view.Unlock()
	return f()
}

// handle feeds one transport event to the group; any of them can change
// a name's view, which Status reads (the loop holds e.view).
func (e *Elector) handle(ev *Event) {
	switch ev.Kind {
	case EventMessage:
		m := ev.Message
		if e.log.IsDebug() {
			e.log.Debug("receive", msgFields(m, m.From)...)
		}
		e.touch(e.def)
		_ = e.g.With(DefaultName, func(n *core.Node) error { n.Step(m); return nil })
	case EventBatch:
		e.stepBatch(&ev.Batch)
	case EventCandidacy:
		if ev.Candidacy != nil {
			e.cand.receive(ev.Candidacy)
		}
	case EventPeerUp:
		e.log.Debug("peer up", "peer", ev.Peer.ID, "rating", ev.Peer.Rating, "non_voter", ev.Peer.NonVoter, "named", ev.Named)
		e.g.PeerUp(ev.Peer)
		e.cand.peerUp(ev.Peer.ID, ev.Named)
		e.viewChanged = true
	case EventPeerDown:
		e.log.Debug("peer down", "peer", ev.Peer.ID)
		e.g.PeerDown(ev.Peer.ID)
		e.cand.peerDown(ev.Peer.ID)
		e.viewChanged = true
	case EventPeerRating:
		e.log.Debug("peer rating", "peer", ev.Peer.ID, "rating", ev.Peer.Rating)
		e.g.PeerRating(ev.Peer.ID, ev.Peer.Rating)
		e.viewChanged = true
	default:
		e.log.Warn("ignoring transport event of unknown kind", "kind", ev.Kind)
	}
}

// stepBatch hands the group a batch, and notes the names it reached:
// their leases and verifiers may have moved without a Ready of their
// node (an ack changes neither the status nor the messages queued).
func (e *Elector) stepBatch(b *group.Batch) {
	if e.log.IsDebug() {
		for _, p := range b.Pairs {
			e.log.Debug("receive", append(msgFields(p.Msg, p.Msg.From), "election", p.Name)...)
		}
	}
	e.g.Step(*b)
	for i := range b.Pairs {
		if el := e.lookup(b.Pairs[i].Name); el != nil {
			e.touch(el)
		}
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

// flush takes the group's Ready: it sends the batches, and reports what
// changed of each name it touched to observers, callbacks, the snapshot
// and the Recorder (report.go). The caller holds e.view.
func (e *Elector) flush() {
	rd := e.g.Ready()
	e.node = e.g.Node(DefaultName)
	for i := range rd.Batches {
		e.sendBatch(&rd.Batches[i])
	}
	e.dropped(rd.Counters)
	e.touch(e.def) // the unnamed election is reported on at every flush
	for _, u := range rd.Updates {
		if el := e.lookup(u.Name); el != nil && !el.removed {
			el.account(u.Ready)
			el.readied = true
			e.touch(el)
			if u.Name == DefaultName {
				e.viewChanged = e.viewChanged || u.Ready.ViewChanged
			}
		}
	}
	// The names the group handed no Update but that this flush reports
	// on (stepped, asked, the unnamed one) may still have counted
	// something (a message received changes neither the status nor the
	// messages queued): their node's Ready, with no message in it (the
	// group took any), hands it over.
	for _, el := range e.touched {
		if !el.readied {
			n := el.node()
			rd := n.Ready()
			el.account(rd)
			if el == e.def {
				e.viewChanged = e.viewChanged || rd.ViewChanged
			}
			n.Done() // the node gives its Ready back to the group's host
		}
		el.readied = false
	}
	if e.membersDirty = e.membersDirty || e.viewChanged; e.membersDirty {
		e.countMembers()
	}
	e.clipRoster(e.viewChanged)
	viewChanged := e.viewChanged
	e.viewChanged = false
	handoff := false
	for _, el := range e.touched {
		el.touched = false
		n := el.node()
		el.observe(n.Status(), n.Electing(), viewChanged)
		el.record()
		if n.HandoffPending() && el.workSpan() == 0 {
			// The leader work has stopped (or there is none): pass the
			// role on; the next flush sends what that queued.
			_ = e.g.With(el.name, func(n *core.Node) error { n.CompleteHandoff(); return nil })
			handoff = true
		}
	}
	clear(e.touched)
	e.touched = e.touched[:0]
	e.cand.flush()
	if handoff {
		e.flush()
	}
}

// touch lists el for the report of the next flush.
func (e *Elector) touch(el *Election) {
	if !el.touched {
		el.touched = true
		e.touched = append(e.touched, el)
	}
}

// dropped takes what the group dropped of the batches it was handed into
// the unnamed election's Update: pairs for a name this member does not
// run, and pairs not addressed to it.
func (e *Elector) dropped(c group.Counters) {
	if c.UnknownName > 0 {
		e.def.u().UnknownElection += c.UnknownName
		e.log.Debug("dropped pairs for elections this member does not run", "pairs", c.UnknownName)
	}
	if c.Misaddressed > 0 {
		e.def.u().Dropped[core.DropMisaddressed] += c.Misaddressed
	}
}

// endWork: the leader work of some names' spans may have returned: those
// names' hand-offs, if any, go on at the next flush.
func (e *Elector) endWork() {
	keep := e.working[:0]
	for _, el := range e.working {
		if w := el.workSpan(); w != 0 && el.notify.workDone.Load() >= w {
			el.lead.workSpan = 0
			e.touch(el)
			continue
		}
		if el.workSpan() != 0 && !el.removed {
			keep = append(keep, el)
		}
	}
	clear(e.working[len(keep):])
	e.working = keep
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

// sendBatch hands b to the transport. To a member that runs named
// elections (BatchTransport) the other names' pairs go as one batch
// (SendBatch); so do the unnamed election's heartbeats and acks when the
// batch carries other names' pairs (they ride in its datagrams instead of
// costing one of their own: they are unnumbered datagrams either way).
// The unnamed election's other messages go by Send, one by one, as an
// Elector without named elections sends them, so that their order on the
// link holds and a transport that wraps Send sees them as it always did;
// without named pairs in the batch its heartbeats do too. To a member
// that runs no named elections the other names' pairs go nowhere
// (counted as SendFailed: it runs the unnamed election alone and stands
// for no other name). Ready's buffers are the group's: Send gets a copy
// of each message, SendBatch copies what it keeps (a batch that goes
// whole is the group's own).
func (e *Elector) sendBatch(b *group.Batch) {
	debug := e.log.IsDebug()
	batches := e.btr != nil && e.cand.named(b.To)
	carry := false // the batch carries other names' pairs to a member that takes them
	for _, p := range b.Pairs {
		if p.Name != DefaultName {
			carry = batches
			break
		}
	}
	inBatch := func(p *group.Pair) bool { return p.Name != DefaultName || carry && datagram(p.Msg) }
	// The batch goes as the group built it unless some of its pairs go
	// by Send: then the others are copied into e.pairs.
	named, whole := b.Pairs, true
	for i := range b.Pairs {
		if !inBatch(&b.Pairs[i]) {
			named, whole = e.pairs[:0], false
			break
		}
	}
	for i := range b.Pairs {
		p := &b.Pairs[i]
		if debug {
			e.log.Debug("send", append(msgFields(p.Msg, p.Msg.To), "election", p.Name)...)
		}
		if inBatch(p) {
			if !whole {
				named = append(named, *p)
			}
			continue
		}
		err := e.tr.Send(p.Msg.Clone())
		if err != nil {
			e.log.Debug("send failed", "type", p.Msg.Type, "peer", p.Msg.To, "error", err)
		}
		e.def.countSent(p.Msg.Type, err == nil)
	}
	if len(named) > 0 {
		ok := batches
		if ok {
			err := e.btr.SendBatch(group.Batch{From: b.From, To: b.To, Pairs: named})
			if err != nil {
				e.log.Debug("send failed", "peer", b.To, "pairs", len(named), "error", err)
			}
			ok = err == nil
		}
		e.countSent(named, ok)
	}
	if !whole {
		clear(named)
		e.pairs = named[:0]
		if cap(e.pairs) > maxPairsKept {
			e.pairs = nil // a burst's: the next mixed batch makes its own
		}
	}
}

// maxPairsKept bounds the buffer sendBatch keeps for the batches that
// it splits.
const maxPairsKept = 64

// datagram reports whether m goes as an unnumbered datagram (a heartbeat
// or an ack, not marked BestEffort): it keeps no order with the link's
// other messages, so it may travel in a batch.
func datagram(m core.Message) bool {
	return (m.Type == core.MsgHeartbeat || m.Type == core.MsgHeartbeatAck) && !m.BestEffort
}

// countSent counts pairs as sent, or as refused, in their names' Updates.
func (e *Elector) countSent(pairs []group.Pair, ok bool) {
	var el *Election
	for i := range pairs {
		p := &pairs[i]
		if el == nil || el.name != p.Name {
			if el = e.lookup(p.Name); el == nil {
				continue // a name removed since its pairs were queued
			}
		}
		el.countSent(p.Msg.Type, ok)
	}
}

// countSent counts one message of the name as sent, or as refused. A
// heartbeat of a name that has no Update yet is counted in the Elector's
// beatsSent, which the name's next Update takes (u): a leader sends one a
// round and is seldom reported on in between, and would hold an Update
// for it all along.
func (el *Election) countSent(t core.MsgType, ok bool) {
	if !ok {
		el.u().SendFailed++
		return
	}
	if t == core.MsgHeartbeat && el.upd == nil {
		el.e.beatsSent.add(el)
		return
	}
	el.u().Sent[t]++
}

// sentCounts counts the heartbeats sent of names that have no Update
// (Election.countSent). Its map gives back the room a burst grew
// (grow.ShrinkMap).
type sentCounts struct {
	m    map[*Election]uint64
	peak int
}

func (s *sentCounts) add(el *Election) {
	if s.m == nil {
		s.m = make(map[*Election]uint64)
	}
	s.m[el]++
	s.peak = max(s.peak, len(s.m))
}

// take returns el's count and forgets it.
func (s *sentCounts) take(el *Election) uint64 {
	k, ok := s.m[el]
	if !ok {
		return 0
	}
	delete(s.m, el)
	s.m = grow.ShrinkMap(s.m, &s.peak)
	return k
}

// has reports whether el has a count.
func (s *sentCounts) has(el *Election) bool {
	_, ok := s.m[el]
	return ok
}

// rosterClipAfter is how long the view goes unchanged before the names'
// rosters give back their spare room (core.Node.ClipRoster): longer than
// the burst of joins of a cluster forming or a partition healing.
const rosterClipAfter = 30 * time.Second

// clipRoster has every name's roster give back its spare room once the
// view has not changed for rosterClipAfter (once after each change). The
// caller holds e.view (Status reads the rosters).
func (e *Elector) clipRoster(changed bool) {
	now := time.Now()
	if changed || e.viewSince.IsZero() {
		e.viewSince, e.clipped = now, false
		return
	}
	if e.clipped || now.Sub(e.viewSince) < rosterClipAfter {
		return
	}
	for _, el := range e.list {
		el.node().ClipRoster()
	}
	e.clipped = true
}

// handoff runs when Run's context ends: a leader resigns every name it
// leads (its leader work has been cancelled with Run's context; each
// successor is asked once that name's work has returned, or StopTimeout
// has passed), then keeps handling transport events (not ticks, so it
// cannot stand again) until every such name has a successor,
// HandoffTimeout passes or Close is called.
func (e *Elector) handoff(events <-chan Event) {
	e.view.Lock()
	var waiting []*Election
	for _, el := range e.list {
		if el.resignOnShutdown() {
			waiting = append(waiting, el)
		}
	}
	e.flush()
	e.view.Unlock()
	if len(waiting) == 0 {
		return // not leading, or nobody to hand off to
	}
	e.log.Info("resigned on shutdown; waiting for a successor", "timeout", e.cfg.HandoffTimeout, "elections", len(waiting))
	stop := time.NewTimer(e.cfg.StopTimeout)
	defer stop.Stop()
	timer := time.NewTimer(e.cfg.StopTimeout + e.cfg.HandoffTimeout)
	defer timer.Stop()
	for !succeeded(waiting) {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			e.view.Lock()
			e.handle(&ev)
			e.flush()
			e.view.Unlock()
		case <-e.workWake:
			e.workEnded()
		case <-stop.C:
			e.view.Lock()
			for _, el := range waiting {
				if el.node().HandoffPending() {
					el.logger().Warn("leader work still running after StopTimeout; handing off anyway", "timeout", e.cfg.StopTimeout)
					if el.lead != nil {
						el.lead.workSpan = 0
					}
					e.touch(el)
				}
			}
			e.flush()
			e.view.Unlock()
		case <-timer.C:
			e.log.Warn("no successor announced before the hand-off timeout")
			return
		case <-e.closing:
			return
		}
	}
}

// resignOnShutdown resigns the name if this member leads it, and reports
// whether it did (a successor is to be awaited).
func (el *Election) resignOnShutdown() bool {
	el.e.touch(el)
	return el.e.g.With(el.name, func(n *core.Node) error { return n.Resign() }) == nil
}

// succeeded reports whether every name of els knows a coordinator.
func succeeded(els []*Election) bool {
	for _, el := range els {
		if !el.lastLeader().Known() {
			return false
		}
	}
	return true
}

// finish ends this member's part: every name's leadership ends, its
// observers see no coordinator and are closed, its snapshot says stopped.
func (e *Elector) finish() {
	e.view.Lock()
	defer e.view.Unlock()
	for _, el := range e.list {
		el.end()
	}
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
