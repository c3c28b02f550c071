package core

// The failure detector's state (docs/design.md, "Failure detection"): what
// a follower counts of its coordinator's silence and what a coordinator
// keeps of its heartbeat rounds and their fan-out (the invariant is
// detector's). The Node acts on it in heartbeat.go (rounds, silence,
// health), fanout.go (who hears a round) and deadline.go (when it can
// next fire).

// maxEvery caps a heartbeat period, in ticks (Message.Every is a uint32).
const maxEvery = 1 << 31

// fanOut is a coordinator's fan-out state.
type fanOut struct {
	watch []string // this round's watchers
	prev  []string // last round's watchers
	// period is the rotation's period in rounds (every rotating member is
	// visited at least once per period); promised is the period promised
	// to the members visited (at least period); since is the round the
	// promise was raised in. period 0: no round sent yet in this term
	// (followers expect the period their view gives); 1 after rounds that
	// went to everyone.
	period, promised int
	since            uint64
	// owed: with the guard, the members sent a heartbeat that said
	// "unconfirmed" and that hear one a period (rotation, a newcomer's
	// first, a former watcher's), since the lease last held. They would
	// report no coordinator for a whole period; they are told at once
	// when the lease holds again (payOwed).
	owed []string
}

// reset starts a new term's fan-out.
func (f *fanOut) reset() {
	f.watch, f.prev, f.owed = f.watch[:0], f.prev[:0], f.owed[:0]
	f.period, f.promised, f.since = 0, 0, 0
}

// retarget moves the rotation's period towards target, the period the
// view gives, in round seq: a shorter one at once; a longer one promised
// through a whole lap at the current period before the switch to it.
func (f *fanOut) retarget(target int, seq uint64) {
	switch {
	case f.period == 0: // the term's first round: followers expect the view's period
		f.period, f.promised, f.since = target, target, seq
	case target <= f.period:
		f.period, f.promised, f.since = target, target, seq
	case target > f.promised:
		// Promise the longer period through a whole lap at the current
		// one before switching to it.
		f.promised, f.since = target, seq
	case seq >= f.since+uint64(f.period):
		// Everyone in the rotation has been promised at least target.
		f.period = target
	}
}

// detector is the failure detector of a follower and the heartbeat rounds
// of a coordinator. Invariant: a follower starts an election on its
// coordinator's silence only after HeartbeatMisses intervals (its period)
// without a round, plus the lag the coordinator reported and its own
// health score: a late loop on either side is not silence.
type detector struct {
	silence int    // follower: ticks since the coordinator was last heard
	misses  int    // follower: heartbeat intervals missed in a row
	grace   int    // follower: the lag the coordinator last reported, in ticks
	lastSeq uint64 // follower: the last heartbeat round heard in this term
	every   int    // follower: ticks within which the next heartbeat is due (Message.Every)
	// health is the local health score (tickHealth); healthyFor counts
	// the on-time ticks since it last changed.
	health, healthyFor int
	hbTimer            int     // coordinator: ticks since the last heartbeat round
	lag                int     // coordinator: how late its loop ran lately, in ticks
	hbSeq              uint64  // coordinator: heartbeat rounds sent in this term
	fan                *fanOut // coordinator: the rotation of a fanned-out view (fanout.go); made when it first leads
	// suspect is the coordinator the detector gave up on, until a
	// coordinator is known again: bully routes its first question around
	// it (see bully.stageOneTarget).
	suspect string
	// relayed is a coordinator this node follows on another node's word
	// (a relayed COORDINATOR), not having heard it directly since: when
	// the detector gives up on that coordinator again, the silence is
	// probably on the link to this node alone, so bully asks at once
	// instead of waiting for a senior's announcement.
	relayed string
	rtts    *roundTrips // the last round trips measured (link.hopTimeout); nil: none yet
}

// maxHealth caps the local health score: at most maxHealth heartbeat
// intervals of extra patience.
const maxHealth = 4
