package core

import (
	"math"
	"slices"
)

// The kernel: the Node, the state of the parts that keep no logic of their
// own (hand-off, start-up holds), the Ready it fills (the outbox) and the
// Status it reports, the setters of the fields Status reports, and the
// queries of the view that every part reads (Alive, liveVoters). How a
// driver builds and drives a Node is in input.go; what it counts, in
// counters.go. Invariant:
// a field that Status reports changes only through a setter (setState,
// setTerm, setCoordinator, setConfirmed; SetRating), which marks the
// status dirty, so Ready builds a Status only when one changed; a Ready
// handed over is cleared by the next thing the node queues or counts.

// Node is one participant's election state machine. It has no goroutines,
// clock, sockets or randomness: the caller feeds it ticks, messages and
// membership changes, then takes what changed with Ready (the messages to
// send, the status, what it counted).
// A Node is not safe for concurrent use; one goroutine (the runtime
// driver's loop, or the simulator) owns it.
type Node struct {
	// The kernel: what every input and tick reads comes first, then the
	// configuration and the Ready being filled, so that a driver feeding
	// many nodes in turn (the simulator: a heartbeat round to 10,000
	// members) touches few cache lines of each, and those next to each
	// other. The parts below own the rest, one concern each; what only
	// a node that leads or runs a pre-vote needs is made when first
	// needed, and the Ready only while something is queued, counted or
	// handed over (outbox). A host of many names keeps a Node per name:
	// it is 504 bytes, within the 512-byte allocation class (an object of
	// at most 512 bytes carries no allocator header); what only a node
	// that measured a round trip keeps is in detector.rtts.
	alg  algorithm
	self Peer

	state    State
	electing bool // an election this node takes part in is running
	// algQuiet: the algorithm's last skip left it with nothing for Skip
	// and NextDeadline to count or report until the next call into it
	// (enter) or a change of term or coordinator (setTerm,
	// setCoordinator), so they leave its state alone (deadline.go,
	// algorithmQuiet).
	algQuiet    bool
	tag         uint32 // Tag(self.ID)
	term        Term   // highest term seen
	coordinator string // the node followed; "" when none

	now int // ticks since NewNode
	// deadline caches NextDeadline until the next input (0: not known);
	// every exported method that may change a timer clears it (input).
	deadline int
	idle     int // ticks with neither a coordinator nor an election

	det  detector     // the failure detector and the heartbeat rounds (detector.go; heartbeat.go, fanout.go)
	view view         // the members and which are dead (view.go)
	pv   preVoteRound // the pre-vote (prevoteround.go; prevote.go, quorumround.go)

	cfg *shared // its Host's configuration and Readies (host.go)

	out outbox // the Ready being filled (node.go)

	epochClock int // the epoch allowance (term.go)

	guard guard        // the quorum guard's leases and promises (guard.go)
	hand  handoff      // giving the role up and passing it on (handoff.go)
	start startupHolds // the start-up and solo holds (expect.go, prevote.go)
}

// shared is what a node reads of its Host: the configuration (defaults
// filled in; ID and Roster are each node's own) and the pool of Readies
// (nil for a node of its own, which keeps its Ready).
type shared struct {
	Config
	pool *readyPool
	// clock is the driver's clock, when it sets it (clocked: Host.SetClock).
	clock   int
	clocked bool
}

// readyPool keeps the Readies, each with a message buffer of at most
// maxIdleMessages, that the nodes of a Host are done with, for the next
// node that queues or counts something: a host of thousands of nodes
// that each send a message now and then (a follower's ack a heartbeat
// round) then keeps as many Readies as it has nodes with something to
// hand over at once, up to maxPooled, not one per node.
type readyPool struct {
	free []*Ready
}

// maxPooled bounds the Readies a Host keeps.
const maxPooled = 64

// get returns an empty Ready.
func (p *readyPool) get() *Ready {
	k := len(p.free)
	if k == 0 {
		return new(Ready)
	}
	rd := p.free[k-1]
	p.free[k-1] = nil
	p.free = p.free[:k-1]
	return rd
}

