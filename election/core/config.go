package core

import (
	"errors"
	"fmt"
)

// Preemption says when a higher-rated voter displaces a working coordinator
// (the bully rule, docs/algorithms.md, bully step 5).
type Preemption uint8

// The policies.
const (
	// PreemptAlways: any higher-rated voter takes over (the bully rule).
	PreemptAlways Preemption = iota
	// PreemptMargin: only a voter whose rating exceeds the coordinator's by
	// more than Config.PreemptMargin takes over; damps flapping nodes.
	PreemptMargin
	// PreemptNever: a working coordinator is kept until it fails or resigns.
	PreemptNever
)

// String returns the policy's name.
func (p Preemption) String() string {
	switch p {
	case PreemptAlways:
		return "always"
	case PreemptMargin:
		return "margin"
	case PreemptNever:
		return "never"
	}
	return fmt.Sprintf("preemption(%d)", uint8(p))
}

// Config configures one Node. Every duration is a number of ticks: the core
// has no clock; the runtime driver ticks every few milliseconds (see
// election.Config.Tick) and the simulator at a virtual interval.
type Config struct {
	// ID names this node; it must appear in Roster. Required.
	ID string
	// Roster lists the configured members, this node included, in ring
	// (clockwise) order, with their ratings. It is shared and never
	// modified; build it once with NewRoster and give it to every node of a
	// simulated cluster. Required.
	Roster *Roster
	// Algorithm to run. Default Bully.
	Algorithm Algorithm
	// Mode: Textbook (no knowledge of who is alive) or View (a membership
	// view; the runtime always uses View). Default Textbook.
	Mode Mode

	// AnswerTimeout is T: how long a bully candidate waits for an ANSWER
	// before it declares itself. Default 4. Must cover a round trip.
	AnswerTimeout int
	// CoordinatorTimeout is T': how long a candidate that got an ANSWER waits
	// for COORDINATOR before it starts a new election. Default 12. Must
	// exceed AnswerTimeout + RoundTrip.
	CoordinatorTimeout int
	// RoundTrip is the longest expected round trip between two nodes.
	// Default 2.
	RoundTrip int
	// HopTimeout is how long a ring node waits for its successor's Ack
	// before it skips to the next one, while no longer round trip has
	// been measured (Node.hopTimeout: twice the longest measured lately,
	// at most 8 × HopTimeout). Default RoundTrip.
	HopTimeout int
	// HeartbeatInterval is H: the coordinator sends a heartbeat every H
	// ticks. Default 5.
	HeartbeatInterval int
	// HeartbeatMisses is K: a follower that hears nothing from its
	// coordinator for K intervals starts an election. Default 3.
	HeartbeatMisses int
	// StartupDelay is how long a node that has just started (state sleep)
	// listens for a coordinator's heartbeat before it starts an election.
	// Default HeartbeatInterval, so a restarted node learns the current
	// term first. 0 after Default means "elect at once".
	StartupDelay int
	// Preemption policy; PreemptMargin uses PreemptMargin. Default
	// PreemptAlways for every algorithm.
	Preemption    Preemption
	PreemptMargin int64
	// QuorumSize is S for the quorum guard: 0 turns it off. With S > 0 a
	// coordinator must hear heartbeat acks from a majority of S (itself
	// included) within QuorumLease, else it steps down; a follower reports a
	// coordinator only while the coordinator says it holds that majority.
	QuorumSize int
	// HeartbeatWatchers is W: in View mode the coordinator heartbeats the
	// W top-rated live voters besides itself every round (the members
	// that act on its silence); HeartbeatBatch is B: it heartbeats about B
	// of the others a round, in rotation, so each of them hears it once
	// every ceil(others / B) rounds. Clusters of at most W + B + 1 members,
	// and Textbook mode, heartbeat everyone every round (fanout.go,
	// docs/design.md "Heartbeat fan-out"). Defaults 4 and 5.
	HeartbeatWatchers int
	HeartbeatBatch    int
	// QuorumLease is the quorum lease. Default HeartbeatInterval *
	// HeartbeatMisses.
	QuorumLease int
	// LeaseMargin is added to the lease a follower grants (counted from
	// its receipt of the heartbeat) before it acknowledges a coordinator of
	// another term: one tick for the driver's tick rounding, the rest for
	// the clock-rate difference between two members' monotonic clocks.
	// Default 2: rates may differ by up to (LeaseMargin-1)/QuorumLease.
	// A stretched lease gets a margin in proportion (leaseMargin).
	LeaseMargin int
	// QuorumLeaseMax caps the stretched lease: a coordinator whose
	// heartbeat round trips take longer than QuorumLease allows (a loaded
	// or paused host) asks its voters for a longer lease, up to this
	// (docs/design.md, "Leases": "A lease that stretches"). It is also how
	// long a starting voter acknowledges nobody: it may have promised that
	// much before it restarted. Default 8 * QuorumLease (Lifeguard's
	// largest stretch of memberlist's probe timeout); QuorumLease turns
	// stretching off.
	QuorumLeaseMax int
	// StopTimeout bounds how long a coordinator that gives the role up
	// waits for its driver's CompleteHandoff (the work it guarded has
	// stopped) before it passes the role on anyway. Default 0: at once
	// (the simulator, and a driver with no leader work to stop).
	StopTimeout int
	// ExpectVoters holds a starting node's first election back until its
	// view has held this many live voters (itself included), as Consul's
	// bootstrap_expect does. Unless Bootstrap is set, the hold lasts
	// however long that takes (with the quorum guard, until a majority of
	// QuorumSize if that is fewer): a node that never found its cluster
	// never stands. Default 0: no expectation (docs/operations.md, "Cold
	// start").
	ExpectVoters int
	// ExpectWindow is the start-up window: until this tick a starting
	// node elects only once its view has stopped growing for
	// StartupDelay. After it, a node that has seen ExpectVoters voters
	// (or, with Bootstrap, any node) elects with whatever it sees.
	// Default 0: no window and no hold (a node elects after StartupDelay,
	// whatever its view).
	ExpectWindow int
	// Bootstrap lets the window end the hold of a node that has never seen
	// ExpectVoters voters: the first member of a new cluster, which may
	// lead alone. Default false.
	Bootstrap bool
	// SoloDelay holds back a member whose view lost its last two (or
	// more) other voters within SoloDelay of each other: it is probably
	// cut off itself, so it raises no term, alone, until SoloDelay after
	// the departure that left it one voter (a partition shorter than that
	// heals with the coordinator's term unchanged); after it, a lone
	// survivor of simultaneous crashes leads. A member that loses its
	// voters further apart, or a member of two that loses its peer, leads
	// at once. Quorum guard off only (with it a member alone never leads
	// unless QuorumSize is 1). Default 1000 (10 s at the 10 ms tick of
	// the runtime's and the simulator's defaults).
	SoloDelay int
}

