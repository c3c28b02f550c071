package election

import (
	"strconv"

	"github.com/coordelect/coordelect/election/core"
)

// Recorder receives an Elector's metrics; package metrics implements it on
// Prometheus. One Recorder serves one Elector.
//
// Concurrency contract: methods are called from the Elector's loop
// goroutine only, one at a time, and must not block (update a counter or a
// gauge and return). Counts are deltas since the previous call.
type Recorder interface {
	// SetState reports the node's state whenever it changes.
	SetState(s core.State)
	// SetTerm reports the highest term the node has seen (see Leadership.Term).
	SetTerm(term uint64)
	// SetLeader reports the coordinator this node reports whenever it
	// changes; l.Coordinator is empty when there is none.
	SetLeader(l Leadership)
	// LeaderChanged counts a change to a new coordinator or term.
	LeaderChanged()
	// MessagesSent counts messages handed to the Transport, by type.
	MessagesSent(t core.MsgType, n uint64)
	// MessagesReceived counts messages the node accepted for processing.
	MessagesReceived(t core.MsgType, n uint64)
	// MessagesDropped counts messages ignored or lost, by reason: the core's
	// core.DropReason names ("stale_term", "misaddressed", "unexpected",
	// "order") and DropSendFailed.
	MessagesDropped(reason string, n uint64)
	// Elections counts what happened to this node's elections.
	Elections(r Result, n uint64)
	// ElectionDuration observes, in seconds, how long this node was without
	// an agreed coordinator: from the moment it detected the need for an
	// election (failure detected, hand-off received, preemption) until it
	// knew a coordinator again with no election running.
	ElectionDuration(seconds float64)
	// HeartbeatMisses counts heartbeat intervals a follower spent in silence.
	HeartbeatMisses(n uint64)
	// SetMembers reports the members this node knows (itself included) and
	// how many of them it holds alive.
	SetMembers(alive, known int)
}

// DropSendFailed is the drop reason for messages the Transport refused.
const DropSendFailed = "send_failed"

// Result is what happened to an election, for Recorder.Elections: the
// result label of coordelect_elections_total.
type Result uint8

// The results.
const (
	ElectionStarted   Result = iota // this node started (or joined) an election
	ElectionWon                     // an election ended with this node as coordinator
	ElectionLost                    // an election ended with another coordinator
	ElectionRestarted               // an election timed out and began again
	numResults
)

var resultNames = [...]string{"started", "won", "lost", "restarted"}

// String returns the result's name, the value of the result label.
func (r Result) String() string {
	if r < numResults {
		return resultNames[r]
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Results lists every result, in order; recorders use it to initialise
// their series.
func Results() []Result {
	out := make([]Result, numResults)
	for i := range out {
		out[i] = Result(i)
	}
	return out
}

// NopRecorder records nothing. It is the default Recorder; embed it in a
// Recorder implementation to inherit no-ops for methods added later.
type NopRecorder struct{}

var _ Recorder = NopRecorder{}

// SetState does nothing.
func (NopRecorder) SetState(core.State) {}

// SetTerm does nothing.
func (NopRecorder) SetTerm(uint64) {}

// SetLeader does nothing.
func (NopRecorder) SetLeader(Leadership) {}

// LeaderChanged does nothing.
func (NopRecorder) LeaderChanged() {}

// MessagesSent does nothing.
func (NopRecorder) MessagesSent(core.MsgType, uint64) {}

// MessagesReceived does nothing.
func (NopRecorder) MessagesReceived(core.MsgType, uint64) {}

// MessagesDropped does nothing.
func (NopRecorder) MessagesDropped(string, uint64) {}

// Elections does nothing.
func (NopRecorder) Elections(Result, uint64) {}

// ElectionDuration does nothing.
func (NopRecorder) ElectionDuration(float64) {}

// HeartbeatMisses does nothing.
func (NopRecorder) HeartbeatMisses(uint64) {}

// SetMembers does nothing.
func (NopRecorder) SetMembers(int, int) {}
