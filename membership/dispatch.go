package membership

import (
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// eventBuffer is the capacity of the Events channel. Events that do not
// fit wait in the dispatcher's own queue (messages up to Config.QueueSize).
const eventBuffer = 16

// dispatcher is the Node's one goroutine between memberlist and the
// elector. It drains the inbox in order, keeps the membership table,
// checks and orders received messages, and feeds Events without ever
// blocking memberlist: when the elector is slow, events wait in pending.
type dispatcher struct {
	inbox    *inbox
	table    *table
	out      *sender
	events   chan election.Event
	stats    *counters
	log      hclog.Logger
	selfBoot uint64
	hold     time.Duration
	maxMsgs  int

	links       map[string]*inLink              // by sender name: the frames' streams
	blinks      map[string]*seqLink[streamItem] // by sender name: the batch streams'
	bscratch    []streamItem
	pending     []election.Event // FIFO; pending[0] is offered to events
	pendingMsgs int              // messages in pending
	timer       *time.Timer      // fires at the earliest link or limbo deadline
	limbo       limbo            // frames from senders not admitted yet
	scratch     []core.Message

	// rejoin asks for a join of a restarted member's address (Node.askJoin):
	// news of a restart can reach this node by gossip before any exchange
	// has told the restarted member about the cluster, and once this node
	// holds it alive nothing else would (a seed restarted without seeds
	// knows nobody). nil: none.
	rejoin func(addr string)
}

// run loops until stop or failed is closed, then closes events.
func (d *dispatcher) run(stop, failed <-chan struct{}) {
	defer close(d.events)
	d.timer = time.NewTimer(time.Hour)
	d.timer.Stop()
	defer d.timer.Stop()
	var buf []inboxItem
	for {
		var out chan<- election.Event
		var next election.Event
		if len(d.pending) > 0 {
			out, next = d.events, d.pending[0]
		}
		select {
		case <-stop:
			return
		case <-failed:
			return
		case <-d.inbox.ready:
			buf = d.inbox.take(buf)
			d.handle(buf, time.Now())
		case now := <-d.timer.C:
			d.expire(now)
		case out <- next:
			d.pop()
		}
		d.armTimer()
	}
}

func (d *dispatcher) handle(items []inboxItem, now time.Time) {
	for _, it := range items {
		switch it.kind {
		case itemMessage:
			d.receive(it.msg, now)
		case itemJoin, itemUpdate:
			d.joinRestarted(it.node)
			d.membership(d.table.alive(it.node, now), now)
		case itemLeave:
			d.membership(d.table.leave(it.node.Name, now), now)
		}
	}
	for _, name := range d.table.prune(now) {
		delete(d.links, name)
		delete(d.blinks, name)
		d.out.forget(name)
	}
	d.table.clip(now)
}

// joinRestarted asks for a join of a member that restarted, so that it
// learns the cluster at once. In a large cluster only about
// restartJoiners of the members that hear of it do (each a push-pull of
// the whole member list).
func (d *dispatcher) joinRestarted(info nodeInfo) {
	if d.rejoin == nil {
		return
	}
	restarted, members := d.table.restart(info)
	if restarted && (members <= restartJoiners || rand.IntN(members) < restartJoiners) {
		d.rejoin(info.address())
	}
}

// restartJoiners is how many members, in expectation, join a restarted
// member when they hear of its restart.
const restartJoiners = 4

// park holds a frame from a sender not (yet) admitted; see limbo.
func (d *dispatcher) park(sender string, b []byte, now time.Time, reason DropReason) {
	if !d.limbo.hold(sender, b, now.Add(d.hold), reason) {
		d.stats.drop(reason)
	}
}

// membership queues the table's events. Before a PeerDown, the messages
// still held back for order from that member are delivered (skipping the
// gaps), so that none arrives after it; its sender stops. Sequence numbers
// carry over if the member comes back with the same boot ID.
func (d *dispatcher) membership(evs []election.Event, now time.Time) {
	for i, ev := range evs {
		if ev.Kind == election.EventPeerDown {
			d.out.stop(ev.Peer.ID)
			if l := d.links[ev.Peer.ID]; l != nil {
				d.deliverAll(l.flush(d.scratch[:0]))
			}
			if l := d.blinks[ev.Peer.ID]; l != nil {
				d.deliverItems(l.flush(d.bscratch[:0]))
			}
			if i+1 < len(evs) && evs[i+1].Kind == election.EventPeerUp && evs[i+1].Peer.ID == ev.Peer.ID {
				// A restart (a new boot ID): the links start over, but the
				// elector sees only the PeerUp. A PeerDown would make every
				// follower of a restarted coordinator, which has usually
				// taken over again by the time the news arrives, start an
				// election; a coordinator that crashed and came back before
				// anyone noticed elects on its own start-up (bully step 5).
				continue
			}
		}
		d.log.Debug("member", "event", kindName(ev.Kind), "peer", ev.Peer.ID, "rating", ev.Peer.Rating)
		d.pending = append(d.pending, ev)
		if ev.Kind == election.EventPeerUp {
			for _, f := range d.limbo.take(ev.Peer.ID) {
				d.receive(f.b, now) // after the PeerUp, in arrival order
			}
		}
	}
}

// receive decodes a frame (a message, a batch or a candidacy: its first
// byte says which), checks that it comes from the current incarnation of
// an admitted member and was meant for this incarnation of this node,
// and delivers it (in order, for reliable ones).
func (d *dispatcher) receive(b []byte, now time.Time) {
	if len(b) > 0 && (b[0] == batchMagic || b[0] == candidacyMagic) {
		d.receiveStream(b, now)
		return
	}
	h, m, err := decodeFrame(b)
	if err != nil {
		d.stats.drop(decodeDropReason(err))
		d.log.Debug("dropping frame", "error", err)
		return
	}
	if !d.current(h, m.From, b, now) {
		return
	}
	if h.Seq == 0 {
		d.deliver(m)
		return
	}
	l := d.links[m.From]
	if l == nil || l.boot != h.FromBoot || l.toBoot != h.ToBoot {
		l = newInLink(h.FromBoot, d.hold, d.stats)
		l.toBoot = h.ToBoot
		if h.ToBoot < d.selfBoot {
			// The sender numbers this link from before our restart: its
			// first frame to reach this incarnation starts it.
			l.next = h.Seq
		}
		d.links[m.From] = l
	}
	d.deliverAll(l.accept(h.Seq, m, now, d.scratch[:0]))
}

// current reports whether a frame from sender, with header h, comes from
// the current incarnation of an admitted member and is meant for this
// incarnation; a frame from a member not admitted yet is parked (limbo),
// the others are dropped.
func (d *dispatcher) current(h frameHeader, sender string, b []byte, now time.Time) bool {
	t, ok := d.table.target(sender)
	// Boot IDs order incarnations (newBootID). A sender that has not heard
	// of our restart addresses our earlier boot, and a peer that restarted
	// writes before its new metadata reaches us: both are current and are
	// taken at once (waiting for gossip took seconds, during which the two
	// could not hear each other and one elected itself). Frames of an
	// earlier life of the sender, or for a later one of ours, are stale.
	switch {
	case h.ToBoot > d.selfBoot:
		d.stats.drop(DropStale)
		return false
	case !ok:
		d.park(sender, b, now, DropUnknownSender)
		return false
	case h.FromBoot < t.boot:
		d.stats.drop(DropStale)
		return false
	}
	return true
}

// streamItem is one item of a sender's batch stream: a batch, or a
// candidacy statement.
type streamItem struct {
	batch group.Batch
	cand  *election.Candidacy
}

// receiveStream decodes a batch or a candidacy frame and delivers it as
// receive does a frame, in the order of the sender's batch stream.
func (d *dispatcher) receiveStream(b []byte, now time.Time) {
	var h frameHeader
	var it streamItem
	var from string
	var err error
	if b[0] == batchMagic {
		h, it.batch, err = decodeBatch(b)
		from = it.batch.From
	} else {
		var c election.Candidacy
		h, c, err = decodeCandidacy(b)
		it.cand, from = &c, c.From
	}
	if err != nil {
		d.stats.drop(decodeDropReason(err))
		d.log.Debug("dropping frame", "error", err)
		return
	}
	if !d.current(h, from, b, now) {
		return
	}
	if h.Seq == 0 {
		d.deliverItem(it)
		return
	}
	if d.blinks == nil {
		d.blinks = make(map[string]*seqLink[streamItem])
	}
	l := d.blinks[from]
	if l == nil || l.boot != h.FromBoot || l.toBoot != h.ToBoot {
		l = newSeqLink[streamItem](h.FromBoot, d.hold, d.stats)
		l.toBoot = h.ToBoot
		if h.ToBoot < d.selfBoot {
			l.next = h.Seq // numbered from before our restart (see receive)
		}
		d.blinks[from] = l
	}
	d.deliverItems(l.accept(h.Seq, it, now, d.bscratch[:0]))
}

// deliverItems delivers its, a slice of d.bscratch, and keeps it for
// reuse.
func (d *dispatcher) deliverItems(its []streamItem) {
	for _, it := range its {
		d.deliverItem(it)
	}
	clear(its)
	d.bscratch = its[:0]
}

// deliverItem queues a batch (its pairs counted as messages received)
// or a candidacy for the elector, unless QueueSize events wait.
func (d *dispatcher) deliverItem(it streamItem) {
	if d.pendingMsgs >= d.maxMsgs {
		d.stats.drop(DropQueueFull)
		return
	}
	d.pendingMsgs++
	if it.cand != nil {
		d.pending = append(d.pending, election.Event{Kind: election.EventCandidacy, Candidacy: it.cand})
		return
	}
	d.stats.received.Add(uint64(len(it.batch.Pairs)))
	d.pending = append(d.pending, election.Event{Kind: election.EventBatch, Batch: it.batch})
}

// deliverAll delivers ms, a slice of d.scratch, and keeps it for reuse.
func (d *dispatcher) deliverAll(ms []core.Message) {
	for _, m := range ms {
		d.deliver(m)
	}
	clear(ms)
	d.scratch = ms[:0]
}

func (d *dispatcher) deliver(m core.Message) {
	if d.pendingMsgs >= d.maxMsgs {
		d.stats.drop(DropQueueFull)
		return
	}
	d.stats.received.Add(1)
	d.pendingMsgs++
	d.pending = append(d.pending, election.Event{Kind: election.EventMessage, Message: m})
}

func (d *dispatcher) pop() {
	switch d.pending[0].Kind {
	case election.EventMessage, election.EventBatch, election.EventCandidacy:
		d.pendingMsgs--
	}
	d.pending[0] = election.Event{}
	d.pending = d.pending[1:]
	if len(d.pending) == 0 {
		d.pending = nil // let a burst's backing array go
	}
}

// expire skips the gaps whose hold time is over.
func (d *dispatcher) expire(now time.Time) {
	for _, l := range d.links {
		d.deliverAll(l.expire(now, d.scratch[:0]))
	}
	for _, l := range d.blinks {
		d.deliverItems(l.expire(now, d.bscratch[:0]))
	}
	d.limbo.expire(now, d.stats.drop)
}

// armTimer points the timer at the earliest link deadline.
func (d *dispatcher) armTimer() {
	var first time.Time
	for _, l := range d.links {
		if !l.deadline.IsZero() && (first.IsZero() || l.deadline.Before(first)) {
			first = l.deadline
		}
	}
	for _, l := range d.blinks {
		if !l.deadline.IsZero() && (first.IsZero() || l.deadline.Before(first)) {
			first = l.deadline
		}
	}
	if l := d.limbo.next(); !l.IsZero() && (first.IsZero() || l.Before(first)) {
		first = l
	}
	if first.IsZero() {
		d.timer.Stop()
		return
	}
	d.timer.Reset(time.Until(first))
}

func kindName(k election.EventKind) string {
	switch k {
	case election.EventPeerUp:
		return "up"
	case election.EventPeerDown:
		return "down"
	case election.EventPeerRating:
		return "rating"
	}
	return "message"
}
