package election_test

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// recorded is what a countingRecorder has seen.
type recorded struct {
	state           core.State
	term            uint64
	leader          election.Leadership
	leaderChanges   uint64
	sent, received  map[core.MsgType]uint64
	dropped         map[string]uint64
	elections       map[election.Result]uint64
	durations       []float64
	heartbeatMisses uint64
	alive, known    int
}

// countingRecorder keeps what an Elector reports, for assertions.
type countingRecorder struct {
	mu sync.Mutex
	r  recorded
	// gate, when set, blocks every call until it is closed: a test stalls
	// the Elector's loop (a paused process) with it.
	gate atomic.Pointer[chan struct{}]
}

var _ election.Recorder = (*countingRecorder)(nil)

func newCountingRecorder() *countingRecorder {
	return &countingRecorder{r: recorded{
		sent: map[core.MsgType]uint64{}, received: map[core.MsgType]uint64{},
		dropped: map[string]uint64{}, elections: map[election.Result]uint64{},
	}}
}

func (c *countingRecorder) locked(f func(r *recorded)) {
	if g := c.gate.Load(); g != nil {
		<-*g
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.r)
}

func (c *countingRecorder) SetState(s core.State) { c.locked(func(r *recorded) { r.state = s }) }
func (c *countingRecorder) SetTerm(t uint64)      { c.locked(func(r *recorded) { r.term = t }) }
func (c *countingRecorder) SetLeader(l election.Leadership) {
	c.locked(func(r *recorded) { r.leader = l })
}
func (c *countingRecorder) LeaderChanged() { c.locked(func(r *recorded) { r.leaderChanges++ }) }
func (c *countingRecorder) MessagesSent(t core.MsgType, n uint64) {
	c.locked(func(r *recorded) { r.sent[t] += n })
}
func (c *countingRecorder) MessagesReceived(t core.MsgType, n uint64) {
	c.locked(func(r *recorded) { r.received[t] += n })
}
func (c *countingRecorder) MessagesDropped(reason string, n uint64) {
	c.locked(func(r *recorded) { r.dropped[reason] += n })
}
func (c *countingRecorder) Elections(e election.Result, n uint64) {
	c.locked(func(r *recorded) { r.elections[e] += n })
}
func (c *countingRecorder) ElectionDuration(s float64) {
	c.locked(func(r *recorded) { r.durations = append(r.durations, s) })
}
func (c *countingRecorder) HeartbeatMisses(n uint64) {
	c.locked(func(r *recorded) { r.heartbeatMisses += n })
}
func (c *countingRecorder) SetMembers(alive, known int) {
	c.locked(func(r *recorded) { r.alive, r.known = alive, known })
}

// snapshot returns a copy that is safe to read without the lock.
func (c *countingRecorder) snapshot() recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.r
	s.sent, s.received = maps.Clone(s.sent), maps.Clone(s.received)
	s.dropped, s.elections = maps.Clone(s.dropped), maps.Clone(s.elections)
	s.durations = slices.Clone(s.durations)
	return s
}
