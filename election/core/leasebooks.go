package core

// A coordinator's books under the quorum guard (guard.go): the heartbeat
// rounds it sent and what each voter acknowledged. Invariant: rounds are
// kept in the order they were sent, none older than QuorumLeaseMax ticks
// (trimRounds): an ack of an older one could no longer give a lease.

// leaderBooks are what a coordinator keeps of its heartbeat rounds.
type leaderBooks struct {
	rounds  []sentRound         // recent rounds, of this term and those it led before
	acks    map[string]voterAck // what each voter acknowledged
	scratch []int
}

// sentRound is one heartbeat round: its term and number, the tick it was
// sent at and the lease it asked for.
type sentRound struct {
	term  Term
	seq   uint64
	at    int
	lease int
}

// voterAck is what a coordinator keeps of one voter's acknowledgements:
// the newest round it acknowledged, and the tick until which its promises
// are known to hold on the coordinator's clock (the acknowledged round's
// send tick plus the lease promised: the voter received the round after
// it was sent).
type voterAck struct {
	seq uint64
	end int
}

// trimRounds drops the rounds sent before tick from (their acks could no
// longer give a lease), reusing rs.
func trimRounds(rs []sentRound, from int) []sentRound {
	i := 0
	for i < len(rs) && rs[i].at < from {
		i++
	}
	if i == 0 {
		return rs
	}
	return append(rs[:0], rs[i:]...)
}
