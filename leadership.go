package coordelect

import (
	"context"
	"time"

	"github.com/coordelect/coordelect/election"
)

// anElection is what the election package offers for one election: the
// methods *election.Elector has for the unnamed election and
// *election.Election for a named one.
type anElection interface {
	LeaderPayload() (l election.Leadership, payload string)
	IsLeader() bool
	Subscribe() *election.Subscription
	Resign(ctx context.Context) error
	TransferTo(ctx context.Context, id string) error
	Check(term uint64) error
	Valid(term uint64) bool
	LeaseDeadline(term uint64) (deadline time.Time, ok bool)
	LeaseContext(parent context.Context, term uint64) (context.Context, context.CancelFunc)
	VerifyLeader(ctx context.Context) error
}

// leadership carries the methods Handle and Election share, each a
// delegation to e: the Handle's elector (the unnamed election) or the
// Election's name. Handle and Election embed it.
type leadership struct {
	e anElection
}

// Leader returns the election's coordinator as this member reports it,
// its term and its payload; Leader().Known() is false while it knows
// none.
func (x *leadership) Leader() Leader {
	l, payload := x.e.LeaderPayload()
	return Leader{Leadership: l, Payload: payload}
}

// IsLeader reports whether this member leads the election (with the
// quorum guard, with a valid lease).
func (x *leadership) IsLeader() bool { return x.e.IsLeader() }

// Subscribe returns a subscription whose channel always holds the
// election's newest Leadership (election.Elector.Subscribe); Close it
// when done. It is closed when the elector stops, a named election's also
// when the name ends (Election.Close).
func (x *leadership) Subscribe() *election.Subscription { return x.e.Subscribe() }

// Resign hands the election's coordinator role on to the next voter by
// rating, a named election's to its next candidate; the member's other
// elections are not touched (election.Elector.Resign).
func (x *leadership) Resign(ctx context.Context) error { return x.e.Resign(ctx) }

// TransferTo hands the election's coordinator role to the member named
// name (election.Elector.TransferTo): it refuses an unknown member, a
// non-voter (for a named election, a member that does not stand for it),
// a member this node's view holds dead, and a call on a node that does
// not lead (election.ErrNotLeader).
func (x *leadership) TransferTo(ctx context.Context, name string) error {
	return x.e.TransferTo(ctx, name)
}

// Check reports whether this member leads the election in term and, with
// the quorum guard, its lease has not run out: nil, election.ErrNotLeader
// or election.ErrLeaseExpired (election.Elector.Check). An atomic load
// and a read of the monotonic clock: call it before every side effect of
// the leader's work.
func (x *leadership) Check(term uint64) error { return x.e.Check(term) }

// Valid is Check(term) == nil.
func (x *leadership) Valid(term uint64) bool { return x.e.Valid(term) }

// LeaseDeadline returns the instant this member's lease of the election
// in term ends if it is not renewed; ok is false when it does not lead in
// term or the quorum guard is off (election.Elector.LeaseDeadline).
func (x *leadership) LeaseDeadline(term uint64) (deadline time.Time, ok bool) {
	return x.e.LeaseDeadline(term)
}

// LeaseContext returns a context derived from parent that ends when this
// member's lease of the election in term ends as it stands now, or at
// once when it does not lead in term (election.Elector.LeaseContext):
// take one per operation.
func (x *leadership) LeaseContext(parent context.Context, term uint64) (context.Context, context.CancelFunc) {
	return x.e.LeaseContext(parent, term)
}

// VerifyLeader asks a majority to confirm, now, that this member leads
// the election (election.Elector.VerifyLeader): nil once they have,
// election.ErrNotLeader if the leadership ends first, ctx's error, or
// election.ErrNoQuorumGuard without the quorum guard. A named election's
// majority is of its candidates, and its guard is
// election.Config.QuorumSize or election.ElectionOptions.QuorumSize.
func (x *leadership) VerifyLeader(ctx context.Context) error { return x.e.VerifyLeader(ctx) }
