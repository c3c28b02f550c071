package core

import "slices"

// The kernel: the Node, its construction, its clock (Tick, Advance), the
// Ready it fills (the outbox) and what it reports (Counters, election
// causes, drop reasons, Status), and the setters of the fields Status
// reports. The inputs other than the clock are in input.go. Invariant:
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
	// other. The parts below own the rest, one concern each.
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
	term        Term   // highest term seen
	coordinator string // the node followed; "" when none

	now int // ticks since NewNode
	// deadline caches NextDeadline until the next input (0: not known);
	// every exported method that may change a timer clears it (forget).
	deadline int
	idle     int // ticks with neither a coordinator nor an election

	det  detector     // the failure detector and the heartbeat rounds (heartbeat.go, fanout.go)
	view view         // the members and which are dead (view.go)
	pv   preVoteRound // the pre-vote (prevote.go)

	cfg Config
	tag uint32

	out outbox // the Ready being filled (node.go)

	epochClock int // the epoch allowance (term.go)

	guard guard        // the quorum guard's leases and promises (guard.go)
	hand  handoff      // giving the role up and passing it on (handoff.go)
	start startupHolds // the start-up and solo holds (expect.go, prevote.go)
}

// outbox is the Ready being filled: the node queues its messages and
// decisions and counts straight into rd. Once handed over (handed), rd is
// cleared by the next thing the node queues or counts, or by the next
// Ready; counted says its Counters hold something (clear only those).
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
	rd          Ready
}

// NewNode validates cfg and returns a node in state sleep: after
// StartupDelay without hearing a coordinator it starts an election
// (docs/algorithms.md, bully step 5: a site that starts or restarts holds one).
func NewNode(cfg Config) (*Node, error) {
	n := new(Node)
	if err := InitNode(n, cfg); err != nil {
		return nil, err
	}
	return n, nil
}

// InitNode makes *n, a zero Node, the node that NewNode(cfg) returns, in
// memory the caller provides: a driver of a million nodes (the simulator)
// allocates them in one slice instead of a million times. Only the fields
// that do not start at zero are written (a whole Node copied while the
// collector runs costs a write barrier for each of its pointer words);
// on an error *n is left alone. The node must not be copied afterwards
// (its algorithm points at it).
func InitNode(n *Node, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	self, _ := cfg.Roster.Get(cfg.ID)
	n.cfg, n.self, n.tag = cfg, self, Tag(cfg.ID)
	n.view.r, n.view.mode = cfg.Roster, cfg.Mode
	n.guard.configure(&n.cfg)
	n.out.rd.Status = n.Status()
	switch cfg.Algorithm {
	case Bully:
		n.alg = &bully{n: n}
	default:
		n.alg = newRingAlgorithm(n, cfg.Algorithm)
	}
	return nil
}

// Tick advances the node's clock by one tick: heartbeats, the follower's
// failure detector, the quorum lease, the start-up window and the
// algorithm's own timeouts.
func (n *Node) Tick() { n.Advance(1) }

