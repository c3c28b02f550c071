package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
)

// Config configures an Elector. Zero durations and counts take their
// defaults (see DefaultConfig); every duration must then be a whole, positive
// number of Ticks, because the core counts ticks and has no clock.
//
// Config does not describe the local member: its name, rating, non-voter
// flag and algorithm (Identity) come from the Transport, which publishes
// them to the others, so that the two cannot disagree.
type Config struct {
	// Transport carries election messages and reports membership, and
	// gives this node's Identity. Required. The Elector does not close it:
	// the embedder owns its lifetime.
	Transport Transport

	// Preemption says when a higher-rated voter displaces a working
	// coordinator. Default core.PreemptAlways (the bully rule).
	Preemption core.Preemption
	// PreemptMargin is the rating margin for core.PreemptMargin. Default 0.
	PreemptMargin int64
	// QuorumSize is S for the quorum guard; 0 (the default) turns it off.
	// With S > 0 a coordinator leads only while a majority of S members
	// (itself included) acknowledge its heartbeats within QuorumLease, and a
	// follower reports a coordinator only while it holds that majority.
	// Set it to the number of voters (members without NonVoter), the same
	// on every member; an elector warns once if its view holds more live
	// voters. The coordinator heartbeats every voter every round and hears
	// each one's ack, so a large cluster that wants the guard runs it with
	// a few voters and the rest non-voters (docs/design.md, "The quorum
	// guard at scale").
	QuorumSize int

	// Tick is the core's unit of time: the resolution of every timer. The
	// loop does not wake at every tick but at the core's deadlines
	// (docs/design.md, "The loop's clock"). Default 10ms.
	Tick time.Duration
	// HeartbeatInterval is H: the coordinator sends a heartbeat to every
	// member this often. Default 50ms.
	HeartbeatInterval time.Duration
	// HeartbeatMisses is K: a follower that hears nothing from its
	// coordinator for K heartbeat intervals starts an election. Default 3.
	HeartbeatMisses int
	// HeartbeatWatchers (W) and HeartbeatBatch (B): beyond W + B + 1
	// members the coordinator heartbeats only the W top-rated voters (and,
	// with the quorum guard, every voter) each round, and B others in
	// rotation (docs/design.md, "Heartbeat fan-out"). Defaults 4 and 5.
	HeartbeatWatchers, HeartbeatBatch int
	// RoundTrip is the longest expected round trip between two members.
	// Default 20ms.
	RoundTrip time.Duration
	// AnswerTimeout is T: how long a bully candidate waits for an ANSWER
	// before it declares itself. At least RoundTrip. Default 40ms.
	AnswerTimeout time.Duration
	// CoordinatorTimeout is T': how long a candidate that got an ANSWER
	// waits for COORDINATOR before it starts a new election. More than
	// AnswerTimeout + RoundTrip. Default 120ms.
	CoordinatorTimeout time.Duration
	// HopTimeout is how long a ring algorithm waits for its successor's
	// acknowledgement before it skips that successor, while no round trip
	// longer than it has been measured: the wait is twice the longest
	// round trip measured in the last 100 RoundTrips (hops and their
	// acknowledgements, pre-votes and their answers), at most 8 ×
	// HopTimeout (docs/design.md, "Rings on a slow host"). Default
	// RoundTrip.
	HopTimeout time.Duration
	// StartupDelay is how long a starting node listens for a coordinator
	// before it starts an election, so that a restarted node learns the
	// current term first; within ExpectWindow, also how long its view must
	// stay unchanged before it elects. Default HeartbeatInterval. New
	// raises it to the Transport's Spread (StartupTransport), the time the
	// news of a member takes to reach the others.
	StartupDelay time.Duration
	// ExpectVoters holds this node's first election back until it has
	// seen this many live voters, itself included (as Consul's
	// bootstrap_expect): members started together then elect once, not
	// once per member that joins late, and a node that cannot reach its
	// cluster (dead seeds, another SecretKey) never leads on its own,
	// however long that lasts, unless Bootstrap is set (with the quorum
	// guard it must have seen a majority of QuorumSize, if that is fewer:
	// a guarded cluster restarted with a member missing still elects,
	// once ExpectWindow has passed). Default
	// QuorumSize with the quorum guard; else 2 when the Transport has
	// seeds to join (a node alone has not found its cluster yet); else 0.
	// Without an expectation a starting node still waits, within
	// ExpectWindow, until its view has stopped growing for StartupDelay.
	// Status.Hold says what a holding node waits for.
	ExpectVoters int
	// ExpectWindow bounds, from Run, how long a node that has seen
	// ExpectVoters voters waits for its view to stop growing; after it
	// the node elects with the voters it sees. With Bootstrap it also
	// ends the hold of a node that never saw them, and the log says that
	// fewer than ExpectVoters were there (Status.Startup). Default 5s.
	ExpectWindow time.Duration
	// Bootstrap lets this node lead before it has seen ExpectVoters
	// voters, once ExpectWindow has passed: set it on the first member
	// of a new cluster whose seeds are the members still to come (demo
	// node -bootstrap). A member started without seeds needs no
	// Bootstrap unless the quorum guard or ExpectVoters asks for more
	// than itself. Default false.
	Bootstrap bool
	// QuorumLease is how long a majority's heartbeat acknowledgements keep
	// a coordinator in office (quorum guard only). More than
	// HeartbeatInterval. Default HeartbeatInterval * HeartbeatMisses.
	QuorumLease time.Duration
	// QuorumLeaseMax caps the stretched lease (quorum guard only). A
	// coordinator whose heartbeat round trips take longer than QuorumLease
	// allows (a loaded or paused host: no lease could ever hold) asks its
	// voters for a longer one, twice the recent round trip plus a
	// heartbeat interval, and a failover after its crash takes as much
	// longer (docs/design.md, "A lease that stretches"). It is also how
	// long a starting voter acknowledges nobody, so a guarded cluster's
	// first agreement takes at least this long. Members may differ: a
	// voter promises at most its own (QuorumLease itself must be the
	// same on every member). At least QuorumLease; QuorumLease turns
	// stretching off. Default 8 * QuorumLease (1.2s with the defaults).
	QuorumLeaseMax time.Duration
	// SoloDelay holds back a member whose view lost its last two or more
	// other voters within SoloDelay of each other (quorum guard off): it
	// is more likely cut off itself than the survivor of simultaneous
	// crashes, so it raises no term alone, and reports no coordinator,
	// until SoloDelay after the departure that left it one voter. A
	// partition shorter than that heals with the coordinator's term
	// unchanged; a genuine lone survivor leads SoloDelay late. A member
	// that loses its voters further apart, or a member of two, leads at
	// once. Default 10s (docs/design.md, "Pre-vote").
	SoloDelay time.Duration
	// HandoffTimeout bounds how long Run, once its context ends, waits for
	// the successor of a resigning coordinator to announce itself.
	// Default HeartbeatInterval + CoordinatorTimeout.
	HandoffTimeout time.Duration
	// StopTimeout bounds how long a coordinator that gives the role up
	// (Resign, TransferTo, a preemption, a lapsed lease, shutdown) waits
	// for its leader work (Claim, OnStartedLeading) to return before its
	// successor is asked to take over. Default 1s.
	StopTimeout time.Duration

	// Logger is the parent logger: the Elector logs under its sub-logger
	// "election" (pass the service's logger, not log.Named("election")); nil
	// discards them. Leadership changes and elections log at Info, every
	// message at Debug.
	Logger hclog.Logger
	// Recorder receives metrics; nil records nothing.
	Recorder Recorder
	// Callbacks are called on leadership changes, in order, on a goroutine
	// of their own (never the protocol loop).
	Callbacks Callbacks
}

