package sim

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/prefetch"
)

type evKind uint8

const (
	evTick evKind = iota
	evDeliver
	evDown   // view: a PeerDown reaches node
	evUp     // view: a PeerUp reaches node
	evResume // a stalled node runs again (Stall)
	evBatch  // with names: a batch reaches node (scheduleBatch)
)

// event is 208 bytes, nearly all of them the message: a burst of a
// million announcements is a million events, and every delivery writes
// and reads one, so what it holds besides the message packs into one
// 32-byte header.
type event struct {
	at   int64
	seq  uint64
	inc  int64 // evDeliver: the target's incarnation when sent
	node int32 // a node's index; evTick: a phase's
	kind evKind
	// forged: evDeliver of a frame from Forge, which no partition stops
	// and which is not in the in-flight counts.
	forged bool
	// nonVoter: evDown and evUp, the member's NonVoter flag (peer).
	nonVoter bool
	// msg is evDeliver's message; evDown and evUp carry their member's ID
	// and rating in it instead (viewEvent), rather than in fields of their
	// own.
	msg core.Message
}

// viewEvent returns an evDown or evUp event for node about member p.
func viewEvent(at int64, kind evKind, node int, p core.Peer) event {
	return event{at: at, kind: kind, node: int32(node), nonVoter: p.NonVoter, msg: core.Message{From: p.ID, Rating: p.Rating}}
}

// peer returns the member of an evDown or evUp event (viewEvent).
func (e *event) peer() core.Peer {
	return core.Peer{ID: e.msg.From, Rating: e.msg.Rating, NonVoter: e.nonVoter}
}

// phase is the nodes that tick at one offset within the tick interval:
// the ticks it has had, and when its nodes are due.
type phase struct {
	offset int64
	ticks  int
	wakes  wakeQueue
}

// wake is a node due at a tick of its phase.
type wake struct {
	tick int
	node int
}

// wakeQueue is a min-heap of wakes by tick, then node.
type wakeQueue = minHeap[wake]

func (w wake) before(o wake) bool {
	if w.tick != o.tick {
		return w.tick < o.tick
	}
	return w.node < o.node
}

// Step runs the next event. It reports false when nothing is left.
func (s *Sim) Step() bool {
	if s.queue.Len() == 0 || s.stopped {
		return false
	}
	e := s.queue.pop()
	s.now = e.at
	if s.names == nil {
		if i := s.queue.nextNode(prefetchAhead); i >= 0 {
			s.prefetchNode(i)
		}
		if i := s.queue.nextNode(prefetchAhead - 1); i >= 0 {
			s.prefetchState(i)
		}
	}
	if e.kind == evTick {
		s.schedule(event{at: e.at + s.cfg.TickMs, kind: evTick, node: e.node})
		s.tickPhase(int(e.node))
		return true
	}
	sn := s.nodes[e.node]
	if sn.stalled && sn.up && e.kind != evResume {
		s.hold(sn, e) // a stalled node takes its input when it resumes
		return true
	}
	switch e.kind {
	case evResume:
		if !s.resume(sn, e.at) {
			return true
		}
	case evDeliver:
		if !e.forged {
			s.inFlight[e.msg.Type]--
			s.inFlightAll--
		}
		if !sn.up || sn.inc != e.inc || (!e.forged && s.cut(e.msg.From, e.msg.To)) {
			s.Lost++
			if s.tracing() && e.msg.Type.ElectionTraffic() {
				s.tracef("%s -> %s %s lost", e.msg.From, e.msg.To, e.msg.Type)
			}
			return true
		}
		s.input(sn).Step(e.msg)
		if !sn.leads && sn.checkInc == sn.inc && !sn.node.HasReady() {
			// Nothing to send, no new status, and the checker has seen
			// this one (it looks only at coordinators' statuses twice):
			// the counts wait (takeQuiet), and flush has nothing to do.
			sn.quiet = true
			s.reschedule(sn)
			return true
		}
	case evBatch:
		if !s.deliverBatch(sn, &e) {
			return true
		}
	case evDown, evUp:
		if !sn.up || s.staleView(e) {
			return true
		}
		if s.named() {
			if g := s.inputGroup(sn); e.kind == evDown {
				g.PeerDown(e.peer().ID)
			} else {
				g.PeerUp(e.peer())
			}
		} else if e.kind == evDown {
			s.input(sn).PeerDown(e.peer().ID)
		} else {
			s.input(sn).PeerUp(e.peer())
		}
	}
	s.flush(sn)
	return true
}

