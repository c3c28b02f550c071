package core

// A ring message on its way to the next working member (ringlink.go
// carries it): the route it goes by, and the hop it is while its receiver
// has yet to acknowledge it or has been given up on. Invariant: a hop's
// position (at) indexes its route: the ring when clockwise, m.List when
// listed.

// route says how a ring message picks its next hop.
type route uint8

const (
	// clockwise: the members after the sender in ring order.
	clockwise route = iota
	// listed: the members of m.List after the sender, ending at
	// m.Initiator (the ring's COORDINATOR lap, which visits only the
	// working participants that the ELECTION lap collected).
	listed
)

// hop is a ring message on its way to the next working member.
type hop struct {
	m     Message // m.To: the member it was last sent to (else "" or this node)
	route route
	at    int // position of the sender, then of m.To: ring index or List index
	timer int // ticks left for m.To to acknowledge
	sent  int // the tick m was first sent to m.To
	// resent counts the times m was sent to m.To again (link.resend); 0
	// when the hop moves on to another receiver.
	resent uint8
}

// gaveUp is a hop whose receiver did not acknowledge in time (its list
// dropped), and when it was sent: its Ack may still come (Node.rtts).
type gaveUp struct {
	m    Message
	sent int
}
