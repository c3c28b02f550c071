package election

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Recorder receives an Elector's metrics; package metrics implements it on
// Prometheus. One Recorder serves one Elector.
//
// Concurrency contract: Record is called from the Elector's loop goroutine
// only (before Run, from the goroutine that calls into the Elector), one
// call at a time, and must not block: update counters and gauges and
// return.
type Recorder interface {
	// Record takes what changed since the previous Update.
	Record(u Update)
}

// Update is what changed in an Elector since its previous Update: the
// Recorder's side of the core's Ready. The Elector hands one over after
// each turn of its loop that changed anything. Counts are deltas; State,
// Term, Leader and the member counts are current values, each with a flag
// that says whether it is new in this Update.
type Update struct {
	// Election is the name of the election the Update is about:
	// DefaultName for the unnamed election. An Elector that runs named
	// elections (Elector.Election) hands over an Update per name; the
	// member counts (Alive, Known) are the member's, in the unnamed
	// election's Updates.
	Election string
	// State is the node's state; StateChanged says it changed (the first
	// Update has it set: the state at New).
	State        core.State
	StateChanged bool
	// Term is the highest term the node has seen (see Leadership.Term).
	Term        uint64
	TermChanged bool
	// Leader is the coordinator this node reports (Coordinator empty when
	// it knows none). LeaderChanged says it changed, or that the Elector
	// stopped (Leader is then empty).
	Leader        Leadership
	LeaderChanged bool
	// Alive and Known count the members this node knows (itself
	// included) and those it holds alive; MembersChanged says they were
	// counted anew (the first Update, and after a membership change).
	Alive, Known   int
	MembersChanged bool
	// Lease is the quorum lease this node asks its voters for while it
	// is coordinator with the guard: QuorumLease, or longer while its
	// heartbeat round trips are slow (Config.QuorumLeaseMax); 0 otherwise.
	// LeaseChanged says it changed.
	Lease        time.Duration
	LeaseChanged bool
	// SittingOut: with the quorum guard, this ring member found it cannot
	// reach a majority of QuorumSize and stays out of elections (docs/design.md,
	// "Rings on a slow host"); SittingOutChanged says it changed.
	SittingOut        bool
	SittingOutChanged bool

	// Counters are what the node counted since the previous Update:
	// messages accepted (Received, by type) and ignored (Dropped, by
	// core.DropReason), elections started, won, lost and restarted, and
	// heartbeat misses.
	core.Counters
	// Cause is why the last of the elections counted in ElectionsStarted
	// began (core.Ready.Cause); meaningless while that is 0.
	Cause core.ElectionCause
	// Sent counts the messages handed to the Transport, by type;
	// SendFailed those it refused (dropped with reason send_failed).
	Sent       [core.NumMsgTypes]uint64
	SendFailed uint64
	// Ended: the election ended on this member (Election.Close, or Run
	// returned); its last Update.
	Ended bool
	// UnknownElection counts the pairs of batches this member received
	// for names it does not run (dropped; in the unnamed election's
	// Update): the members that run a name heartbeat every member.
	UnknownElection uint64
	// ElectionEnded: this node knows an agreed coordinator again after
	// ElectionDuration without one, measured from the moment it detected
	// the need for an election (failure detected, hand-off received,
	// preemption) until it knew a coordinator with no election running.
	ElectionEnded    bool
	ElectionDuration time.Duration
}

// DropSendFailed is the drop reason (the reason label of
// coordelect_messages_dropped_total) of the messages the Transport
// refused: Update.SendFailed. The other reasons are core.DropReason's.
const DropSendFailed = "send_failed"

// empty reports whether u reports nothing new: no flag set, nothing
// counted (the current values alone are not news).
func (u *Update) empty() bool {
	v := *u
	v.Election, v.State, v.Term, v.Leader, v.Alive, v.Known, v.Lease, v.SittingOut = "", 0, 0, Leadership{}, 0, 0, 0, false
	return v == Update{}
}

// NopRecorder records nothing. It is the default Recorder.
type NopRecorder struct{}

var _ Recorder = NopRecorder{}

// Record does nothing.
func (NopRecorder) Record(Update) {}
