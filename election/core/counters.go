package core

// What a node reports through Ready besides its Status: the Counters of
// messages, drops and elections since the last Ready (Counters.Add sums
// them for a driver that keeps totals), the reasons a message is dropped
// and the causes an election starts for.

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
