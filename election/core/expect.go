package core

// The start-up hold (docs/operations.md, "Cold start"). A member that
// elects before it sees the others wins alone, and each member that joins
// later and outranks it takes over in a new term: a cluster whose members
// start together (a deployment) would pass through several coordinators,
// each running its leader work once. So, within the start-up window
// (Config.ExpectWindow), a node in state sleep holds its first election
// back until its view holds Config.ExpectVoters live voters (Consul's
// bootstrap_expect) or, without an expectation, until its view has
// stopped changing for one StartupDelay period. After the window a node
// that has found its cluster (seen ExpectVoters voters at a check, or
// with the guard a majority of the quorum: foundVoters) elects with
// whatever it sees, and says so (Startup). One that never has keeps
// holding unless Config.Bootstrap is set: a node that cannot reach its
// cluster (dead seeds, another key) never leads on its own.

// holdFirstElection reports whether the start-up timer's election must
// wait: the node is still starting and its view is short of the
// expectation, or growing. Each check (every StartupDelay while asleep)
// compares the view with the previous one. Only the node's own timer
// waits: an election that another member's message starts (an ELECTION
// from a lower-rated member whose hold is over) goes ahead, since a top
// member that held back would stay silent and let the lower one win.
func (n *Node) holdFirstElection() bool {
	e := &n.start.exp
	if e.settled || n.cfg.ExpectWindow == 0 || n.state != StateSleep {
		return false
	}
	v := n.liveVoters()
	changed := v != max(int(e.voters), 1) // a voter's own view starts with itself
	e.voters = int32(v)
	e.seen = e.seen || v >= n.foundVoters()
	switch {
	case v >= n.cfg.ExpectVoters && !changed:
		e.settled = true
	case n.now >= n.cfg.ExpectWindow && (e.seen || n.cfg.Bootstrap):
		e.settled, e.short = true, v < n.cfg.ExpectVoters
	}
	return !e.settled
}

// foundVoters is how many live voters a node must have seen at a check
// before the window may end its hold without Config.Bootstrap: the
// expectation, or with the quorum guard a majority of the quorum if that
// is fewer (a lease needs no more, and a cluster restarted with a member
// missing must still elect).
func (n *Node) foundVoters() int { return n.guard.sufficient(n.cfg.ExpectVoters) }

// restartHeld reports that this node, with the quorum guard, is still in
// the hold every starting voter keeps for a promise it may have made
// before it restarted (NewNode), and has acknowledged nobody since. It
// does not stand then: its pre-votes would fail (it cannot count itself,
// and at a cold start every voter is in the same hold and refuses them),
// and each failed round would log and count an election started. It
// follows a coordinator it hears meanwhile.
func (n *Node) restartHeld() bool {
	return n.guard.restartPromise(n.now)
}

// Startup reports the start-up hold.
func (n *Node) Startup() Startup {
	return Startup{
		Holding: !n.start.exp.settled && n.cfg.ExpectWindow > 0 && n.state == StateSleep && !n.self.NonVoter,
		Voters:  n.liveVoters(), Expect: n.cfg.ExpectVoters, Short: n.start.exp.short,
	}
}
