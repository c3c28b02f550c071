package coordelect

import (
	"context"

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
	leadership // the shared methods, delegating to el

	h     *Handle
	el    *election.Election // set once, with leadership, before ready is closed
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
	x.el, x.leadership = el, leadership{el}
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