// Advance moves the node's clock on by k ticks at once, for a driver whose
// loop ran late (a starved or paused process: the ticks it missed). The
// lease and the promises behind it are deadlines, and see the whole jump
// first: a coordinator whose lease ran out while it was not running steps
// down before it does anything else. The failure detector, the start-up
// window and the algorithm's timers count it as one tick: a node that was
// not running could not hear anyone, so it does not blame the coordinator
// for the time it slept through (docs/design.md, "Failure detection").
func (n *Node) Advance(k int) {
	n.forget()
	if k <= 0 {
		return
	}
	n.now += k
	n.tickHealth(k)
	if k > 1 && n.coordinator == n.self.ID {
		// This coordinator's loop ran late: heartbeat at once, and say
		// how late (Message.Lag) so that followers give it that long.
		n.det.lag = max(n.det.lag, k-1)
		n.det.hbTimer = n.cfg.HeartbeatInterval - 1
	}
	n.checkLease()
	n.tickCoolOff()
	n.tickHandoff()
	n.tickPreVote()
	// The algorithm's timers first: an election that the detectors below
	// start in this tick gets its full timeout.
	n.enter().tick()
	switch {
	case n.state == StateSleep:
		if n.idle++; n.idle >= n.cfg.StartupDelay {
			n.idle = 0
			if !n.holdFirstElection() && !n.restartHeld() { // the start-up holds (expect.go)
				n.startElection(CauseStartup)
			}
		}
	case n.coordinator == n.self.ID:
		n.tickCoordinator()
	case n.coordinator != "":
		n.tickFollower()
	case !n.electing:
		// No coordinator and no election (after a resign, a step-down or a
		// newer term without its coordinator): try again after K intervals
		// (a released follower: once the hand-off's lap or announcement is
		// due).
		if n.idle++; n.idle >= n.cfg.HeartbeatInterval*n.cfg.HeartbeatMisses && n.now >= n.hand.releaseDue {
			n.idle = 0
			n.startElection(CauseLeaderless)
		}
	}
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
	rd := n.pending() // nothing queued or counted since the previous Ready: an empty one
	n.out.handed = true
	if n.out.statusDirty {
		rd.Status, n.out.statusDirty = n.Status(), false
	}
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
	return !n.out.handed && (len(n.out.rd.Messages) > 0 || len(n.out.rd.Decisions) > 0) || n.out.statusDirty && n.statusChanged()
}

// pending returns the Ready being filled, clearing the one handed over
// first.
func (n *Node) pending() *Ready {
	if n.out.handed {
		n.clearReady()
	}
	return &n.out.rd
}