// put keeps rd, a Ready its node is done with, emptied, if the pool has
// room. Its messages are cleared (a ring's List would stay alive), a
// buffer of more than maxIdleMessages let go, and its phase decisions'
// buffer too (a driver may have kept the slice: they are rare).
func (p *readyPool) put(rd *Ready) {
	if len(p.free) >= maxPooled {
		return
	}
	msgs := rd.Messages
	if cap(msgs) > maxIdleMessages {
		msgs = nil
	}
	clear(msgs)
	*rd = Ready{Messages: msgs[:0]}
	p.free = append(p.free, rd)
}

// outbox is the Ready being filled: the node queues its messages and
// decisions and counts straight into rd, but for the heartbeats it
// receives, which it counts in heartbeats until the next Ready. Once
// handed over (handed), rd is cleared by the next thing the node queues
// or counts, or by the next Ready; counted says its Counters hold
// something (clear only those).
//
// A node of a Host holds a Ready only while something is queued or
// counted in it, or it is handed over: the next call into the node
// (begin), or the driver's Done, gives it back to the Host (readyPool),
// so a host of thousands of nodes, whose followers count nothing but
// heartbeats between their Readies, keeps no Ready per node. A node of
// its own keeps its Ready; once drained (begin, Release) its buffer of
// more than maxIdleMessages messages (a coordinator's heartbeat round
// or announcement) is let go.
//
// The Status the last Ready reported is kept here (state, coordinator,
// term, rating; the ID never changes), for statusChanged and for a
// Ready that reports an unchanged status.
//
// statusDirty: a field that Status reports (state, term, coordinator,
// confirmed, rating) changed since the last Ready. Every write to one of
// them goes through a setter that sets it on a change (setState, setTerm,
// setCoordinator, setConfirmed; SetRating); Ready builds the status only
// then.
type outbox struct {
	handed      bool // rd has been handed over
	counted     bool // rd's Counters hold something
	statusDirty bool
	state       State  // the last Ready's Status: State, Coordinator, Term, Rating
	heartbeats  uint32 // heartbeats received, not yet in rd's Counters (countReceived)
	coordinator string
	term        Term
	rating      int64
	rd          *Ready // nil: none held (a node of a Host)
}

// Ready is what a Node hands over to its driver (etcd raft's Ready): what
// to send, what the node reports now, and what happened since the previous
// Ready. Taking it is acknowledging it: the next Ready starts afresh.
type Ready struct {
	// Messages to send, in the order the node queued them. A driver that
	// keeps a message, or hands it to another goroutine, must Clone it.
	Messages []Message
	// Decisions are the active/relay ring's phase decisions since the
	// previous Ready, in order (none for the other algorithms).
	Decisions []PhaseDecision
	// Status is what the node reports now; Electing whether an election it
	// takes part in is running now.
	Status   Status
	Electing bool
	// ViewChanged: the node's view of the members changed (a member came,
	// went, or changed its rating; learned from membership or a message).
	ViewChanged bool
	// Cause is why the last of the elections counted in ElectionsStarted
	// began (meaningless while that is 0): what the elector logs and the
	// metrics count by. The few Readies that count two starts name the
	// later's. It sits in the Ready, not in the Counters, which the
	// simulator keeps per node.
	Cause ElectionCause
	// Counters count what happened since the previous Ready.
	Counters
}

// Ready hands over what changed since the previous Ready: the messages
// queued, the node's status, and what it counted. Call it after every call
// into the node that may have changed something (every input and tick);
// what it hands over is not handed over again. The Ready, its slices
// included, is the node's buffer: it is valid until the next call into
// the node.
func (n *Node) Ready() *Ready {
	o := &n.out
	rd := n.pending() // nothing queued or counted since the previous Ready: an empty one
	o.handed = true
	if o.heartbeats > 0 {
		rd.Received[MsgHeartbeat] += uint64(o.heartbeats)
		o.heartbeats, o.counted = 0, true
	}
	if o.statusDirty {
		o.state, o.coordinator, o.term, o.rating = n.state, n.reported(), n.term, n.self.Rating
		o.statusDirty = false
	}
	rd.Status = Status{ID: n.self.ID, State: o.state, Coordinator: o.coordinator, Term: o.term, Rating: o.rating}
	rd.Electing, rd.ViewChanged = n.electing, n.view.changed
	n.view.changed = false
	return rd
}