// Callbacks are the leadership notifications, in the style of client-go's
// leaderelection.LeaderCallbacks. Every field is optional. They are called
// one at a time, in the order the changes happened, on a notifier
// goroutine (one that runs while callbacks are due, not the protocol
// loop's): a callback that blocks delays the ones after it but never the
// election itself.
//
// Leadership comes in spans (Span; docs/design.md, "Leadership spans"): a
// span is a maximal interval during which this node is the valid leader
// (Elector.Check passes). A term can hold several: with the quorum guard,
// the lease lapses and a majority confirms this node again in the same
// term. Each span gets its own context, Claim, OnStartedLeading and
// OnStoppedLeading; the context carries the Span (SpanFromContext). While
// Check passes, the span's context is live and its OnStartedLeading has
// started or is queued; when Check fails, the context is cancelled as soon
// as the loop notices (Check fails first).
type Callbacks struct {
	// OnStartedLeading is called at the start of each span in which this
	// node leads, with the span's term. ctx, derived from Run's context,
	// carries the Span (SpanFromContext) and is cancelled as soon as the
	// span ends (step-down, resign, quorum lease lapsed, Run's context
	// ended, Close): do leader work under ctx, fenced by term, and check
	// the span (Span.Check) before each side effect. It may block until
	// ctx is done; it must return then, because the later callbacks, the
	// next span's included, wait for it.
	OnStartedLeading func(ctx context.Context, term uint64)
	// OnStoppedLeading is called with the term when a span that
	// OnStartedLeading reported has ended (after OnStartedLeading has
	// returned).
	OnStoppedLeading func(term uint64)
	// Claim, when set, runs before OnStartedLeading in each span: claim
	// term in the store the leader writes to (a fencing.Fence:
	// fencing.SQL's or fencing.Memory's Claim fits as it is), so that from
	// then on the store refuses every write of an older term. A later span
	// of the same term claims it again: the claim of the term the fence
	// holds must succeed. Leadership work starts only once Claim has
	// returned nil; after any other error it is retried every
	// HeartbeatInterval, until ctx (the span's context, as
	// OnStartedLeading's) ends, except after an error wrapping
	// fencing.ErrStale: the store holds a later term, so this term is
	// superseded and no retry can succeed. Then OnStartedLeading does not
	// run in this span; step down at once (Elector.Resign, which Claim may
	// call itself) or wait: the node learns of the later term and follows
	// it; Claim runs again whenever this node starts leading again.
	// Without the quorum guard this is what keeps a deposed coordinator
	// from damaging the store.
	Claim func(ctx context.Context, term uint64) error
	// OnNewLeader is called whenever this node learns of a coordinator or
	// term it did not report before, itself included (then before
	// OnStartedLeading): once per (coordinator, term), however many spans
	// the term holds.
	OnNewLeader func(Leadership)
}

