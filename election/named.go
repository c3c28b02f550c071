package election

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// DefaultName is the name of the unnamed election: the one every Elector
// runs, which the Elector's own methods (Leader, Check, Resign, ...)
// answer for.
const DefaultName = group.DefaultName

// Placement says how a named election ranks its candidates
// (group.Placement).
type Placement = group.Placement

// The placements.
const (
	// PlaceRating: a member's rating for the name is its own rating (the
	// bully rule, as the unnamed election): every such name elects the
	// same member while it lives.
	PlaceRating = group.PlaceRating
	// PlaceSpread: members are ranked per name by weighted rendezvous
	// hashing of the name and the member, weighted by the member's
	// rating, so that leaders spread evenly over the members
	// (group.SpreadRating); the places after the first are the first's
	// 3·HeartbeatWatchers successors, over which a failed member's names
	// spread, and to which its heartbeats of all its names go every round
	// (docs/design.md, "Placement").
	PlaceSpread = group.PlaceSpread
)

// ElectionOptions configure one named election (Elector.Election).
type ElectionOptions struct {
	// Placement ranks the name's candidates. Default PlaceRating.
	Placement Placement
	// Abstain: this member runs the name without standing for it: it
	// follows and reports the name's coordinator, and is never elected
	// nor handed the role (with the quorum guard it is no part of the
	// name's majority). Change it at run time with Election.SetCandidate.
	// Default false: the member stands, unless its Identity is NonVoter
	// (then it stands for no name).
	Abstain bool
	// QuorumSize is the quorum guard's size for this name: the number of
	// members that stand for it. 0: Config.QuorumSize. With the guard
	// off (Config.QuorumSize 0) a name may still have its own.
	QuorumSize int
	// Callbacks are the name's leadership notifications, as
	// Config.Callbacks are the unnamed election's: on a goroutine of
	// their own, one at a time, in order; each span of leadership gets
	// its own context (SpanFromContext).
	Callbacks Callbacks
}

func (o ElectionOptions) validate(name string) error {
	var errs []error
	if o.Placement != PlaceRating && o.Placement != PlaceSpread {
		errs = append(errs, fmt.Errorf("election: Election(%q): ElectionOptions.Placement = %v: want PlaceRating or PlaceSpread", name, o.Placement))
	}
	if o.QuorumSize < 0 {
		errs = append(errs, fmt.Errorf("election: Election(%q): ElectionOptions.QuorumSize = %d: must be 0 (Config.QuorumSize) or the name's number of candidates", name, o.QuorumSize))
	}
	return errors.Join(errs...)
}

// Errors of named elections.
var (
	// ErrNameClosed: the named election has been closed (Election.Close).
	ErrNameClosed = errors.New("election: named election closed")
)

