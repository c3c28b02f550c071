package group

import (
	"github.com/coordelect/coordelect/election/core"
)

// Pair is one name's message in a batch.
type Pair struct {
	Name string
	Msg  core.Message
}

// Batch is what one member sends another in one packet: a message of
// every name that has one for that destination. Every Pair's Msg is from
// From to To.
type Batch struct {
	From, To string
	Pairs    []Pair
}

// Clone returns a copy of b that shares no memory with it (Ready's
// batches are the group's buffers; a driver that keeps one, or hands it
// to another goroutine, clones it).
func (b Batch) Clone() Batch {
	ps := make([]Pair, len(b.Pairs))
	for i, p := range b.Pairs {
		ps[i] = Pair{Name: p.Name, Msg: p.Msg.Clone()}
	}
	b.Pairs = ps
	return b
}

// Update is one name's core.Ready: its status, counters and what else
// changed (its messages are in the group Ready's Batches).
type Update struct {
	Name  string
	Ready *core.Ready
}

// Counters count what the group itself dropped.
type Counters struct {
	// UnknownName counts the pairs for a name this group does not host
	// (it creates no name on a peer's word: Add does).
	UnknownName uint64
	// Misaddressed counts the pairs of batches not addressed to this
	// member, and pairs whose message is not from the batch's sender to
	// this member.
	Misaddressed uint64
}

// Ready is what a Group hands over to its driver: the batches to send
// (one per destination), each name's news, and what the group dropped.
// It is the group's buffer, valid until the next call into the group.
type Ready struct {
	// Batches to send, one per destination. A batch holds the pairs of
	// every name that queued something for that destination since it
	// was last sent; routine heartbeats wait for the group's next round
	// instant (see the package documentation, "Batching").
	Batches []Batch
	// Updates are the names whose node had something to report (core's
	// HasReady: messages queued or its Status changed), plus the last
	// Ready of nodes removed or rebuilt.
	Updates []Update
	Counters
}

// heartbeats is what the batching knows of a name's heartbeat rounds.
type heartbeats struct {
	term      core.Term // the last round's term
	seq       uint64    // its number
	known     bool      // a round has been seen
	confirmed bool      // its Confirmed
	urgent    bool      // it goes at once (see queueMessages)
	offPhase  bool      // it was sent between two round instants
	asked     bool      // the next round was asked for (VerifyRound): it goes at once
}

// outbox holds the pairs queued until they are sent, for every
// destination in one buffer: pairs in the order they were queued, to[i]
// the destination of pairs[i]. sendDue groups the pairs due by
// destination in place (stably: each destination's pairs keep their
// order) and hands each destination's run out as its batch. A member's
// rounds send each destination a different share from round to round
// (the heartbeat fan-out's rotation sends a name's heartbeats to a
// member one round in several), so one buffer sized to the busiest
// round holds what buffers per destination, each sized to its own
// busiest round, hold about twice over.
type outbox struct {
	pairs []Pair
	to    []int32
	src   []int32 // sendDue's scratch: the pair that goes to each place once grouped
	// sent: pairs[:sent] were handed over by the last Ready (reclaim
	// drops them); the pairs after them wait for a round instant.
	sent int
	// peak is the decaying high-water mark of len(pairs) at sendDue
	// (reclaim); it falls by an eighth at each round instant.
	peak    int
	dests   []dest
	destIdx map[string]int32
	pending []int32 // the destinations with pairs, in the order of their first
	flush   bool    // a round instant has passed: every pending pair goes
}

type dest struct {
	id string
	n  int32 // its pairs in the outbox
	// at is where its next pair goes in the grouped outbox, while its
	// batch is laid out (sendDue).
	at     int32
	urgent bool // a pair that must not wait for the round instant
	listed bool // in pending
}

// reclaim drops the pairs the last Ready handed over, keeping those that
// wait (moved to the front, in order). A buffer that holds more than
// half again the high-water mark of the pairs queued at once is replaced
// by one an eighth above it: a burst (an election of every name at once:
// a pair per name for each destination) is given back once it is over,
// idle members keep about what a round needs, and rounds of different
// sizes do not reallocate it.
func (o *outbox) reclaim() {
	if o.sent == 0 {
		return
	}
	kept := copy(o.pairs, o.pairs[o.sent:])
	copy(o.to, o.to[o.sent:])
	o.sent = 0
	if c := cap(o.pairs); c > minPairs && 2*c > 3*o.peak {
		n := max(minPairs, o.peak+o.peak/8, kept)
		pairs, to := make([]Pair, kept, n), make([]int32, kept, n)
		copy(pairs, o.pairs)
		copy(to, o.to)
		o.pairs, o.to, o.src = pairs, to, nil
		return
	}
	clear(o.pairs[kept:])
	o.pairs, o.to = o.pairs[:kept], o.to[:kept]
}

