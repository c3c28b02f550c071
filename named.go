package coordelect

import (
	"context"
	"time"

	"github.com/coordelect/coordelect/election"
)

// Election is one named election of a member (Handle.Election): what the
// Handle is for the unnamed election, for one name, with its own term and
// fencing token, leadership, lease and callbacks, over the member's one
// membership and failure detector. Its methods are safe for concurrent
// use. A name's term is its own fencing token: fence each name's writes
// in a store of its own (or a fence keyed by the name), since two names
// may run in the same term.
type Election struct {
	h     *Handle
	el    *election.Election // set once, before ready is closed
	ready chan struct{}
}

// Election starts the election named name on this member and returns
// its handle (election.Elector.Election: the name's rules and errors).
// Every member that is to stand for the name, or to report its leader,
// starts it; the members learn from each other which do and which stand
// (ElectionOptions.Abstain, Election.SetCandidate). The callbacks in opts
// get contexts that carry this Handle (FromContext) and the name's
// Election (ElectionFromContext). A name may be started at any time
// after Start; it listens for a leader for StartupDelay, then elects.
func (h *Handle) Election(name string, opts election.ElectionOptions) (*Election, error) {
	x := &Election{h: h, ready: make(chan struct{})}
	opts.Callbacks = h.carryElection(opts.Callbacks, x)
	el, err := h.el.Election(name, opts)
	if err != nil {
		return nil, err
	}
	x.el = el
	close(x.ready) // the callbacks, which may start once Election has returned, wait for it
	return x, nil
}

// electionKey is the context key of ElectionFromContext.
type electionKey struct{}

// ElectionFromContext returns the named election whose leadership ctx is
// (the context its Callbacks.Claim and OnStartedLeading receive, or one
// derived from it); nil for any other context, the unnamed election's
// included.
func ElectionFromContext(ctx context.Context) *Election {
	x, _ := ctx.Value(electionKey{}).(*Election)
	return x
}

// carryElection returns cb with the contexts it gives to Claim and
// OnStartedLeading carrying h and x.
func (h *Handle) carryElection(cb election.Callbacks, x *Election) election.Callbacks {
	cb = h.carry(cb)
	if claim := cb.Claim; claim != nil {
		cb.Claim = func(ctx context.Context, term uint64) error {
			<-x.ready
			return claim(context.WithValue(ctx, electionKey{}, x), term)
		}
	}
	if lead := cb.OnStartedLeading; lead != nil {
		cb.OnStartedLeading = func(ctx context.Context, term uint64) {
			<-x.ready
			lead(context.WithValue(ctx, electionKey{}, x), term)
		}
	}
	if stopped := cb.OnStoppedLeading; stopped != nil {
		cb.OnStoppedLeading = func(term uint64) {
			<-x.ready
			stopped(term)
		}
	}
	if leader := cb.OnNewLeader; leader != nil {
		cb.OnNewLeader = func(l election.Leadership) {
			<-x.ready
			leader(l)
		}
	}
	return cb
}

// Name returns the election's name.
func (x *Election) Name() string { return x.el.Name() }

// Elector returns the name's election.Election, for what Election does
// not wrap (Observe, LeaderPayload, ...).
func (x *Election) Elector() *election.Election { return x.el }

// Leader returns the name's coordinator as this member reports it, its
// term and its payload; Leader().Known() is false while it knows none.
func (x *Election) Leader() Leader {
	l, payload := x.el.LeaderPayload()
	return Leader{Leadership: l, Payload: payload}
}

// IsLeader reports whether this member leads the name (with the quorum
// guard, with a valid lease).
func (x *Election) IsLeader() bool { return x.el.IsLeader() }

// Subscribe returns a subscription whose channel always holds the newest
// Leadership of the name; Close it when done. It is closed when the name
// ends (Close) or the member stops.
func (x *Election) Subscribe() *election.Subscription { return x.el.Subscribe() }

// Resign hands the name on to its next candidate (Handle.Resign, for the
// name alone).
func (x *Election) Resign(ctx context.Context) error { return x.el.Resign(ctx) }

// TransferTo hands the name to the member called name, which must stand
// for it (Handle.TransferTo, for the name alone).
func (x *Election) TransferTo(ctx context.Context, name string) error {
	return x.el.TransferTo(ctx, name)
}

// Check reports whether this member leads the name in term and, with the
// quorum guard, its lease has not run out (Handle.Check).
func (x *Election) Check(term uint64) error { return x.el.Check(term) }

// Valid is Check(term) == nil.
func (x *Election) Valid(term uint64) bool { return x.el.Valid(term) }

// LeaseDeadline returns the instant this member's lease of the name in
// term ends if it is not renewed (Handle.LeaseDeadline).
func (x *Election) LeaseDeadline(term uint64) (deadline time.Time, ok bool) {
	return x.el.LeaseDeadline(term)
}

// LeaseContext returns a context that ends when this member's lease of
// the name in term ends as it stands now (Handle.LeaseContext).
func (x *Election) LeaseContext(parent context.Context, term uint64) (context.Context, context.CancelFunc) {
	return x.el.LeaseContext(parent, term)
}

// VerifyLeader asks a majority of the name's candidates to confirm, now,
// that this member leads it (Handle.VerifyLeader; the name needs the
// quorum guard).
func (x *Election) VerifyLeader(ctx context.Context) error { return x.el.VerifyLeader(ctx) }

// SetCandidate says whether this member stands for the name from now on
// (election.Election.SetCandidate); the other members learn it.
func (x *Election) SetCandidate(stand bool) error { return x.el.SetCandidate(stand) }

// Status returns a snapshot of the name's state on this member.
func (x *Election) Status() election.Status { return x.el.Status() }

// Close ends the name on this member (election.Election.Close): a leader
// hands it on at once; the other members learn that this one no longer
// runs it. It returns once the name's callbacks have returned; do not
// call it from one of them.
func (x *Election) Close() error { return x.el.Close() }
