package election_test

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// recorded is what a countingRecorder has seen.
type recorded struct {
	state  core.State
	term   uint64
	leader election.Leadership
	// leaderChanges counts the Updates that named a new coordinator or term.
	leaderChanges uint64
	// Counters sums what the node counted.
	core.Counters
	sent         [core.NumMsgTypes]uint64
	sendFailed   uint64
	durations    []float64
	alive, known int
	memberLists  int // updates with MembersChanged: member counts (countMembers)
}

// countingRecorder keeps what an Elector reports, for assertions.
type countingRecorder struct {
	mu sync.Mutex
	r  recorded
	// gate, when set, blocks every call until it is closed: a test stalls
	// the Elector's loop (a paused process) with it.
	gate atomic.Pointer[chan struct{}]
	// entered, if not nil when gate is set, gets a value (without
	// blocking) as a call starts to wait on the gate: the stall began.
	entered chan struct{}
}

var _ election.Recorder = (*countingRecorder)(nil)

func newCountingRecorder() *countingRecorder { return &countingRecorder{} }

func (c *countingRecorder) Record(u election.Update) {
	if g := c.gate.Load(); g != nil {
		if c.entered != nil {
			select {
			case c.entered <- struct{}{}:
			default:
			}
		}
		<-*g
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.r
	if u.StateChanged {
		r.state = u.State
	}
	if u.TermChanged {
		r.term = u.Term
	}
	if u.LeaderChanged {
		r.leader = u.Leader
		if u.Leader.Known() {
			r.leaderChanges++
		}
	}
	if u.MembersChanged {
		r.alive, r.known = u.Alive, u.Known
		r.memberLists++
	}
	r.Add(&u.Counters)
	for t, n := range u.Sent {
		r.sent[t] += n
	}
	r.sendFailed += u.SendFailed
	if u.ElectionEnded {
		r.durations = append(r.durations, u.ElectionDuration.Seconds())
	}
}

// snapshot returns a copy that is safe to read without the lock.
func (c *countingRecorder) snapshot() recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.r
	s.durations = slices.Clone(s.durations)
	return s
}