// clearReady empties the Ready handed over, for the next one: the
// hand-over costs nothing for what did not happen (no copy of the
// Counters, which are cleared only when they hold something).
func (n *Node) clearReady() {
	rd := &n.out.rd
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

// queued returns the messages the next Ready hands over.
func (n *Node) queued() []Message {
	if n.out.handed {
		return nil
	}
	return n.out.rd.Messages
}

// statusChanged reports whether Status differs from the previous Ready's,
// without building it (the ID never changes; most Readies change nothing).
func (n *Node) statusChanged() bool {
	s := &n.out.rd.Status
	return n.state != s.State || n.term != s.Term || n.self.Rating != s.Rating || n.reported() != s.Coordinator
}

// Counters count what happened in a node between two hand-overs (Ready):
// the driver adds them to its metrics, the simulator to its reports.
type Counters struct {
	// Received counts the messages the node accepted for processing, by
	// type (a message dropped as misaddressed is not counted).
	Received [NumMsgTypes]uint64
	// Dropped counts the messages the node ignored, by reason.
	Dropped [NumDropReasons]uint64
	// ElectionsStarted counts elections this node started (or restarted).
	ElectionsStarted uint64
	// ElectionsWon and ElectionsLost count elections this node took part in
	// that ended with it as coordinator, or with another.
	ElectionsWon  uint64
	ElectionsLost uint64
	// ElectionsRestarted counts elections abandoned on a timeout and begun again.
	ElectionsRestarted uint64
	// HeartbeatMisses counts the heartbeats of the coordinator this node
	// follows that never arrived: gaps in their round numbers, and K when
	// the detector gives up on the coordinator. On a healthy cluster it
	// stays at 0 (heartbeats that are merely late are not misses).
	HeartbeatMisses uint64
	// Deposed counts the times this node, while it led (with the guard:
	// while a majority confirmed it), heard that another member leads a
	// higher term (its heartbeat, a COORDINATOR announcement, or the
	// answer to one of its own heartbeats that names it): both led at once. A partition healed without the guard does this; a
	// hand-off, a preemption, a crash or a lapsed lease do not, the old
	// coordinator having stopped first.
	Deposed uint64
}

// Add adds d to c, for a driver that keeps totals.
func (c *Counters) Add(d *Counters) {
	for t := range c.Received {
		c.Received[t] += d.Received[t]
	}
	for r := range c.Dropped {
		c.Dropped[r] += d.Dropped[r]
	}
	c.ElectionsStarted += d.ElectionsStarted
	c.ElectionsWon += d.ElectionsWon
	c.ElectionsLost += d.ElectionsLost
	c.ElectionsRestarted += d.ElectionsRestarted
	c.HeartbeatMisses += d.HeartbeatMisses
	c.Deposed += d.Deposed
}

// ElectionCause says why a Node started an election: what an operator
// asks of an election nobody expected.
type ElectionCause uint8

// The causes.
const (
	// CauseStartup: the node's first election, its start-up hold over.
	CauseStartup ElectionCause = iota
	// CauseSilence: the heartbeat detector gave up on the coordinator (K
	// intervals without its heartbeat, beyond the patience for a late
	// coordinator or a late self).
	CauseSilence
	// CauseDown: the membership layer reported the coordinator down
	// (PeerDown), or the driver did (Detect).
	CauseDown
	// CauseHandoff: the coordinator resigned or handed over.
	CauseHandoff
	// CauseLeaderless: no coordinator and no election for K intervals
	// (after a step-down, or a newer term whose coordinator never came).
	CauseLeaderless
	// CauseChallenge: an election message from another member that this
	// node answers by standing itself (bully: an ELECTION from a lower
	// member; Peterson: a leaderless node pulling the others up to its term).
	CauseChallenge
	// CauseRestart: the election ran out of time (no announcement, or a
	// ring lap that did not come round) and starts again.
	CauseRestart
	// CausePreempt: this node outranks the coordinator and takes over
	// (Textbook mode; View mode asks for a hand-off instead).
	CausePreempt
	NumElectionCauses
)

var causeNames = [...]string{"startup", "silence", "down", "handoff", "leaderless", "challenge", "restart", "preempt"}

// String returns the cause's name, as the logs and metrics label it.
func (c ElectionCause) String() string {
	if c < NumElectionCauses {
		return causeNames[c]
	}
	return "cause"
}

// DropReason says why a Node ignored a message.
type DropReason uint8

// The reasons.
const (
	DropStaleTerm    DropReason = iota // the message's term is lower than the node's
	DropMisaddressed                   // To is not this node, or From is empty or this node
	DropUnexpected                     // nothing is waiting for it (a late Answer or Ack, ...)
	DropOrder                          // the sender does not rank where the message implies
	DropBadTerm                        // the term's epoch is above MaxEpoch, or above what the epoch allowance covers (term.go)
	DropForeignTag                     // a claim to lead whose term names another member
	NumDropReasons
)

var dropNames = [...]string{"stale_term", "misaddressed", "unexpected", "order", "bad_term", "foreign_tag"}

// String returns the reason's name, as the metrics label it.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "drop"
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

// Config returns the node's configuration with defaults filled in.
func (n *Node) Config() Config { return n.cfg }

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
	rd := n.pending()
	rd.Messages = append(rd.Messages, m)
}

// reserve makes room for k more messages in the Ready being filled, before
// a broadcast: a coordinator announcing itself to a million members then
// allocates its buffer once instead of doubling it twenty times.
func (n *Node) reserve(k int) {
	rd := n.pending()
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

func (n *Node) setTerm(t Term) {
	if t != n.term {
		if e, k := t.Epoch(), n.term.Epoch(); e > k {
			n.chargeEpochs(int(e - k))
		}
		n.term, n.out.statusDirty, n.algQuiet = t, true, false
	}
}

func (n *Node) setCoordinator(c string) {
	if c != n.coordinator {
		n.algQuiet = false
	}
	n.coordinator, n.out.statusDirty = c, true
}

func (n *Node) setConfirmed(c bool) {
	if c != n.guard.confirmed {
		n.guard.confirmed, n.out.statusDirty = c, true
	}
}