// prefetchAhead is how many events ahead Step asks for a node's cache
// lines: a heartbeat round visits 10,000 nodes whose state is far from
// the cache, and two events ahead leave the lines time to arrive (one
// ahead is too few for a 10,000-node heartbeat round:
// BenchmarkSimBullyView10000 measures it).
const prefetchAhead = 2

// Cache lines prefetched: of the simNode, its first two (what every
// delivery reads); of the core.Node, its first twelve (768 bytes: core
// keeps the fields every input reads first, then the configuration and
// the Ready whose counts a delivery adds to). The lines past these 12
// are configuration that a delivery rarely reads.
const (
	simNodeLines  = 2
	coreNodeLines = 12
)

// prefetchNode asks for the cache lines of node i, the node of an event
// that comes soon, so that they load while the events before it run. It
// changes nothing (a crashed node's old state machine is prefetched for
// nothing). The core.Node's address comes from Sim.cores, not from the
// simNode, so that neither waits for the other.
func (s *Sim) prefetchNode(i int) {
	prefetch.Lines(unsafe.Pointer(s.nodes[i]), simNodeLines)
	prefetch.Lines(unsafe.Pointer(s.cores[i]), coreNodeLines)
}

// prefetchState asks for the first cache lines of node i's algorithm
// state (core.Node.PrefetchState), which lives apart from the node and
// whose first read in an input is otherwise a cache miss (a quiet ring
// member's heartbeat reads none of it, and nothing is prefetched for it).
// Its address is read from the node, whose first line prefetchNode asked
// for one event before, so this runs for the node of the next event, not
// of the one after.
func (s *Sim) prefetchState(i int) { s.cores[i].PrefetchState() }

// staleView reports whether newer news about the same member already
// reached this observer (uneven view delays can reorder them), and records
// e as the newest otherwise.
func (s *Sim) staleView(e event) bool {
	subj, ok := s.find(e.peer().ID)
	if !ok {
		return false
	}
	k := [2]int{int(e.node), int(subj.idx)}
	if e.seq < s.viewSeq[k] {
		return true
	}
	s.viewSeq[k] = e.seq
	return false
}

// tickPhase runs one tick of a phase: it ticks, in ring order, the live
// nodes of the phase that are due (a timer of theirs can fire). The
// others only count, which they catch up on at their next input or tick
// (sync). A tick that sends nothing and changes nothing needs no checking.
func (s *Sim) tickPhase(ph int) {
	s.phases[ph].ticks++
	t := s.phases[ph].ticks
	q := &s.phases[ph].wakes
	due := s.due[:0]
	for len(*q) > 0 && (*q)[0].tick <= t {
		w := q.pop()
		if sn := s.nodes[w.node]; sn.wake == w.tick {
			sn.wake = 0
			due = append(due, w.node)
		}
	}
	slices.Sort(due) // the heap pops one tick's nodes in ring order already
	for _, i := range due {
		sn := s.nodes[i]
		if !sn.up || sn.stalled {
			continue // crashed (a trigger may crash a later node of this tick), or stalled
		}
		s.syncTo(sn, t-1)
		if s.named() {
			s.groups[sn.idx].g.Tick()
			sn.synced = t
			s.flush(sn)
			continue
		}
		s.takeQuiet(sn) // the counts of the messages before the tick go first
		sn.node.Tick()
		sn.synced = t
		if !sn.node.HasReady() {
			s.reschedule(sn)
			continue
		}
		s.flush(sn)
	}
	s.due = due
}