// Election is one named election of an Elector: its own term and
// fencing token, coordinator, lease, spans and callbacks, over the
// Elector's membership and failure detector. Its methods are the
// Elector's for the unnamed election, and are safe for concurrent use.
// It ends with Close, or when the Elector's Run returns.
type Election struct {
	e    *Elector
	name string

	// The fields below are owned by the loop goroutine (or, before Run,
	// by whoever holds e.mu). A member of thousands of names keeps an
	// Election for each: what only a member that has led the name needs
	// is in lead, made when first needed, the holds are shared with the
	// snapshot and with other names (holdView), and the observers are
	// made by the first Observe or Subscribe.
	upd *Update // what the next Update hands the Recorder; nil: nothing yet (u)
	// status is the node's Status at the last look (state is its State;
	// its ID is the member's).
	status nodeStatus
	// lastCoordinator and lastTerm are the Leadership last taken in
	// (changeLeader; lastLeader).
	lastCoordinator string
	lastTerm        uint64
	quorumSize      int // ElectionOptions.QuorumSize (options)
	// leading is the span this member leads in, nil while it leads in
	// none (span.go). Only the loop writes it.
	leading atomic.Pointer[spanRun]
	lead    *leaderState // nil until this member first leads the name or verifies its lead
	// unsettledAt is when this member lost the name's agreed coordinator,
	// as the time since its Elector was made, plus one; 0: not lost.
	unsettledAt time.Duration
	// announcedCoordinator and announcedTerm are the last coordinator and
	// term OnNewLeader got.
	announcedCoordinator string
	announcedTerm        uint64
	// lastSpanTerm and lastSpanNumber are the Term and Number of the
	// last span this member started (0: none).
	lastSpanTerm uint64
	lease        atomic.Pointer[leaseState]
	holds        *holdView // the start-up hold, while it may change, and the node's hold, as last observed
	holdRead     int       // the name's node tick the hold was last read at
	// peers are the other members' candidacies for the name, as their
	// statements say (candidacy.go).
	peers candidateBits

	snap   atomic.Pointer[snapshot]
	obs    atomic.Pointer[observers] // nil until the first Observe or Subscribe
	notify *notifier

	lastSpanNumber int32
	// placement and abstain, with quorumSize, are the name's
	// ElectionOptions but its Callbacks, which are the notifier's (options).
	placement     Placement
	abstain       bool
	state         core.State // the node's State at the last look (status)
	electing      bool       // the node's Electing at the last look
	isolated      bool       // core.Node.Isolated at the last look (observeIsolated)
	electionBegan bool       // the node started an election during this flush
	startupOpen   bool       // the start-up hold is not over yet
	holdWarned    bool       // the hold in force has been logged at Warn
	touched       bool       // in Elector.touched: reported on at this flush
	readied       bool       // the group handed an Update of it at this flush
	removed       bool       // Close has ended it
}

// options returns the name's group.Options.
func (el *Election) options() group.Options {
	return group.Options{Placement: el.placement, Abstain: el.abstain, QuorumSize: el.quorumSize}
}

// lastLeader returns the Leadership last taken in: none, or a coordinator,
// its term and whether it is this member (leadership).
func (el *Election) lastLeader() Leadership {
	if el.lastCoordinator == "" {
		return Leadership{}
	}
	return Leadership{Coordinator: el.lastCoordinator, Term: el.lastTerm, IsSelf: el.lastCoordinator == el.e.id}
}

// nodeStatus is what Election keeps of its node's core.Status besides
// the State (Election.state); the ID is the member's.
type nodeStatus struct {
	coordinator string
	term        core.Term
	rating      int64
}

// leaderState is what a member keeps of a name while it leads it, its
// leader work runs, its lease is asked for or VerifyLeader calls wait:
// made when first needed (leader), dropped when none of these holds
// (dropLeader).
type leaderState struct {
	// workSpan is the spanRun.work of the span whose leader work (Claim,
	// OnStartedLeading) may still run, 0 when none does; a hand-off
	// waits for it (notifier.workDone, Elector.workWake).
	workSpan  uint64
	leaseAsk  time.Duration // Update.Lease: the lease this member last asked for
	verifiers []verifier    // VerifyLeader calls waiting for their round
}

// leader returns the name's leaderState, making it if need be.
func (el *Election) leader() *leaderState {
	if el.lead == nil {
		el.lead = new(leaderState)
	}
	return el.lead
}

// dropLeader lets the name's leaderState go once this member neither
// leads the name nor waits for anything of its lead.
func (el *Election) dropLeader() {
	if l := el.lead; l != nil && el.leading.Load() == nil && l.workSpan == 0 && l.leaseAsk == 0 && len(l.verifiers) == 0 {
		el.lead = nil
	}
}

// workSpan is leaderState.workSpan: 0 for a member that never led.
func (el *Election) workSpan() uint64 {
	if el.lead == nil {
		return 0
	}
	return el.lead.workSpan
}