// HasReady reports whether a Ready is due: messages or phase decisions
// are queued, or the node's Status differs from the previous Ready's. A
// driver that skips Ready otherwise (the simulator, after a tick or a
// message that changed nothing) loses nothing: the counts and flags wait
// for the next Ready.
func (n *Node) HasReady() bool {
	o := &n.out
	return !o.handed && o.rd != nil && (len(o.rd.Messages) > 0 || len(o.rd.Decisions) > 0) || o.statusDirty && n.statusChanged()
}

// pending returns the Ready being filled, clearing the one handed over
// first, or taking one from the host (or making its own) if the node
// holds none.
func (n *Node) pending() *Ready {
	o := &n.out
	switch {
	case o.handed:
		n.clearReady()
	case o.rd == nil:
		if n.cfg.pool != nil {
			o.rd = n.cfg.pool.get()
		} else {
			o.rd = new(Ready)
		}
	}
	return o.rd
}

// Release tells the node that its driver is done with the messages of
// the Ready handed over (it sent or copied them), which it must not read
// afterwards: a buffer of many goes now (outbox), not at the next call
// into the node. The rest of the Ready stays valid until the next call
// into the node, or Done.
func (n *Node) Release() {
	if o := &n.out; o.handed && cap(o.rd.Messages) > maxIdleMessages {
		o.rd.Messages = nil
	}
}

// Done tells the node that its driver is done with all of the Ready
// handed over (it sent or copied what it needs), which it must not read
// afterwards, its slices included: a node of a Host gives it back to the
// Host now, not at the next call into the node, so a host of many nodes
// keeps a Ready only for those with something queued or counted. A
// driver that keeps a Ready's Decisions copies the slice header before
// Done: they are not reused.
func (n *Node) Done() { n.begin() }

// begin starts a call into the node, which ends the validity of a Ready
// handed over: a node of a Host gives it back to the Host, a node of its
// own lets a large message buffer go (outbox).
func (n *Node) begin() {
	o := &n.out
	if !o.handed {
		return
	}
	if n.cfg.pool != nil {
		n.cfg.pool.put(o.rd)
		o.rd, o.handed, o.counted = nil, false, false
		return
	}
	if cap(o.rd.Messages) > maxIdleMessages {
		o.rd.Messages = nil
	}
}

// maxIdleMessages is the largest message buffer a drained node keeps, or
// gives back to its host with its Ready: a follower's few (an ack, an
// answer) reuse it; a round to many members allocates its own.
const maxIdleMessages = 4

// buffer returns the Ready being filled, for a message.
func (n *Node) buffer() *Ready { return n.pending() }

// clearReady empties the Ready handed over, for the next one: the
// hand-over costs nothing for what did not happen (no copy of the
// Counters, which are cleared only when they hold something).
func (n *Node) clearReady() {
	rd := n.out.rd
	rd.Messages = rd.Messages[:0]
	rd.Decisions = rd.Decisions[:0]
	if n.out.counted {
		rd.Counters, n.out.counted = Counters{}, false
	}
	n.out.handed = false
}

// count returns the Counters of the Ready being filled, to add to.
func (n *Node) count() *Counters {
	rd := n.pending()
	n.out.counted = true
	return &rd.Counters
}

// countReceived counts a message of type t that the node accepted: a
// heartbeat in the outbox itself (a follower's only count between two
// Readies: it holds no Ready for it; the Ready being filled takes them
// before the count would wrap), the others in the Ready.
func (n *Node) countReceived(t MsgType) {
	if t == MsgHeartbeat {
		if n.out.heartbeats == math.MaxUint32 {
			n.count().Received[MsgHeartbeat] += uint64(n.out.heartbeats)
			n.out.heartbeats = 0
		}
		n.out.heartbeats++
		return
	}
	n.count().Received[t]++
}

// queued returns the messages the next Ready hands over.
func (n *Node) queued() []Message {
	if n.out.handed || n.out.rd == nil {
		return nil
	}
	return n.out.rd.Messages
}

