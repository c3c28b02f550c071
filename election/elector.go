package election

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// Errors returned by the Elector.
var (
	// ErrClosed: the Elector has been closed, or its Run has returned.
	ErrClosed = errors.New("election: elector closed")
	// ErrRunning: Run was called while a Run is in progress.
	ErrRunning = errors.New("election: elector already running")
	// ErrTransportClosed: the Transport closed its Events channel.
	ErrTransportClosed = errors.New("election: transport closed")
)

// Elector runs one member's elections: the unnamed one (DefaultName),
// whose methods are the Elector's own, and the named ones it is given
// (Election). A single goroutine (Run's) owns the group of core.Nodes
// (package group), feeds it ticks, transport events and local requests,
// sends what it queues, and reports each name's leadership to its
// observers, callbacks, the logger and the metrics Recorder. An Elector
// runs once: after Run returns it is closed. Two Electors in one process
// share nothing.
type Elector struct {
	cfg  Config
	id   string
	self Identity // as the Transport gave it to New; Rating is not kept up to date
	tr   Transport
	btr  BatchTransport // tr, if it carries named elections; else nil
	log  hclog.Logger
	rec  Recorder

	// g and the fields below it are owned by the loop goroutine (or,
	// before Run, by whoever holds mu).
	g *group.Group
	// node is the unnamed election's node, as the group last built it.
	node *core.Node
	// def is the unnamed election; names and list hold every election
	// (def first in list), written by the loop under namesMu, which the
	// readers off the loop (lookup, Elections) take.
	def *Election
	// leading is the unnamed election's (Election.leading).
	leading *atomic.Pointer[spanRun]
	names   map[string]*Election
	list    []*Election
	namesMu sync.RWMutex
	// touched lists the elections to report on at the next flush: those
	// the group handed an Update, stepped or asked (touch).
	touched []*Election
	// cand is the candidacy exchange (candidacy.go).
	cand candidacies
	// pairs is sendBatch's buffer: the pairs of a batch that it splits
	// (some of the unnamed election's go by Send).
	pairs []group.Pair
	// spareUpd are the Updates the names have recorded, for the next
	// ones (Election.u).
	spareUpd []*Update
	// runCtx is Run's context; leadership contexts derive from it.
	runCtx context.Context
	// viewChanged says that a membership event changed the view since
	// the last flush.
	viewChanged  bool
	membersDirty bool      // the view changed since the members were last counted
	membersBuilt time.Time // when the members were last counted (countMembers)
	// viewSince is when the view last changed, and clipped says that the
	// names' rosters have given back their spare room since (clipRoster).
	viewSince    time.Time
	clipped      bool
	warnedVoters bool // checkVoters has warned
	expectSet    bool // Config.ExpectVoters was set, not defaulted
	holdEvery    int  // ticks between two reads of an unchanged node's hold
	// origin is when Run started: the group's tick 0 on the monotonic clock.
	origin time.Time
	// made is when the Elector was made, on the monotonic clock: the
	// names' instants are kept as durations since (Election.unsettledAt).
	made time.Time
	// lastHold is the last holdView made, which the next name whose
	// holds are the same shares (holdView).
	lastHold *holdView
	// due is the tick the loop is due to wake at (wake.go): the group's
	// next deadline, or the next sample of its lateness if that is
	// sooner; armed is the tick its timer is set for (-1: not set).
	due, armed int
	// sampled is the tick of the loop's last wake at or after a tick it
	// was due at; the next is due samplePeriod ticks later (wake.go).
	samplePeriod, sampled int
	// wakes counts the loop's wake-ups (every event, request and timer;
	// the start too);
	// lateTicks the ticks it woke after the one it was due at (it ran late).
	wakes, lateTicks atomic.Uint64
	// workWake wakes the loop when some name's leader work has returned
	// (Election.markWorkDone); working lists the names whose leader work
	// may still run (Election.workSpan set).
	workWake chan struct{}
	working  []*Election
	spans    uint64 // the spans this member has started, of every name (spanRun.work)
	// beatsSent are the heartbeats sent of the names that have no
	// Update yet (Election.countSent).
	beatsSent sentCounts

	// view is held (written) by the loop while it hands the group
	// anything (a turn of the loop: the event or request and the flush
	// after it), and read by Status, which builds its member list from a
	// name's view on another goroutine (status.go): every member keeps no
	// second copy of its view of every other.
	view sync.RWMutex

	mu      sync.Mutex
	started bool
	closed  bool
	wg      sync.WaitGroup
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when the loop has returned

	requests chan request
	// in is the transport event the loop is handling: received into the
	// Elector rather than into the loop's frame, which the goroutine keeps
	// while it waits (loop.go).
	in Event
}

// request is a call into the node made on the loop goroutine.
type request struct {
	fn     func() error
	result chan error
}