// sync applies the ticks of its phase that a live node has not been given
// yet: none of them reaches its deadline, so they only count.
func (s *Sim) sync(sn *simNode) { s.syncTo(sn, s.phases[sn.phase].ticks) }

func (s *Sim) syncTo(sn *simNode, tick int) {
	if k := tick - sn.synced; k > 0 && !sn.stalled {
		if s.named() {
			// A group's Skip hands nothing over (no deadline falls in
			// it), but a round instant it passes lets held heartbeats go
			// and it asks every name: the Ready taken here ends that, as
			// a Ready after each tick would, so that the input that
			// follows is handled as it is when every tick is given.
			s.groups[sn.idx].g.Skip(k)
			sn.synced = tick
			s.flushGroup(sn)
			return
		}
		if sn.quiet && k >= sn.node.NextDeadline()-sn.node.Now() {
			s.takeQuiet(sn) // Skip ticks: the counts of the messages go first
		}
		sn.node.Skip(k)
		sn.synced = tick
	}
}

// input returns a live node brought up to the present, for an input (a
// message, a view change, a call); flush must follow.
func (s *Sim) input(sn *simNode) *core.Node {
	s.sync(sn)
	return sn.node
}

// reschedule registers when a live node is next due: the phase tick at
// which its next deadline falls. An earlier registration is kept (the node
// is then ticked early, which only counts); a later one is superseded.
func (s *Sim) reschedule(sn *simNode) {
	if !sn.up {
		return
	}
	t := sn.synced + 1
	if !s.cfg.dense {
		t = sn.synced + s.untilDue(sn)
	}
	if sn.wake != 0 && sn.wake <= t {
		return
	}
	sn.wake = t
	s.phases[sn.phase].wakes.push(wake{tick: t, node: int(sn.idx)})
}

// untilDue is the number of ticks until the node's (or its group's) next
// deadline.
func (s *Sim) untilDue(sn *simNode) int {
	if s.names != nil {
		g := s.groups[sn.idx].g
		return g.NextDeadline() - g.Now()
	}
	return sn.node.NextDeadline() - sn.node.Now()
}

// takeQuiet takes the Ready that quiet messages left (simNode.quiet): it
// holds their counts and nothing else (it is taken before the node's next
// tick, and any other input is flushed), so the counts are as if each
// message had been flushed.
func (s *Sim) takeQuiet(sn *simNode) {
	if !sn.quiet {
		return
	}
	sn.quiet = false
	rd := sn.node.Ready()
	if len(rd.Messages) > 0 || len(rd.Decisions) > 0 || rd.Status != sn.last {
		panic("sim: a quiet node's Ready holds more than counts")
	}
	sn.counted.Add(&rd.Counters)
	sn.node.Done()
}