// statusChanged reports whether Status differs from the previous Ready's,
// without building it (the ID never changes; most Readies change nothing).
func (n *Node) statusChanged() bool {
	o := &n.out
	return n.state != o.state || n.term != o.term || n.self.Rating != o.rating || n.reported() != o.coordinator
}

// Status is what a node reports.
type Status struct {
	ID    string
	State State
	// Coordinator is the coordinator this node follows (itself when it is
	// coordinator); empty when it knows none. With the quorum guard on, it
	// is empty unless the coordinator holds a majority lease.
	Coordinator string
	// Term is the term of Coordinator when there is one, else the highest
	// term the node has seen.
	Term   Term
	Rating int64
}

// Status returns what the node reports now.
func (n *Node) Status() Status {
	return Status{ID: n.self.ID, State: n.state, Coordinator: n.reported(), Term: n.term, Rating: n.self.Rating}
}

// reported is the coordinator Status reports: with the quorum guard, only
// one that holds a lease.
func (n *Node) reported() string {
	if n.guard.holds() {
		return n.coordinator
	}
	return ""
}

// ID returns the node's ID.
func (n *Node) ID() string { return n.self.ID }

// Config returns the node's configuration with defaults filled in, but
// for its Roster, which is nil: the members are the view's (Roster).
func (n *Node) Config() Config {
	c := n.cfg.Config
	c.ID = n.self.ID
	return c
}

// Now returns the ticks the node has counted since NewNode.
func (n *Node) Now() int { return n.now }

// Electing reports whether an election this node takes part in is running.
func (n *Node) Electing() bool { return n.electing }

// send queues a message from this node, stamping From, Term and Rating.
func (n *Node) send(m Message) {
	m.From = n.self.ID
	if m.Term == 0 {
		m.Term = n.term
	}
	m.Rating = n.self.Rating
	rd := n.buffer()
	rd.Messages = append(rd.Messages, m)
}

// reserve makes room for k more messages in the Ready being filled, before
// a broadcast: a coordinator announcing itself to a million members then
// allocates its buffer once instead of doubling it twenty times.
func (n *Node) reserve(k int) {
	rd := n.buffer()
	rd.Messages = slices.Grow(rd.Messages, max(k, 0))
}

// decide queues an active/relay ring phase decision (peterson).
func (n *Node) decide(d PhaseDecision) {
	rd := n.pending()
	rd.Decisions = append(rd.Decisions, d)
}

func (n *Node) drop(r DropReason) { n.count().Dropped[r]++ }

func (n *Node) rank() Rank { return n.self.Rank() }

// The setters of the fields Status reports: each says when it changed one
// (statusDirty), for Ready.

func (n *Node) setState(s State) {
	if s != n.state {
		n.state, n.out.statusDirty = s, true
	}
}

func (n *Node) setCoordinator(c string) {
	if c != n.coordinator {
		n.algQuiet = false
	}
	if c != n.self.ID {
		// Only a coordinator reads its fan-out, which becomeCoordinator
		// makes anew (or resets) for each lead: one that stopped leading
		// lets it go, as a node that never led has none.
		n.det.fan = nil
	}
	n.coordinator, n.out.statusDirty = c, true
}

func (n *Node) setConfirmed(c bool) {
	if c != n.guard.confirmed {
		n.guard.confirmed, n.out.statusDirty = c, true
	}
}

// rttMemory is how long a measured round trip counts: 100 RoundTrips (2 s
// at the defaults). A slow spell that goes on keeps measuring itself; one
// that ended, or an answer that a partition held back, is forgotten, so a
// member whose hops all go to a dead successor (no Acks, so no new
// samples) does not wait on it for ever at the longest it once saw.
func (n *Node) rttMemory() int { return 100 * n.cfg.RoundTrip }

// startupHolds are the holds a node keeps before it stands alone: the
// start-up hold (exp) and the solo hold (soloUntil, prevote.go).
type startupHolds struct {
	exp       expectation // the start-up hold
	soloUntil int         // alone in its view before this tick: raise no term (prevote.go)
}

