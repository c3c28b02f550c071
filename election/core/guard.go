package core

// The quorum guard (docs/design.md, "Leases"): a coordinator leads only
// while a majority of QuorumSize voters acknowledges its heartbeat rounds,
// and a voter's acknowledgement is a promise to acknowledge no coordinator
// of another term until the lease it grants has run out (plus its margin)
// on its own clock. Invariant: a coordinator is confirmed (Check passes)
// only before its lease end, and no two coordinators of different terms
// hold a majority's promises at the same instant. The methods that keep
// these fields are in heartbeat.go (grant, renewLease, checkLease,
// abdicate); without the guard (QuorumSize 0) they stay at zero.

// guard is the quorum guard's state of one node.
type guard struct {
	confirmed bool // coordinator: it holds a lease (Status reports it)
	// announceRest: a bully winner with the guard and a fanned-out view
	// announced itself to the voters only; the others hear it once its
	// lease holds (announceConfirmed).
	announceRest bool
	// isolated: this node has found that it cannot reach a majority
	// (Node.sitsOut).
	isolated    bool
	rttFresh    bool                // coordinator: an ack was measured since the last round (rttHigh decays)
	coolUntil   int                 // an abdicated node displaces no coordinator before this tick
	rttHigh     int                 // coordinator: recent heartbeat round trips, high-water mark (leaseAsk)
	leaseEnd    int                 // coordinator: tick at which the quorum lease lapses
	grantTerm   Term                // follower: the term it last acknowledged
	grantEnd    int                 // follower: until this tick it acknowledges no other term
	declared    int                 // coordinator: tick it declared (became coordinator) at
	confirmedAt int                 // coordinator: tick its lease was confirmed at
	failedLeads int                 // leaderships in a row that lapsed or were never confirmed
	rounds      []round             // coordinator: recent rounds, of this term and those it led before
	acks        map[string]voterAck // coordinator: what each voter acknowledged
	scratch     []int
}