// fit empties b, a buffer that held len(b) elements, for its next use,
// and keeps peak, the high-water mark of its uses, which falls by an
// eighth with each. A buffer that holds more than half again the mark
// is replaced by one an eighth above it (as reclaim does the outbox's):
// an Update per name in a burst is given back once it is over.
func fit[T any](b []T, peak *int) []T {
	*peak = max(len(b), *peak-*peak/8)
	if c := cap(b); c > minPairs && 2*c > 3**peak {
		return make([]T, 0, max(minPairs, *peak+*peak/8))
	}
	clear(b)
	return b[:0]
}

// maxReadies is the most copies of nodes' Readies (collect) a group
// keeps for its next Ready: a Ready of more Updates (every name elected
// at once; in a cluster whose rounds are in step, every name's ack)
// makes its own. A name's Update is most of what its node would cost
// otherwise.
const maxReadies = 64

// minPairs is the buffer that fit and reclaim always keep.
const minPairs = 16

// queue adds p for to.
func (o *outbox) queue(to string, p Pair, urgent bool) {
	o.reclaim()
	if o.destIdx == nil {
		o.destIdx = make(map[string]int32)
	}
	d, ok := o.destIdx[to]
	if !ok {
		d = int32(len(o.dests))
		o.dests = append(o.dests, dest{id: to})
		o.destIdx[to] = d
	}
	x := &o.dests[d]
	o.pairs = append(o.pairs, p)
	o.to = append(o.to, d)
	x.n++
	x.urgent = x.urgent || urgent
	if !x.listed {
		x.listed = true
		o.pending = append(o.pending, d)
	}
}

// held reports whether pairs wait for the next round instant.
func (o *outbox) held() bool { return len(o.pending) > 0 }

// queueMessages queues e's messages. Routine heartbeats (a round of the
// same term and confirmation as the name's previous round) wait for the
// round instant; everything else goes with the next Ready: election
// traffic, acknowledgements, releases, and the first round of a term or
// of a change of confirmation, which followers act on.
func (g *Group) queueMessages(e *entry, msgs []core.Message) {
	for _, m := range msgs {
		urgent := true
		if m.Type == core.MsgHeartbeat && !m.Released {
			hb := e.beats()
			if !hb.known || m.Seq != hb.seq || m.Term != hb.term {
				hb.urgent = !hb.known || m.Term != hb.term || m.Confirmed != hb.confirmed || hb.asked
				hb.asked = false
				hb.known, hb.term, hb.seq, hb.confirmed = true, m.Term, m.Seq, m.Confirmed
				hb.offPhase = !g.atInstant()
			}
			urgent = hb.urgent
		}
		g.out.queue(m.To, Pair{Name: e.name, Msg: m}, urgent)
	}
}

// atInstant reports whether the group's clock is at a round instant: a
// multiple of HeartbeatInterval.
func (g *Group) atInstant() bool { return g.now%g.cfg.HeartbeatInterval == 0 }

// Step hands the group a batch that arrived for it: each pair goes to its
// name's node. Pairs for names the group does not host are counted
// (Counters.UnknownName) and dropped.
func (g *Group) Step(b Batch) {
	g.settle()
	if b.To != g.cfg.ID {
		g.counts.Misaddressed += uint64(len(b.Pairs))
		return
	}
	for i := range b.Pairs {
		p := &b.Pairs[i]
		e := g.names[p.Name]
		switch {
		case e == nil:
			g.counts.UnknownName++
		case p.Msg.From != b.From || p.Msg.To != b.To:
			g.counts.Misaddressed++
		default:
			differs := g.ratingDiffers(e, &p.Msg)
			e.node.Step(p.Msg)
			if differs {
				g.keepRating(e, p.Msg.From)
			}
			g.touch(e)
		}
	}
}

// keepRating gives e's node back the group's rating of member id under
// Spread after a message from id: the core takes a sender's rating from
// its messages (core.Node's learnRating), and a message that left id
// before id's group moved its rating would otherwise leave the stale one
// in this member's view, with no later message to correct it (a follower
// of a name sends almost nothing): the members' views of the placement
// would disagree on who ranks first. Under Spread a member's rating for a
// name is what the placement computes, the same in every group that
// knows the same, so the group's is the one to keep.
// Only a message whose rating differs from the node's (ratingDiffers)
// can move it, so the group computes its own only then.
func (g *Group) keepRating(e *entry, id string) {
	if i, ok := g.memberIdx[id]; ok && int(i) != selfIndex {
		g.pushRating(e, int(i))
	}
}