// New checks cfg and returns an Elector for the node cfg.Transport names,
// in state sleep, running the unnamed election. It starts nothing: call
// Run.
func New(cfg Config) (*Elector, error) {
	explicit := cfg.ExpectVoters > 0
	cfg.setDefaults()
	cc, self, err := cfg.coreConfig()
	if err != nil {
		return nil, err
	}
	g, err := group.New(cc)
	if err != nil {
		return nil, err
	}
	e := &Elector{
		made:         time.Now(),
		cfg:          cfg,
		id:           cc.ID,
		self:         self,
		tr:           cfg.Transport,
		log:          namedLogger(cfg.Logger, cc.ID),
		rec:          cfg.Recorder,
		g:            g,
		names:        make(map[string]*Election),
		membersDirty: true,
		closing:      make(chan struct{}),
		done:         make(chan struct{}),
		requests:     make(chan request),
		workWake:     make(chan struct{}, 1),
	}
	if bt, ok := cfg.Transport.(BatchTransport); ok && bt.Named() {
		e.btr = bt
	}
	e.cand.init(e)
	if e.rec == nil {
		e.rec = NopRecorder{}
	}
	e.holdEvery = max(int(time.Second/cfg.Tick), 1)
	e.expectSet = explicit
	if err := g.Add(DefaultName, group.Options{}); err != nil {
		return nil, err
	}
	e.def = newElection(e, DefaultName, ElectionOptions{Callbacks: cfg.Callbacks})
	e.leading = &e.def.leading
	e.names[DefaultName] = e.def
	e.list = append(e.list, e.def)
	e.node = g.Node(DefaultName)
	e.def.initial()
	e.countMembers()
	e.def.record()
	return e, nil
}

func namedLogger(l hclog.Logger, id string) hclog.Logger {
	if l == nil {
		l = hclog.NewNullLogger()
	}
	return l.Named("election").With("node", id)
}

// ID returns this node's ID.
func (e *Elector) ID() string { return e.id }

// Run runs the election until ctx ends or Close is called. When ctx ends
// and this node leads, it resigns (hands off to the next voter by rating)
// and waits up to Config.HandoffTimeout for the successor to announce
// itself; Close stops at once, with no hand-off. Run returns after every
// callback has been delivered: nil when ctx ended or Close was called,
// ErrTransportClosed when the transport closed its events (wrapping the
// transport's error if it is a FailingTransport that failed), ErrClosed or
// ErrRunning when the Elector is closed or already running.
func (e *Elector) Run(ctx context.Context) error {
	if err := e.start(ctx); err != nil {
		return err
	}
	defer e.wg.Done()
	err := e.loop(ctx)
	e.markClosed()
	close(e.done)
	for _, el := range e.Elections() {
		el.notify.wait()
	}
	return err
}

func (e *Elector) markClosed() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	close(e.closing)
	if !e.started {
		e.finish() // no loop will: close the observers here
	}
}

// start marks the Elector running with Run's context, and lets every
// name's callbacks start.
func (e *Elector) start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.started:
		return ErrRunning
	}
	e.started = true
	e.runCtx = ctx
	for _, el := range e.list {
		el.notify.begin()
	}
	e.wg.Add(1)
	return nil
}

// Close stops the Elector without a hand-off (to its peers it looks like a
// crash; cancel Run's context instead to hand off) and waits until Run has
// returned. It is safe to call more than once and from any goroutine but a
// callback's.
func (e *Elector) Close() error {
	e.markClosed()
	e.wg.Wait()
	return nil
}

// Leader returns the coordinator this node reports and its term; ok is
// false while it knows none.
func (e *Elector) Leader() (id string, term uint64, ok bool) { return e.def.Leader() }

// IsLeader reports whether this node is the coordinator and, with the
// quorum guard, holds a valid lease (see Check).
func (e *Elector) IsLeader() bool { return e.def.IsLeader() }

// Observe returns a channel that always holds the newest Leadership: it
// has the current value at once, and a value nobody read is replaced by the
// next one, so a slow reader skips to the newest and never holds up the
// election. The channel is closed, after a final Leadership{}, when Run
// returns. Each call makes a new channel; call it once per consumer. To
// stop one consumer before Run returns, use Subscribe.
func (e *Elector) Observe() <-chan Leadership { return e.def.Observe() }

// Resign hands the coordinator role on to the next voter by rating, without
// waiting for failure detection. This node stops leading at once (its
// leadership context is cancelled); the successor is asked to take over
// only once OnStartedLeading has returned (or Config.StopTimeout has
// passed), so the two never lead at once. It returns when this node no
// longer leads, core.ErrNotLeader if it did not, core.ErrNoSuccessor when
// no other live voter exists, or ctx's error. The node stays a member,
// follows its successor and does not displace it.
func (e *Elector) Resign(ctx context.Context) error { return e.def.Resign(ctx) }

// TransferTo hands the coordinator role to the member id, which declares at
// once (hashicorp/raft's LeadershipTransferToServer), with the same
// ordering as Resign. It refuses an unknown member, a non-voter, a member
// this node's view holds dead, or a call on a node that does not lead.
// With PreemptAlways a live voter ranked above id may displace it in turn.
func (e *Elector) TransferTo(ctx context.Context, id string) error {
	return e.def.TransferTo(ctx, id)
}

// SetRating changes this node's rating, for every election it runs, and
// publishes it through the Transport. If the node now outranks a
// coordinator by the preemption policy (for a name placed by PlaceSpread,
// by its rendezvous rating), it starts an election. It returns the
// Transport's error.
func (e *Elector) SetRating(r int64) error {
	return e.do(context.Background(), func() error {
		_ = e.inView(func() error { e.g.SetRating(r); return nil })
		return e.tr.SetRating(r)
	})
}

// do runs fn on the loop goroutine (or, before Run, under mu), then sends
// what it queued and reports what changed.
func (e *Elector) do(ctx context.Context, fn func() error) error {
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return ErrClosed
	case !e.started:
		defer e.mu.Unlock()
		err := fn()
		e.view.Lock()
		defer e.view.Unlock()
		e.flush()
		return err
	}
	e.mu.Unlock()
	r := request{fn: fn, result: make(chan error, 1)}
	select {
	case e.requests <- r:
		return <-r.result
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Status returns a snapshot of this node's state. A node whose lease has
// run out (Check) is not reported as coordinator, even before its loop has
// noticed.
func (e *Elector) Status() Status { return e.def.Status() }
