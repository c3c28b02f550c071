package core

// Holds: a voter that knows no coordinator and would stand, but does not,
// because its election could not succeed or must not yet. Each hold has
// one owner that decides it; this file only reports them (Hold) and
// holds a guarded election whose view lacks a majority (quorumShort).
// Invariant: a held node sends no election message and counts no
// election started; it still follows a coordinator it hears.

// HoldReason names why a node holds its election.
type HoldReason uint8

// The reasons, in the order Hold checks them.
const (
	// HoldNone: no hold; the node stands when its timers say so.
	HoldNone HoldReason = iota
	// HoldExpect: the start-up hold (expect.go): the view has not held
	// Config.ExpectVoters live voters yet.
	HoldExpect
	// HoldQuorum: with the quorum guard, the view holds fewer live voters
	// than a majority of Config.QuorumSize, so no election can win a lease.
	HoldQuorum
	// HoldSolo: the node lost its last other voters at once and waits
	// SoloDelay before it leads alone (prevote.go, noteDeparture).
	HoldSolo
	// HoldPromise: with the quorum guard, a voter that has just started
	// keeps, until QuorumLeaseMax have passed, the promise it may have
	// made to another coordinator before it restarted (restartHeld).
	HoldPromise
	NumHoldReasons
)

var holdNames = [...]string{"", "expect", "quorum", "solo", "promise"}

// String returns the reason's name, as the logs and status documents say
// it ("" for HoldNone).
func (r HoldReason) String() string {
	if r < NumHoldReasons {
		return holdNames[r]
	}
	return "hold"
}

// Hold is a node's hold as it reports it.
type Hold struct {
	Reason HoldReason
	// Voters is the live voters in the view, the node included; Need is
	// how many the hold waits for (HoldExpect, HoldQuorum; 0 otherwise).
	Voters, Need int
	// Until is the tick at which the hold ends by itself (HoldSolo,
	// HoldPromise); 0 when only a change of the view ends it.
	Until int
	// Found (HoldExpect) is how many live voters the node must yet have
	// seen before the start-up window may end the hold (foundVoters); 0
	// once it has, or with Config.Bootstrap: then the window ends it.
	Found int
}

// Hold reports what holds this node's election back, if anything. It is
// HoldNone while the node knows a coordinator, stands, or is a non-voter.
func (n *Node) Hold() Hold {
	if n.self.NonVoter || n.coordinator != "" || n.electing {
		return Hold{}
	}
	switch {
	case n.Startup().Holding && n.liveVoters() < n.cfg.ExpectVoters:
		h := Hold{Reason: HoldExpect, Voters: n.liveVoters(), Need: n.cfg.ExpectVoters}
		if !n.start.exp.seen && !n.cfg.Bootstrap {
			h.Found = n.foundVoters()
		}
		return h
	case n.quorumShort():
		return Hold{Reason: HoldQuorum, Voters: n.liveVoters(), Need: n.guard.majority()}
	case n.soloHeld():
		return Hold{Reason: HoldSolo, Voters: 1, Until: n.start.soloUntil}
	case n.state == StateSleep && n.restartHeld():
		return Hold{Reason: HoldPromise, Voters: n.liveVoters(), Until: n.guard.grantEnd}
	}
	return Hold{}
}

// quorumShort reports that, with the guard, this node's view holds fewer
// live voters than a majority of the quorum: its pre-vote asks only the
// voters in its view, so no election of its can succeed until the view
// grows. It does not stand meanwhile (startElection).
func (n *Node) quorumShort() bool {
	return n.guard.needsOthers() && n.liveVoters() < n.guard.majority()
}

// soloHeld reports whether this member, alone in its view, is held back
// from raising the term (without the guard; the guard's own rule decides
// with it).
func (n *Node) soloHeld() bool {
	return !n.guard.on() && n.now < n.start.soloUntil && !n.otherVoterAlive()
}