// DefaultConfig returns a Config with every timing at its default; ID and
// Roster still have to be set.
func DefaultConfig() Config {
	c := Config{}
	c.setDefaults()
	return c
}

// maxLeaseTicks bounds QuorumLeaseMax (Message.Lease is a uint32, and a
// promise's end must not overflow).
const maxLeaseTicks = 1 << 30

func (c *Config) setDefaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.AnswerTimeout, 4)
	def(&c.CoordinatorTimeout, 12)
	def(&c.RoundTrip, 2)
	def(&c.HopTimeout, c.RoundTrip)
	def(&c.HeartbeatInterval, 5)
	def(&c.HeartbeatMisses, 3)
	def(&c.StartupDelay, c.HeartbeatInterval)
	def(&c.QuorumLease, c.HeartbeatInterval*c.HeartbeatMisses)
	def(&c.LeaseMargin, 2)
	def(&c.QuorumLeaseMax, max(c.QuorumLease, min(8*c.QuorumLease, maxLeaseTicks)))
	def(&c.SoloDelay, 1000)
	def(&c.HeartbeatWatchers, 4)
	def(&c.HeartbeatBatch, 5)
}

// Validate reports the first field that is out of range, naming the field and
// its value. Zero timings are taken as their defaults before checking.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

func (c *Config) validate() error {
	var errs configErrors
	checkMember(&errs, c.ID, c.Roster)
	c.checkShared(&errs)
	return errors.Join(errs...)
}

// checkShared checks what the nodes of a Host share: everything but the
// node's own ID and Roster.
func (c *Config) checkShared(e *configErrors) {
	c.checkAlgorithm(e)
	c.checkTicks(e)
	c.checkHolds(e)
	c.checkBullyTimeouts(e)
	c.checkPreemption(e)
	c.checkGuard(e)
}

// configErrors collects what validate finds wrong, each error naming the
// field and its value.
type configErrors []error

// bad records that field holds v, and what it should hold.
func (e *configErrors) bad(field string, v any, want string) {
	*e = append(*e, fmt.Errorf("core: Config.%s = %v: %s", field, v, want))
}

// checkAlgorithm: a known algorithm and mode.
func (c *Config) checkAlgorithm(e *configErrors) {
	if c.Algorithm >= numAlgorithms {
		e.bad("Algorithm", c.Algorithm, "want Bully, Ring or Peterson")
	}
	if c.Mode > View {
		e.bad("Mode", c.Mode, "want Textbook or View")
	}
}