// leaseAsk is leaderState.leaseAsk: 0 while this member does not lead.
func (el *Election) leaseAsk() time.Duration {
	if el.lead == nil {
		return 0
	}
	return el.lead.leaseAsk
}

// verifying reports whether VerifyLeader calls wait.
func (el *Election) verifying() bool { return el.lead != nil && len(el.lead.verifiers) > 0 }

// sameStatus reports whether st is the status at the last look.
func (el *Election) sameStatus(st core.Status) bool {
	return st.State == el.state && st.Coordinator == el.status.coordinator && st.Term == el.status.term && st.Rating == el.status.rating
}

// setStatus takes st as the status at the last look.
func (el *Election) setStatus(st core.Status) {
	el.state, el.status = st.State, nodeStatus{coordinator: st.Coordinator, term: st.Term, rating: st.Rating}
}

// holdView is a name's start-up hold and hold as the loop last observed
// them. It never changes once made: the name's Election and its
// snapshot share it, and so do the names whose holds are the same
// (Elector.holdView), which once settled are most.
type holdView struct {
	startup core.Startup
	hold    Hold
}

// setHolds takes su and h as the name's start-up hold and hold.
func (el *Election) setHolds(su core.Startup, h Hold) {
	if v := el.holds; v != nil && v.startup == su && v.hold == h {
		return
	}
	el.holds = el.e.holdView(su, h)
}

// holdView returns a holdView of su and h: the last one made, if it is
// the same. On the loop (or under mu).
func (e *Elector) holdView(su core.Startup, h Hold) *holdView {
	if v := e.lastHold; v != nil && v.startup == su && v.hold == h {
		return v
	}
	v := &holdView{startup: su, hold: h}
	e.lastHold = v
	return v
}

