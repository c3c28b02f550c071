package core

// A pre-vote round's state; prevote.go runs the rounds. Invariant: at most
// one round is active, and an answer counts only while the round it
// answers (its Seq) is the active one.

// preVoteKind says what a pre-vote round is for.
type preVoteKind uint8

const (
	preVoteElection preVoteKind = iota // may this node raise the term?
	preVotePreempt                     // can this node reach a majority?
)

// preVoteRound is the node's pre-vote: what it keeps between rounds
// (their number, how slow they were, the round trips their answers
// took) and, in preVoteWork, the round in progress. Most nodes of a host
// of many never run a round (a name's followers), so the work is made at
// a node's first round (beginPreVote) and kept for the next: a node that
// has run none has no preVoteWork, and is never active.
type preVoteRound struct {
	active bool // first: read at every tick and input (Node.ticksToDeadline)
	kind   preVoteKind
	// interrupted says that following a coordinator ended the round
	// before it decided (follow), so that a new round of the same term
	// (term: the node's term when the round began) before the old one's
	// deadline resumes it (beginPreVote).
	interrupted bool
	term        Term
	round       uint64 // sent in Seq; answers carry it back
	// slow counts this node's election pre-votes in a row that nobody
	// answered in time (with the guard: fewer than a majority); each
	// doubles the next one's wait for answers (slowWait, guardWait).
	slow int
	// pslow is slow for preemption checks: checks in a row that fewer
	// than a majority answered, each doubling the next one's wait; a
	// check that succeeds, or a new coordinator to displace, ends it.
	pslow int

	*preVoteWork // nil until the node's first round
}

// preVoteWork is the state of a pre-vote round in progress.
type preVoteWork struct {
	wide  bool // no guard: every live voter was asked, not only the nearest
	timer int  // ticks left before the next step (re-ask, widen, give up)
	// asked is the tick the round was last asked at. Node.rtts, which
	// the ring timers read, takes every answer's round trip as measured
	// from it (too short for the answer to an earlier question); a
	// quorum round also measures each answer from the last question to
	// its voter (asks, late), since a voter bound by a promise grants
	// only when asked after it ends.
	asked    int
	deadline int // guard: tick at which the round is given up
	hint     string
	granted  map[string]bool // voters that granted (election) or answered (preempt)
	// refused: with the guard, the voters that refused this round (an
	// answer all the same: a round that fails with a majority answering
	// failed for promises, not for slowness).
	refused map[string]bool
	// asks: in a quorum round (askQuorum), each voter asked: the tick it
	// was last asked at, from which its answer's round trip is measured,
	// and, while it refuses for a promise, the tick that promise ends.
	// lastAsks is asks of the round before, whose late answers measure
	// their round trips too.
	asks, lastAsks map[string]quorumAsk
	// gap is how long a quorum round waits before it asks again the
	// voters that have not answered, and reaskAt the tick it does: gap
	// starts at the round's wait for answers (guardWait) and doubles with
	// each such wave.
	gap, reaskAt int
	// waveAt is the tick of the round's last wave to its silent voters
	// (the first wave included), and waveAnswered says that an answer to
	// a question of that wave has come back: only then is a voter still
	// silent taken for lost rather than slow, and asked again.
	waveAt       int
	waveAnswered bool
	// others is sampleWide's buffer: the rank positions of the eligible
	// voters that are not watchers.
	others []int32
}

// maxSlow caps preVoteRound.slow: a round waits at most 16 times T.
const maxSlow = 4

// quorumAsk is what a quorum round keeps of one voter it asked: the tick
// of its last question, and the tick the promise it refused for ends (0:
// none known).
type quorumAsk struct{ at, free int }

// wideAsk bounds a wide pre-vote round without the guard. One grant is
// all such a round needs, and asking every live voter costs O(n) messages
// a round: the wide rounds of members whose answers come late (a process
// starved of CPU) would then starve it further.
const wideAsk = 8