// ratingDiffers reports, under Spread, whether m carries a rating of its
// sender other than the one e's node holds (or comes from a member the
// node does not know): one that Step would take (keepRating).
func (g *Group) ratingDiffers(e *entry, m *core.Message) bool {
	if e.opts.Placement != PlaceSpread {
		return false
	}
	p, ok := e.node.Roster().Get(m.From)
	return !ok || p.Rating != m.Rating
}

// Tick advances every name's clock by one tick (core.Node.Skip(1), which
// is one Tick). At a round instant (a multiple of HeartbeatInterval)
// the routine heartbeats held since the last one go, and every name led
// with the quorum guard whose rounds are off the instants is brought onto
// them (realign).
func (g *Group) Tick() { g.Skip(1) }

// Skip does what k calls of Tick do.
func (g *Group) Skip(k int) {
	g.settlePlace()
	h := g.cfg.HeartbeatInterval
	for k > 0 {
		d := h - g.now%h // ticks to the next instant
		if k < d {
			g.skipNodes(k)
			return
		}
		g.skipNodes(d - 1)
		g.now++
		g.setClock()
		g.realign()
		for _, e := range g.list {
			e.node.Skip(1)
		}
		g.out.flush = true
		k -= d
	}
}

func (g *Group) skipNodes(k int) {
	if k <= 0 {
		return
	}
	g.now += k
	g.setClock()
	for _, e := range g.list {
		e.node.Skip(k)
	}
	g.allTouched = true
}

// Advance moves every name's clock on by k ticks at once, for a driver
// whose loop ran late (core.Node.Advance: the lease sees the whole jump,
// the detectors one tick).
func (g *Group) Advance(k int) {
	if k <= 0 {
		return
	}
	g.settlePlace()
	h := g.cfg.HeartbeatInterval
	if (g.now+k)/h > g.now/h {
		g.out.flush = true
	}
	g.now += k
	g.setClock()
	for _, e := range g.list {
		e.node.Advance(k)
	}
	g.allTouched = true
}

// realign sends, at a round instant, a round of every name this member
// leads with the quorum guard (a confirmed lease) whose last round went
// out between instants (core.Node.VerifyRound: a round now, and the next
// HeartbeatInterval after it), so that its rounds fall on the instants
// from then on and its heartbeats never wait. A name without the guard
// cannot be moved so (VerifyRound needs the guard): its routine rounds
// wait for the instant instead, each by the same few ticks.
func (g *Group) realign() {
	for _, e := range g.list {
		if !e.offPhase() {
			continue
		}
		if _, leads := e.node.LeaseEnd(); leads {
			e.node.VerifyRound()
			e.hb.offPhase = false
			g.touch(e)
		} else if e.node.Status().State != core.StateCoordinator {
			e.hb.offPhase = false // it no longer leads: nothing to move
		}
	}
	g.allTouched = true
}

// NextDeadline returns the earliest group tick (compared with Now) at
// which Tick could do something: the earliest of the names' deadlines
// (core.Node.NextDeadline), while heartbeats wait or a guarded round is
// off the instants, the next round instant, and, while the spread
// assignment waits (settlePlace), the tick it is due. A driver may Skip
// the ticks before it.
func (g *Group) NextDeadline() int {
	return g.earliest((*core.Node).NextDeadline)
}

// NextTimer returns the earliest group tick (compared with Now) at which
// a timer of some name other than its health score's fall can fire
// (core.Node.NextTimer), or the group's next round instant or the
// assignment's tick, as NextDeadline counts them. It equals NextDeadline
// while every name's Health is 0. A driver whose loop ran late (Health
// above 0) tells from it whether the group times anything soon.
func (g *Group) NextTimer() int {
	return g.earliest((*core.Node).NextTimer)
}

// earliest is the earliest group tick of the names' next (one of a
// node's deadline methods, in the node's ticks), the next round instant
// while heartbeats wait or a guarded round is off the instants, and the
// assignment's tick while it waits.
func (g *Group) earliest(next func(*core.Node) int) int {
	g.settle()
	h := g.cfg.HeartbeatInterval
	instant := g.now + h - g.now%h
	d := instant
	if !g.out.held() {
		d = g.now + 1<<40
	}
	if g.placeDirty {
		d = min(d, max(g.placeAt, g.now+1))
	}
	for _, e := range g.list {
		d = min(d, g.now+next(e.node)-e.node.Now())
		if e.offPhase() && g.cfg.QuorumSize+e.opts.QuorumSize > 0 {
			d = min(d, instant)
		}
	}
	return d
}