// The defaults, exported so that embedders can derive their own values.
const (
	DefaultTick               = 10 * time.Millisecond
	DefaultHeartbeatInterval  = 50 * time.Millisecond
	DefaultHeartbeatMisses    = 3
	DefaultRoundTrip          = 20 * time.Millisecond
	DefaultAnswerTimeout      = 40 * time.Millisecond
	DefaultCoordinatorTimeout = 120 * time.Millisecond
	DefaultExpectWindow       = 5 * time.Second
	DefaultSoloDelay          = 10 * time.Second
)

// DefaultConfig returns a Config with every timing at its default. The
// Transport still has to be set.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

// WithDefaults returns c with every zero field that has a default set to
// it, as New would use it.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Tick, DefaultTick)
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	if c.HeartbeatMisses == 0 {
		c.HeartbeatMisses = DefaultHeartbeatMisses
	}
	def(&c.RoundTrip, DefaultRoundTrip)
	def(&c.AnswerTimeout, DefaultAnswerTimeout)
	def(&c.CoordinatorTimeout, DefaultCoordinatorTimeout)
	def(&c.HopTimeout, c.RoundTrip)
	def(&c.StartupDelay, c.HeartbeatInterval)
	def(&c.ExpectWindow, DefaultExpectWindow)
	def(&c.SoloDelay, DefaultSoloDelay)
	if c.ExpectVoters == 0 {
		if st, ok := c.Transport.(StartupTransport); c.QuorumSize > 0 {
			c.ExpectVoters = c.QuorumSize
		} else if ok && st.Seeds() > 0 {
			c.ExpectVoters = 2
		}
	}
	def(&c.QuorumLease, c.HeartbeatInterval*time.Duration(c.HeartbeatMisses))
	def(&c.QuorumLeaseMax, 8*c.QuorumLease)
	def(&c.HandoffTimeout, c.HeartbeatInterval+c.CoordinatorTimeout)
	def(&c.StopTimeout, time.Second)
}

// Validate reports every field that is out of range, naming the field and
// its value. Zero fields are taken as their defaults before checking; the
// Transport is required.
func (c Config) Validate() error {
	c.setDefaults()
	_, _, err := c.coreConfig()
	return err
}

