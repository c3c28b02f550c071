package core

// The seam between the kernel and the election algorithms (bully.go,
// ring.go, peterson.go): what a Node asks of the algorithm it runs.
// Invariant: an algorithm is reached only through its Node, inside a
// call into the Node, one at a time.

// algorithm is one election algorithm's part of a Node. The Node owns the
// term, the coordinator, heartbeats, the quorum guard and the membership
// view; the algorithm owns the election itself. Every method runs inside a
// call into the Node, so implementations never need locks.
type algorithm interface {
	// start begins an election (the coordinator is missing, the node has
	// started, or a higher-rated node displaces a coordinator). It reports
	// false when it carries on with the election already running instead.
	start() bool
	// step handles election traffic addressed to this node, after the Node
	// has checked the term.
	step(m Message)
	// tick advances the election's own timers.
	tick()
	// peerDown reports a member the view now holds dead (View mode only).
	peerDown(id string)
	// resign hands the coordinator role on (the node is coordinator).
	resign()
	// reset abandons any running election: a coordinator has been accepted.
	reset()
	// preVoted: the pre-vote that raising the term waited for has passed.
	preVoted()
}