// Election starts the election named name on this member, or fails: a
// name that group.ValidateName refuses (1 to group.MaxNameLen bytes of
// UTF-8 without control characters), DefaultName (the unnamed election,
// which every Elector runs: use the Elector's own methods), a name this
// Elector runs already, options out of range, a Transport that is no
// BatchTransport, a closed Elector (ErrClosed). Names may be added before
// Run and while it runs. Every member that is to stand for name, or
// report its coordinator, starts it too; the others learn, by the
// members' candidacy statements (docs/design.md, "Named elections"),
// which members run and stand for it. A name starts as a member does:
// it listens for a coordinator for StartupDelay, then elects.
func (e *Elector) Election(name string, opts ElectionOptions) (*Election, error) {
	if err := group.ValidateName(name); err != nil {
		return nil, fmt.Errorf("election: Election: %w", err)
	}
	if name == DefaultName {
		return nil, fmt.Errorf("election: Election(%q): the unnamed election, which every Elector runs: use the Elector's own methods", name)
	}
	if err := opts.validate(name); err != nil {
		return nil, err
	}
	if e.btr == nil {
		return nil, fmt.Errorf("election: Election(%q): the Transport (%T) carries no batches (BatchTransport): only the unnamed election runs over it", name, e.tr)
	}
	var el *Election
	err := e.do(context.Background(), func() error {
		return e.inView(func() error {
			if e.lookup(name) != nil {
				return fmt.Errorf("election: Election(%q): already running on this member", name)
			}
			var err error
			el, err = e.addName(name, opts)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return el, nil
}

// addName adds name to the group and makes its Election; on the loop
// (or under mu).
func (e *Elector) addName(name string, opts ElectionOptions) (*Election, error) {
	el := newElection(e, name, opts)
	if err := e.g.Add(name, el.options()); err != nil {
		return nil, fmt.Errorf("election: Election(%q): %w", name, err)
	}
	e.namesMu.Lock()
	e.names[name] = el
	e.list = append(e.list, el)
	e.namesMu.Unlock()
	e.cand.added(el)
	el.initial()
	if e.runCtx != nil {
		el.notify.begin()
	}
	return el, nil
}

// newElection makes the per-name state of name.
func newElection(e *Elector, name string, opts ElectionOptions) *Election {
	el := &Election{e: e, name: name, placement: opts.Placement, abstain: opts.Abstain, quorumSize: opts.QuorumSize}
	el.notify = newNotifier(opts.Callbacks, e.cfg.HeartbeatInterval, el.markWorkDone)
	return el
}

// logger returns the name's logger: the Elector's, with the name as
// "election" (the unnamed election's is the Elector's own). It is made
// at each call, not kept: a member of thousands of names would keep one
// for each, and a name logs only when something happens to it.
func (el *Election) logger() hclog.Logger {
	if el.name == DefaultName {
		return el.e.log
	}
	return el.e.log.With("election", el.name)
}

// initial takes in the name's node as built: its status and start-up
// hold, the snapshot and the first Update.
func (el *Election) initial() {
	n := el.node()
	el.setStatus(n.Status())
	su := n.Startup()
	el.setHolds(su, Hold{})
	el.startupOpen = su.Holding
	el.u().StateChanged = true
	el.updateSnapshot()
}

// lookup returns the Election named name, or nil.
func (e *Elector) lookup(name string) *Election {
	if name == DefaultName {
		return e.def
	}
	e.namesMu.RLock()
	defer e.namesMu.RUnlock()
	return e.names[name]
}

// Elections returns this member's elections, the unnamed one
// (DefaultName) first, then the named ones in the order they were added.
func (e *Elector) Elections() []*Election {
	e.namesMu.RLock()
	defer e.namesMu.RUnlock()
	out := make([]*Election, 0, len(e.list))
	return append(out, e.list...)
}

// Default returns the unnamed election (DefaultName), whose methods are
// the Elector's own.
func (e *Elector) Default() *Election { return e.def }

// Name returns the election's name.
func (el *Election) Name() string { return el.name }

// node returns the name's core node (the group may build it anew: see
// SetCandidate).
func (el *Election) node() *core.Node { return el.e.g.Node(el.name) }

// Leader returns the coordinator this member reports for the name and its
// term; ok is false while it knows none.
func (el *Election) Leader() (id string, term uint64, ok bool) {
	l := el.current()
	return l.Coordinator, l.Term, l.Known()
}

// IsLeader reports whether this member is the name's coordinator and,
// with the quorum guard, holds a valid lease (see Check).
func (el *Election) IsLeader() bool {
	l := el.current()
	return l.IsSelf && el.Check(l.Term) == nil
}

// Observe returns a channel that always holds the newest Leadership of
// the name (Elector.Observe). It is closed, after a final Leadership{},
// when the name ends (Close) or Run returns.
func (el *Election) Observe() <-chan Leadership { return el.observers().subscribe() }

// Subscribe is Observe with an end (Elector.Subscribe).
func (el *Election) Subscribe() *Subscription {
	o := el.observers()
	ch := o.subscribeChan()
	return &Subscription{C: ch, ch: ch, o: o}
}

// LeaderPayload returns the name's coordinator as this member reports
// it, and what it publishes (Elector.LeaderPayload).
func (el *Election) LeaderPayload() (l Leadership, payload string) {
	l = el.current()
	payload, _ = el.e.Payload(l.Coordinator)
	return l, payload
}

// Resign hands the name's coordinator role on to the next candidate by
// the name's placement, with Elector.Resign's ordering and errors; the
// other names are not touched.
func (el *Election) Resign(ctx context.Context) error {
	return el.with(ctx, func(n *core.Node) error { return n.Resign() })
}

// TransferTo hands the name's coordinator role to the member id
// (Elector.TransferTo); it refuses a member that does not stand for the
// name.
func (el *Election) TransferTo(ctx context.Context, id string) error {
	return el.with(ctx, func(n *core.Node) error { return n.TransferTo(id) })
}

// SetCandidate says whether this member stands for the name from now on
// (ElectionOptions.Abstain), and tells the other members. A coordinator
// that stops standing resigns first (its successor is the next
// candidate). The change rebuilds the name's state machine, as a
// restart of the member would for this name alone: it learns the
// coordinator and term again from the next heartbeat.
func (el *Election) SetCandidate(stand bool) error {
	e := el.e
	return e.do(context.Background(), func() error {
		return e.inView(func() error {
			if el.removed {
				return ErrNameClosed
			}
			if el.abstain == !stand {
				return nil
			}
			if err := e.g.SetCandidate(el.name, stand); err != nil {
				return err
			}
			el.abstain = !stand
			e.cand.changed(el)
			e.touch(el)
			el.updateSnapshot()
			return nil
		})
	})
}

// Candidate reports whether this member stands for the name.
func (el *Election) Candidate() bool {
	if el.e.self.NonVoter {
		return false
	}
	var stand bool
	_ = el.e.do(context.Background(), func() error {
		stand = !el.abstain
		return nil
	})
	return stand
}

// with runs f with the name's node on the loop, then flushes.
func (el *Election) with(ctx context.Context, f func(n *core.Node) error) error {
	e := el.e
	return e.do(ctx, func() error {
		return e.inView(func() error {
			if el.removed {
				return ErrNameClosed
			}
			e.touch(el)
			return e.g.With(el.name, f)
		})
	})
}

// Close ends the name on this member (group.Remove) and returns once its
// callbacks have returned. If this member leads it, it resigns and hands
// the role on at once: its leadership context is cancelled and Check
// fails first, but the successor is asked without waiting for
// OnStartedLeading to return (Resign first, and wait for
// OnStoppedLeading, for a hand-off that waits for the leader work). The
// other members learn that this member no longer runs the name. Its
// observers get a final Leadership{} and are closed. The unnamed election
// cannot be closed (close the Elector). Close is idempotent.
func (el *Election) Close() error {
	if el.name == DefaultName {
		return fmt.Errorf("election: Election(%q).Close: the unnamed election ends with the Elector", el.name)
	}
	e := el.e
	err := e.do(context.Background(), func() error {
		return e.inView(func() error {
			if !el.removed {
				e.removeName(el)
			}
			return nil
		})
	})
	if errors.Is(err, ErrClosed) {
		err = nil // Run has returned: the name has ended with it
	}
	el.notify.wait()
	return err
}

// removeName ends el: its leadership first, then the group's name.
func (e *Elector) removeName(el *Election) {
	el.end()
	_ = e.g.Remove(el.name) // the name is in the group: el is not removed yet
	el.removed = true
	e.namesMu.Lock()
	delete(e.names, el.name)
	for i, x := range e.list {
		if x == el {
			e.list = append(e.list[:i], e.list[i+1:]...)
			break
		}
	}
	e.namesMu.Unlock()
	e.cand.removed(el)
	el.logger().Info("election closed")
}

// Status returns a snapshot of the name's state on this member
// (Elector.Status): its member list holds the ratings and candidacies of
// the name (a member that does not stand for it is a NonVoter).
func (el *Election) Status() Status {
	s := el.published()
	s.Members = el.members()
	if s.Coordinator == el.e.id && el.Check(s.Term) != nil {
		s.Coordinator = ""
		if s.State == core.StateCoordinator {
			s.State = core.StateCandidate
		}
	}
	return s
}

// members builds Status's member list from the name's view: on any
// goroutine, under e.view.
func (el *Election) members() []Member {
	e := el.e
	e.view.RLock()
	defer e.view.RUnlock()
	if el.removed {
		return nil
	}
	n := e.g.Node(el.name)
	if n == nil {
		return nil
	}
	r := n.Roster()
	out := make([]Member, r.Len())
	for i := range out {
		p := r.At(i)
		out[i] = Member{ID: p.ID, Rating: p.Rating, NonVoter: p.NonVoter, Alive: n.Alive(p.ID)}
	}
	return out
}
