package core

// The round trips a node measured lately: a ring hop and its Ack, a
// pre-vote and its answers. They set how long a hop waits for its Ack
// (Node.hopTimeout) and how long a pre-vote waits for its answers.
// Invariant: it keeps the last 8 samples, each with the tick it was
// taken, and stats counts only those within the memory asked for.

// roundTrips keeps the last round trips this node measured, in ticks, and
// when: a ring hop and its Ack (a late Ack of a hop given up on included),
// a pre-vote and its answers. The pre-vote that precedes an election gives
// its first hops a measure too. A sample counts for rttMemory ticks.
// A node keeps none until it measures its first (detector.measuring):
// most nodes of a host of many names (a name's followers) never do. A
// nil roundTrips has measured nothing.
type roundTrips struct {
	s  [8]uint16 // ticks + 1; 0: no sample
	at [8]int32
	i  uint8
	// late is the longest round trip a quorum round's answers took
	// lately, plus one (0: none), and lateAt the tick it was measured:
	// the pre-vote's own estimate, beside the samples, which hold what
	// the ring timers read. Each answer is measured from the question
	// it answers, late answers to the round before included
	// (Node.measuredAnswer).
	late, lateAt int
}

// measuring returns the node's round trips, making them if need be.
func (d *detector) measuring() *roundTrips {
	if d.rtts == nil {
		d.rtts = new(roundTrips)
	}
	return d.rtts
}

func (r *roundTrips) add(now, ticks int) {
	k := r.i % uint8(len(r.s))
	r.s[k], r.at[k] = uint16(min(max(ticks, 0), 1<<16-2)+1), int32(now)
	r.i++
}

// stats returns the mean (rounded up) and the longest of the round trips
// measured within the last memory ticks; 0 and 0 if there are none.
func (r *roundTrips) stats(now, memory int) (mean, longest int) {
	if r == nil {
		return 0, 0
	}
	sum, k := 0, 0
	for j, x := range r.s {
		if x != 0 && now-int(r.at[j]) <= memory {
			sum, k, longest = sum+int(x)-1, k+1, max(longest, int(x)-1)
		}
	}
	if k > 0 {
		mean = (sum + k - 1) / k
	}
	return mean, longest
}

// measured reports whether a round trip was measured within the last
// memory ticks.
func (r *roundTrips) measured(now, memory int) bool {
	if r == nil {
		return false
	}
	for j, x := range r.s {
		if x != 0 && now-int(r.at[j]) <= memory {
			return true
		}
	}
	return false
}
