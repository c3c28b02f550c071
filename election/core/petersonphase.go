package core

// A phase of the active/relay ring (peterson.go) as others see it: the
// decision an active takes at its end, which Ready reports
// (PhaseDecision), and its number on the wire (packPhase). Invariant:
// with FIFO links the packed phases of the ELECTIONs that pass a node only
// grow (2p-1, 2p, 2p+1, ...), so a relay drops one that is not above the
// last it passed on, and an active that receives one above the message
// its phase waits for restarts the election (petersonelection.go); 0,
// below them all, is a hand-off's wake-up call.

// PhaseDecision is what an active process decided at the end of a phase of
// the active/relay ring, with the values it decided on (seed 001 draws
// them as the triple d, e, f). F is zero when e == d ended the election.
type PhaseDecision struct {
	Phase   uint32
	D, E, F Rank
	// Outcome: "active" (d := e, on to the next phase), "relay", or
	// "leader" (e == d: the only active left; d is the leader's rank).
	Outcome string
}

// packPhase packs phase p (from 1) and which of its two messages is meant
// into Message.Phase: 2p-1 for the first (an active's d), 2p for the second
// (the e it passes on). Phase 0 is a hand-off's wake-up call (no value).
func packPhase(p uint32, second bool) uint32 {
	if second {
		return 2 * p
	}
	return 2*p - 1
}

// wakeUp is the packed phase of a hand-off's wake-up call.
const wakeUp = 0

// unpackPhase is the inverse of packPhase.
func unpackPhase(x uint32) (p uint32, second bool) { return (x + 1) / 2, x%2 == 0 }