// Health returns the highest health score of the names' nodes
// (core.Node.Health): above 0 while some name's loop ran late lately.
// Every name is fed the same ticks, so their scores differ only by when
// their nodes were built.
func (g *Group) Health() int {
	g.settle()
	hl := 0
	for _, e := range g.list {
		hl = max(hl, e.node.Health())
	}
	return hl
}

// Ready hands over the batches due now and what the names reported since
// the previous Ready. Call it after every call into the group (every
// input and tick).
func (g *Group) Ready() *Ready {
	g.settlePlace()
	g.out.reclaim()
	rd := &g.rd
	clear(rd.Batches) // the batches past its length would keep replaced buffers alive
	rd.Batches, rd.Updates = rd.Batches[:0], fit(rd.Updates, &g.updatesPeak)
	if cap(g.readies) > maxReadies {
		g.readies = nil // a burst, or a round of every name's acks: not kept
	} else {
		clear(g.readies)
		g.readies = g.readies[:0]
	}
	rd.Counters, g.counts = g.counts, Counters{}
	if g.allTouched {
		for _, e := range g.list {
			g.collect(e)
		}
	} else {
		for _, e := range g.touched {
			if !e.removed {
				g.collect(e)
			}
		}
	}
	for i := range g.readies {
		rd.Updates[i].Ready = &g.readies[i]
	}
	for _, e := range g.touched {
		e.touched = false
	}
	g.touched, g.allTouched = g.touched[:0], false
	rd.Updates = append(rd.Updates, g.harvested...)
	clear(g.harvested)
	g.harvested = g.harvested[:0]
	g.sendDue()
	return rd
}

// collect takes e's node's Ready, if it has one: its messages into the
// batches, the rest into a copy in g.readies (its Update's, once every
// name is collected), so that the node gives its Ready back to the host
// at once (core.Node.Done): a member of thousands of names holds a Ready
// only for those with something in it.
func (g *Group) collect(e *entry) {
	if e.recreate {
		g.rebuildIfReady(e)
	}
	if !e.node.HasReady() {
		return
	}
	r := e.node.Ready()
	g.queueMessages(e, r.Messages)
	g.readies = append(g.readies, *r)
	g.readies[len(g.readies)-1].Messages = nil // in the batches
	e.node.Done()
	g.rd.Updates = append(g.rd.Updates, Update{Name: e.name})
}

// sendDue moves the batches due into the Ready: every pending one after
// a round instant, else those holding an urgent pair. Their pairs are
// grouped at the front of the outbox, in the order of pending; the
// pairs that wait follow them (group).
func (g *Group) sendDue() {
	o := &g.out
	flush := o.flush
	o.flush = false
	if len(o.pending) == 0 {
		return
	}
	if flush {
		o.peak = max(len(o.pairs), o.peak-o.peak/8)
	} else {
		o.peak = max(len(o.pairs), o.peak)
	}
	at := int32(0)
	keep := o.pending[:0]
	for _, d := range o.pending {
		x := &o.dests[d]
		if !flush && !x.urgent {
			keep = append(keep, d)
			continue
		}
		end := at + x.n
		g.rd.Batches = append(g.rd.Batches, Batch{From: g.cfg.ID, To: x.id, Pairs: o.pairs[at:end:end]})
		x.at, x.n = at, 0
		x.urgent, x.listed = false, false
		at = end
	}
	o.pending = keep
	if at > 0 {
		o.group(at)
		o.sent = int(at)
	}
}

// group moves each pair of a destination due (one no longer listed,
// whose run starts at its at) to its place in that run, and the pairs
// that wait after the runs, from sent on; every destination's pairs
// keep their order. src[j] is the pair that goes to place j; each pair
// is copied once, along the permutation's cycles.
func (o *outbox) group(sent int32) {
	if cap(o.src) < len(o.pairs) {
		o.src = make([]int32, len(o.pairs), cap(o.pairs))
	}
	src := o.src[:len(o.pairs)]
	next := sent
	for i, d := range o.to {
		x := &o.dests[d]
		if x.listed {
			src[next] = int32(i)
			next++
			continue
		}
		src[x.at] = int32(i)
		x.at++
	}
	for i := range src {
		if src[i] == int32(i) {
			continue
		}
		p, to := o.pairs[i], o.to[i]
		j := int32(i)
		for {
			k := src[j]
			src[j] = j
			if k == int32(i) {
				o.pairs[j], o.to[j] = p, to
				break
			}
			o.pairs[j], o.to[j] = o.pairs[k], o.to[k]
			j = k
		}
	}
}