// flush takes a node's Ready: it hands the messages to the network, fires
// triggers, traces decisions and state changes, adds up the counts and runs
// the checker.
func (s *Sim) flush(sn *simNode) {
	if s.named() {
		s.flushGroup(sn)
		return
	}
	rd := sn.node.Ready()
	sn.quiet = false // its counts are in this Ready
	msgs := rd.Messages
	sn.counted.Add(&rd.Counters)
	if s.tracing() {
		for _, d := range rd.Decisions {
			f := "-"
			if d.F.ID != "" {
				f = d.F.ID
			}
			s.tracef("%s: phase %d d=%s e=%s f=%s -> %s", sn.id, d.Phase, d.D.ID, d.E.ID, f, d.Outcome)
		}
	}
	if s.fire(sn, msgs) {
		sn.node.Done()
		return // crashed before sending
	}
	queued := int64(0) // messages ahead of this one in the send order
	for _, m := range msgs {
		if s.cfg.SendGapUs > 0 {
			s.sendGap = queued * s.cfg.SendGapUs / 1000 // after the queued ones ahead of it
			if s.cfg.HeartbeatsAtOnce && (m.Type == core.MsgHeartbeat || m.Type == core.MsgHeartbeatAck || m.BestEffort || m.Unordered) {
				s.sendGap = 0
			} else {
				queued++
			}
		}
		s.sendFrom(int(sn.idx), m)
	}
	s.sendGap = 0
	if st := rd.Status; st != sn.last {
		if s.tracing() && (st.State != sn.last.State || st.Coordinator != sn.last.Coordinator) {
			s.tracef("%s: %s -> %s coordinator=%s term=%s", sn.id, sn.last.State, st.State, orNone(st.Coordinator), st.Term)
		}
		sn.last, sn.leads = st, st.State == core.StateCoordinator
	}
	sn.node.Done() // sent and noted: the node's Ready goes back to the host
	s.check.after(sn)
	s.reschedule(sn)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (s *Sim) traceMsg(m core.Message) {
	if s.cfg.Trace == nil || !m.Type.ElectionTraffic() {
		return
	}
	s.tracef("%s", msgText(m))
}

// msgText is a message as the trace shows a send.
func msgText(m core.Message) string {
	extra := ""
	if m.Coordinator != "" && m.Type == core.MsgCoordinator {
		extra = " coordinator=" + m.Coordinator
	}
	if len(m.List) > 0 {
		extra += " list=" + listString(m.List)
	}
	if m.Value.ID != "" && m.Type == core.MsgElection {
		extra += " d=" + m.Value.ID
	}
	return fmt.Sprintf("%s -> %s %s term=%s%s", m.From, m.To, m.Type, m.Term, extra)
}

func listString(l []core.Peer) string {
	out := "("
	for i, p := range l {
		if i > 0 {
			out += ","
		}
		out += p.ID
	}
	return out + ")"
}

// send puts a message on the network: counted, then lost, delayed,
// duplicated or reordered as configured.
func (s *Sim) send(m core.Message) { s.sendFrom(-1, m) }

// sendFrom is send from the node of index from (-1: look m.From up).
func (s *Sim) sendFrom(from int, m core.Message) {
	s.Sent[m.Type]++
	s.traceMsg(m)
	to, ok := s.find(m.To)
	if !ok {
		s.Lost++
		return
	}
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		s.Lost++
		if s.tracing() && m.Type.ElectionTraffic() {
			s.tracef("%s -> %s %s dropped by the network", m.From, m.To, m.Type)
		}
		return
	}
	copies := 1
	if s.cfg.Dup > 0 && s.rng.Float64() < s.cfg.Dup {
		copies = 2
	}
	for c := 0; c < copies; c++ {
		if c > 0 {
			m = m.Clone()
		}
		s.inFlight[m.Type]++
		s.inFlightAll++
		s.schedule(event{at: s.arrival(from, m, to), kind: evDeliver, node: to.idx, msg: m, inc: to.inc})
	}
	s.runaway()
}

// find returns the simNode of member id (nil, false: not a member): its
// ring position in the roster, which is the order of Sim.nodes. A
// broadcast (a heartbeat round, a COORDINATOR to every member) and a
// walk over the members go in ring order, one way or the other, so the
// nodes next to the previous one found are tried first: equal IDs share
// their bytes, and the comparison costs less than a look-up.
func (s *Sim) find(id string) (*simNode, bool) {
	i := s.nextTo
	switch {
	case i < len(s.nodes) && s.nodes[i].id == id:
	case i >= 2 && s.nodes[i-2].id == id:
		i -= 2
	default:
		if i = s.roster.Index(id); i < 0 {
			return nil, false
		}
	}
	s.nextTo = i + 1
	return s.nodes[i], true
}