// expectation is the hold's state.
type expectation struct {
	voters  int32 // live voters in the view at the previous check
	seen    bool  // the view has held ExpectVoters live voters at a check
	settled bool  // the hold is over; it never starts again
	short   bool  // the window ended it with fewer than ExpectVoters visible
}

// Startup is the start-up hold as a node reports it.
type Startup struct {
	// Holding: the node is still starting and holds its first election
	// back (or has not checked its view yet).
	Holding bool
	// Voters is the live voters the view holds now, the node included;
	// Expect is Config.ExpectVoters.
	Voters, Expect int
	// Short: the window passed with fewer than Expect voters visible, and
	// the node elected with those.
	Short bool
}

// handoff is the state of giving the role up. Invariant: while handingOff,
// the node does not lead (Check fails) and its followers are not released
// until CompleteHandoff or handoffEnd; a node that yielded does not
// displace its successor.
//
// What a node that never gave the role up, was released by a hand-off or
// asked for a preemption keeps of it is four flags: the rest (handoffTimes)
// is made at its first write of something other than zero (more), and
// let go when it is all zero again; its readers (handoff.go) read zero
// without it.
type handoff struct {
	handingOff    bool          // stopped leading; waits for CompleteHandoff
	yielded       bool          // resigned: do not displace the successor
	handoffDirect bool          // handoffTo declares at once (TransferTo, preemption)
	handoffPass   bool          // the role is passed on (false: abdication, the followers elect)
	rest          *handoffTimes // nil: all zero
}

// handoffTimes is the part of handoff that few nodes ever set.
type handoffTimes struct {
	handoffTo  string // the member the role goes to ("": the next by rating)
	handoffEnd int    // tick at which the hand-off proceeds without the driver
	yieldTo    string // the first coordinator it followed since: a later one may be displaced
	// releaseDue: a follower released by a hand-off waits until this tick
	// for the successor's lap (rings) or announcement (bully) to reach it
	// before it elects (awaitSuccessor).
	releaseDue   int
	preemptAfter int // no preemption request before this tick
}

// leaseHeld reports whether, with the guard, this node is a coordinator
// that a majority's lease confirms.
func (n *Node) leaseHeld() bool { return n.coordinator == n.self.ID && n.guard.leased() }

// learnRating keeps the view's rating of a sender current; messages carry
// the sender's rating so that a change reaches peers with the next message.
// It reports false for an unknown sender whose tag another member has.
func (n *Node) learnRating(id string, rating int64) bool {
	p, ok := n.view.r.Get(id)
	if !ok {
		return n.view.up(Peer{ID: id, Rating: rating})
	}
	if p.Rating != rating {
		p.Rating = rating
		n.view.update(p)
	}
	return true
}

// Roster returns the node's current member list, valid until the next call
// into the node (its own copy changes in place; Ready's ViewChanged says
// when).
func (n *Node) Roster() *Roster { return n.view.r }

// ClipRoster gives back the spare room of the node's own roster: its
// slices grow by an eighth at a time as members join, and a runtime that
// sees its view settled (no change for a while) calls this to hand the
// unused part back (about 2 KB at n = 1,000), at the cost of one copy.
// It changes no state and sends nothing; a shared roster (one the node
// has not changed) is left alone.
func (n *Node) ClipRoster() {
	if n.view.own {
		n.view.r.clip()
	}
}

// Alive reports whether the node's view holds id alive (always true in
// Textbook mode, which has no view).
func (n *Node) Alive(id string) bool { return n.view.alive(id) }

// liveCount is the number of members the view holds alive, this node
// included.
func (n *Node) liveCount() int { return n.view.r.Len() - n.view.dead.len() }

// liveVoters counts the voters the view holds alive, this node included.
func (n *Node) liveVoters() int {
	v := 0
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); !p.NonVoter && n.view.alive(p.ID) {
			v++
		}
	}
	return v
}

func (n *Node) otherVoterAlive() bool {
	for i := 0; i < n.view.r.Len(); i++ {
		if p := n.view.r.At(i); p.ID != n.self.ID && !p.NonVoter && n.view.alive(p.ID) {
			return true
		}
	}
	return false
}