// checkTicks: every timing is at least a tick, and the heartbeat fan-out
// reaches at least one member a round.
func (c *Config) checkTicks(e *configErrors) {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"AnswerTimeout", c.AnswerTimeout}, {"CoordinatorTimeout", c.CoordinatorTimeout},
		{"RoundTrip", c.RoundTrip}, {"HopTimeout", c.HopTimeout},
		{"HeartbeatInterval", c.HeartbeatInterval}, {"HeartbeatMisses", c.HeartbeatMisses},
		{"QuorumLease", c.QuorumLease}, {"LeaseMargin", c.LeaseMargin}, {"SoloDelay", c.SoloDelay},
	} {
		if f.v < 1 {
			e.bad(f.name, f.v, "must be at least 1 tick")
		}
	}
	if c.HeartbeatWatchers < 1 {
		e.bad("HeartbeatWatchers", c.HeartbeatWatchers, "must be at least 1 (the top survivor)")
	}
	if c.HeartbeatBatch < 1 {
		e.bad("HeartbeatBatch", c.HeartbeatBatch, "must be at least 1 member a round")
	}
}

// checkHolds: what holds a node back (a hand-off's wait for its driver,
// the start-up expectation and delay) is never negative, and a wait for
// ExpectVoters is bounded.
func (c *Config) checkHolds(e *configErrors) {
	if c.StopTimeout < 0 {
		e.bad("StopTimeout", c.StopTimeout, "must not be negative")
	}
	if c.ExpectVoters < 0 {
		e.bad("ExpectVoters", c.ExpectVoters, "must not be negative")
	}
	if c.ExpectWindow < 0 {
		e.bad("ExpectWindow", c.ExpectWindow, "must not be negative")
	}
	if c.ExpectVoters > 0 && c.ExpectWindow == 0 {
		e.bad("ExpectWindow", c.ExpectWindow, "must bound the wait for ExpectVoters (at least 1 tick)")
	}
	if c.StartupDelay < 0 {
		e.bad("StartupDelay", c.StartupDelay, "must not be negative")
	}
}

// checkBullyTimeouts: T covers a round trip, and T' the round trip after
// T (docs/algorithms.md, bully).
func (c *Config) checkBullyTimeouts(e *configErrors) {
	if c.AnswerTimeout < c.RoundTrip {
		e.bad("AnswerTimeout", c.AnswerTimeout, fmt.Sprintf("must cover a round trip (RoundTrip = %d)", c.RoundTrip))
	}
	if c.CoordinatorTimeout <= c.AnswerTimeout+c.RoundTrip {
		e.bad("CoordinatorTimeout", c.CoordinatorTimeout,
			fmt.Sprintf("must exceed AnswerTimeout + RoundTrip = %d", c.AnswerTimeout+c.RoundTrip))
	}
}

// checkPreemption: a known policy and a margin that is not negative.
func (c *Config) checkPreemption(e *configErrors) {
	if c.Preemption > PreemptNever {
		e.bad("Preemption", c.Preemption, "want PreemptAlways, PreemptMargin or PreemptNever")
	}
	if c.PreemptMargin < 0 {
		e.bad("PreemptMargin", c.PreemptMargin, "must not be negative")
	}
}

// checkGuard: the quorum guard's size, and with the guard on a lease that
// a heartbeat can renew and a stretch cap between QuorumLease and
// maxLeaseTicks.
func (c *Config) checkGuard(e *configErrors) {
	if c.QuorumSize < 0 {
		e.bad("QuorumSize", c.QuorumSize, "must be 0 (off) or the cluster size")
	}
	if c.QuorumSize <= 0 {
		return
	}
	if c.QuorumLease <= c.HeartbeatInterval {
		e.bad("QuorumLease", c.QuorumLease,
			fmt.Sprintf("must exceed HeartbeatInterval = %d so that a lease can be renewed", c.HeartbeatInterval))
	}
	if c.QuorumLeaseMax < c.QuorumLease {
		e.bad("QuorumLeaseMax", c.QuorumLeaseMax, fmt.Sprintf("must be at least QuorumLease = %d", c.QuorumLease))
	}
	if c.QuorumLeaseMax > maxLeaseTicks {
		e.bad("QuorumLeaseMax", c.QuorumLeaseMax, fmt.Sprintf("must be at most %d ticks", maxLeaseTicks))
	}
}

// validateShared is validate without the node's own ID and Roster.
func (c *Config) validateShared() error {
	var errs configErrors
	c.checkShared(&errs)
	return errors.Join(errs...)
}

// checkMember: id names a member of roster.
func checkMember(e *configErrors, id string, roster *Roster) {
	if id == "" {
		e.bad("ID", `""`, "must be set")
	}
	if roster == nil {
		e.bad("Roster", "nil", "must be set (NewRoster)")
	} else if id != "" && roster.Index(id) < 0 {
		e.bad("ID", fmt.Sprintf("%q", id), "must be a member of Roster")
	}
}