// member returns the simNode of member id, nil if it is not one.
func (s *Sim) member(id string) *simNode {
	sn, _ := s.find(id)
	return sn
}

// runaway stops the run when more messages are in flight than any
// election needs (n² covers the textbook worst case: every node asking
// every node above it at once; with names, E·n² for E names, counting
// every pair of every batch): a storm that feeds itself, which the
// checker reports as a violation rather than letting the run grow
// without bound.
func (s *Sim) runaway() {
	n := len(s.nodes)
	if total, limit := s.inFlightAll, s.elections()*n*n+10_000; total > limit {
		if s.named() {
			s.check.violate(KindRunaway, "runaway: %d messages in flight (limit E·n² + 10,000 = %d); run stopped", total, limit)
		} else {
			s.check.violate(KindRunaway, "runaway: %d messages in flight (limit n² + 10,000 = %d); run stopped", total, limit)
		}
		s.queue.reset()
		s.resetBatches()
		s.inFlight, s.inFlightAll = [core.NumMsgTypes]int{}, 0
		s.stopped = true
	}
}

func (s *Sim) arrival(from int, m core.Message, to *simNode) int64 {
	d := s.cfg.DelayMin
	if span := s.cfg.DelayMax - s.cfg.DelayMin; span > 0 {
		d += s.rng.Int64N(span + 1)
	}
	if !s.cfg.FIFO && s.cfg.Reorder > 0 && s.rng.Float64() < s.cfg.Reorder {
		return s.now + d + s.rng.Int64N(2*s.cfg.DelayMax+1)
	}
	at := s.now + d + s.sendGap
	if s.cfg.FIFO {
		if from < 0 {
			from = int(s.member(m.From).idx)
		}
		at = s.fifo(from, to, at)
	}
	return at
}

// fifo delays an arrival at on the link from -> to to the link's last one
// (same time: the queue's sequence keeps the order) and records it. A
// receiver keeps its links' last arrivals in a short list (Sim.links),
// forgetting those already past (a new arrival is never earlier than
// now), and moves them to the map lastAt once it has more than maxLinks in
// use at once.
func (s *Sim) fifo(from int, to *simNode, at int64) int64 {
	if s.links == nil {
		s.links = make([]linkSet, len(s.nodes))
	}
	ls := &s.links[to.idx]
	if !ls.many {
		free := -1
		for i := range ls.n {
			l := &ls.l[i]
			if l.from == int32(from) {
				at = max(at, l.at)
				l.at = at
				return at
			}
			if free < 0 && l.at <= s.now {
				free = int(i)
			}
		}
		switch {
		case free >= 0:
			ls.l[free] = linkAt{from: int32(from), at: at}
			return at
		case ls.n < maxLinks:
			ls.l[ls.n] = linkAt{from: int32(from), at: at}
			ls.n++
			return at
		}
		ls.many = true
		for _, l := range ls.l[:ls.n] {
			s.lastAt[int64(l.from)<<32|int64(to.idx)] = l.at
		}
		ls.n = 0
	}
	link := int64(from)<<32 | int64(to.idx)
	if last := s.lastAt[link]; at < last {
		at = last
	}
	s.lastAt[link] = at
	return at
}

// maxLinks bounds a receiver's list of FIFO links in use.
const maxLinks = 8

// linkSet is a receiver's links in use (fifo): the last arrival on each,
// in l[:n]; many: too many, they are in Sim.lastAt instead.
type linkSet struct {
	n    uint8
	many bool
	l    [maxLinks]linkAt
}

// linkAt is the last arrival time on the link from a node.
type linkAt struct {
	from int32
	at   int64
}

// InFlight reports the number of election messages (not heartbeats) on the
// network.
func (s *Sim) InFlight() int {
	n := 0
	for t, c := range s.inFlight {
		if core.MsgType(t).ElectionTraffic() {
			n += c
		}
	}
	return n
}