// coreConfig converts c (defaults set) into the core's configuration, in
// ticks, for the node the Transport describes (self).
func (c *Config) coreConfig() (cc core.Config, self Identity, err error) {
	v := validator{tick: c.Tick}
	self.Name = "unnamed" // lets the other fields be checked without a Transport
	switch {
	case c.Transport == nil:
		v.bad("Transport", "nil", "must be set")
	case c.Transport.Identity().Name == "":
		v.bad("Transport.Identity().Name", `""`, "must name this node")
	default:
		self = c.Transport.Identity()
		if _, err := core.ParseAlgorithm(self.Algorithm.String()); err != nil {
			v.bad("Transport.Identity().Algorithm", self.Algorithm, "want bully, ring or peterson")
		}
	}
	if c.Tick <= 0 {
		v.bad("Tick", c.Tick, "must be positive")
		return core.Config{}, self, errors.Join(v.errs...)
	}
	c.checkCounts(&v)
	c.checkRelations(&v)
	cc = core.Config{
		ID:                 self.Name,
		Roster:             core.MustRoster([]core.Peer{self.Peer()}),
		Algorithm:          self.Algorithm,
		Mode:               core.View,
		AnswerTimeout:      v.ticks("AnswerTimeout", c.AnswerTimeout),
		CoordinatorTimeout: v.ticks("CoordinatorTimeout", c.CoordinatorTimeout),
		RoundTrip:          v.ticks("RoundTrip", c.RoundTrip),
		HopTimeout:         v.ticks("HopTimeout", c.HopTimeout),
		HeartbeatInterval:  v.ticks("HeartbeatInterval", c.HeartbeatInterval),
		HeartbeatMisses:    c.HeartbeatMisses,
		HeartbeatWatchers:  c.HeartbeatWatchers,
		HeartbeatBatch:     c.HeartbeatBatch,
		StartupDelay:       v.ticks("StartupDelay", c.StartupDelay),
		ExpectVoters:       c.ExpectVoters,
		ExpectWindow:       v.ticks("ExpectWindow", c.ExpectWindow),
		Bootstrap:          c.Bootstrap,
		Preemption:         c.Preemption,
		PreemptMargin:      c.PreemptMargin,
		QuorumSize:         c.QuorumSize,
		QuorumLease:        v.ticks("QuorumLease", c.QuorumLease),
		QuorumLeaseMax:     v.ticks("QuorumLeaseMax", c.QuorumLeaseMax),
		StopTimeout:        v.ticks("StopTimeout", c.StopTimeout),
		SoloDelay:          v.ticks("SoloDelay", c.SoloDelay),
	}
	if st, ok := c.Transport.(StartupTransport); ok && cc.StartupDelay > 0 {
		// A view unchanged for less than the gossip's spread may still grow.
		cc.StartupDelay = max(cc.StartupDelay, int((st.Spread()+c.Tick-1)/c.Tick))
	}
	if len(v.errs) == 0 {
		// The core checks the rest (Algorithm, Preemption, its own relations).
		if err := cc.Validate(); err != nil {
			v.errs = append(v.errs, fmt.Errorf("election: %w", err))
		}
	}
	return cc, self, errors.Join(v.errs...)
}

// checkCounts checks the fields that are not converted into ticks.
func (c *Config) checkCounts(v *validator) {
	if c.HeartbeatMisses < 1 {
		v.bad("HeartbeatMisses", c.HeartbeatMisses, "must be at least 1")
	}
	if c.QuorumSize < 0 {
		v.bad("QuorumSize", c.QuorumSize, "must be 0 (off) or the cluster size")
	}
	if c.ExpectVoters < 0 {
		v.bad("ExpectVoters", c.ExpectVoters, "must not be negative")
	}
	if c.PreemptMargin < 0 {
		v.bad("PreemptMargin", c.PreemptMargin, "must not be negative")
	}
	if c.StopTimeout < 0 {
		v.bad("StopTimeout", c.StopTimeout, "must not be negative")
	}
	if c.HandoffTimeout < 0 {
		v.bad("HandoffTimeout", c.HandoffTimeout, "must not be negative")
	}
}

// checkRelations checks the timings against each other, in durations, so
// that errors name the runtime's fields rather than the core's ticks.
func (c *Config) checkRelations(v *validator) {
	if c.AnswerTimeout > 0 && c.AnswerTimeout < c.RoundTrip {
		v.bad("AnswerTimeout", c.AnswerTimeout, fmt.Sprintf("must cover a round trip (RoundTrip = %v)", c.RoundTrip))
	}
	if floor := c.AnswerTimeout + c.RoundTrip; c.CoordinatorTimeout > 0 && c.CoordinatorTimeout <= floor {
		v.bad("CoordinatorTimeout", c.CoordinatorTimeout, fmt.Sprintf("must exceed AnswerTimeout + RoundTrip = %v", floor))
	}
	if c.QuorumSize > 0 && c.QuorumLease > 0 && c.QuorumLease <= c.HeartbeatInterval {
		v.bad("QuorumLease", c.QuorumLease,
			fmt.Sprintf("must exceed HeartbeatInterval = %v so that a lease can be renewed", c.HeartbeatInterval))
	}
	if c.QuorumSize > 0 && c.QuorumLease > 0 && c.QuorumLeaseMax > 0 && c.QuorumLeaseMax < c.QuorumLease {
		v.bad("QuorumLeaseMax", c.QuorumLeaseMax, fmt.Sprintf("must be at least QuorumLease = %v", c.QuorumLease))
	}
}

// validator collects the errors of one Validate.
type validator struct {
	tick time.Duration
	errs []error
}

func (v *validator) bad(field string, value any, want string) {
	v.errs = append(v.errs, fmt.Errorf("election: Config.%s = %v: %s", field, value, want))
}

// ticks converts d into a whole, positive number of ticks.
func (v *validator) ticks(field string, d time.Duration) int {
	switch {
	case d <= 0:
		v.bad(field, d, "must be positive")
	case d%v.tick != 0:
		v.bad(field, d, fmt.Sprintf("must be a whole number of ticks (Tick = %v)", v.tick))
	case d/v.tick > 1<<31-1:
		v.bad(field, d, fmt.Sprintf("too many ticks (Tick = %v)", v.tick))
	default:
		return int(d / v.tick)
	}
	return 0
}
