package election

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Errors of Check and VerifyLeader.
var (
	// ErrNotLeader: this node does not lead (in the term asked about).
	ErrNotLeader = core.ErrNotLeader
	// ErrNoSuccessor: Resign found no other live voter to hand off to.
	ErrNoSuccessor = core.ErrNoSuccessor
	// ErrLeaseExpired: this node led in the term, but its quorum lease has
	// run out on its monotonic clock (it was paused, starved or cut off)
	// and it may already have a successor.
	ErrLeaseExpired = errors.New("election: leader lease expired")
	// ErrNoQuorumGuard: VerifyLeader needs the quorum guard (QuorumSize > 0).
	ErrNoQuorumGuard = errors.New("election: VerifyLeader needs the quorum guard (Config.QuorumSize > 0)")
)

// leaseState is this node's leadership as guarded work checks it, published
// by the loop (atomic pointer): the term and span it leads in and, with the
// quorum guard, the instant its lease ends on the monotonic clock.
type leaseState struct {
	term uint64
	span int       // Span.Number
	end  time.Time // zero: no lease (quorum guard off)
}

// Valid reports whether this node leads in term and, with the quorum guard,
// its lease has not run out: a check of the monotonic clock and an atomic
// load, no I/O, cheap enough before every side effect. A process that was
// paused past its lease sees false at once when it resumes, before the
// loop has even noticed. See Check.
func (e *Elector) Valid(term uint64) bool { return e.def.Check(term) == nil }

// Check is Valid with the reason: nil, ErrNotLeader or ErrLeaseExpired.
//
// What it guarantees (docs/design.md, "Leases"): with the quorum guard, no
// two members' Check succeed for overlapping intervals of real time,
// provided that their monotonic clocks run at rates within
// (LeaseMargin-1)/QuorumLease ticks of each other (no synchronised clocks
// are needed). Without the guard it only says that this node still
// believes it leads; fence the writes with the term (Callbacks.Claim).
func (e *Elector) Check(term uint64) error { return e.def.check(term, 0) }

// Valid reports whether this member leads the name in term and, with the
// quorum guard, its lease has not run out (Elector.Valid).
func (el *Election) Valid(term uint64) bool { return el.Check(term) == nil }

// Check is Valid with the reason: nil, ErrNotLeader or ErrLeaseExpired
// (Elector.Check). A term is the name's own: a term of another name
// fails.
func (el *Election) Check(term uint64) error { return el.check(term, 0) }

// check is Check for span number span of term (0: any span of term).
func (el *Election) check(term uint64, span int) error {
	s := el.lease.Load()
	switch {
	case s == nil || s.term != term || term == 0 || span != 0 && s.span != span:
		return ErrNotLeader
	case !s.end.IsZero() && !time.Now().Before(s.end):
		return ErrLeaseExpired
	}
	return nil
}

// LeaseDeadline returns the instant at which this node's lease in term ends
// if it is not renewed; ok is false when it does not lead in term or the
// quorum guard is off (no lease: leadership lasts until it is lost).
func (e *Elector) LeaseDeadline(term uint64) (deadline time.Time, ok bool) {
	return e.def.leaseDeadline(term, 0)
}

// LeaseDeadline is Elector.LeaseDeadline for the name.
func (el *Election) LeaseDeadline(term uint64) (deadline time.Time, ok bool) {
	return el.leaseDeadline(term, 0)
}

// leaseDeadline is LeaseDeadline for span number span of term (0: any
// span of term).
func (el *Election) leaseDeadline(term uint64, span int) (deadline time.Time, ok bool) {
	s := el.lease.Load()
	if s == nil || s.term != term || span != 0 && s.span != span || s.end.IsZero() {
		return time.Time{}, false
	}
	return s.end, true
}

// LeaseContext returns a context derived from parent that ends when this
// node's lease in term ends as it stands now (renewals do not extend it:
// take a new one per operation), or at once when it does not lead in term.
// Without the quorum guard it ends only with parent or the leadership.
func (e *Elector) LeaseContext(parent context.Context, term uint64) (context.Context, context.CancelFunc) {
	return e.def.LeaseContext(parent, term)
}

// LeaseContext is Elector.LeaseContext for the name.
func (el *Election) LeaseContext(parent context.Context, term uint64) (context.Context, context.CancelFunc) {
	if err := el.Check(term); err != nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(err)
		return ctx, func() {}
	}
	if d, ok := el.LeaseDeadline(term); ok {
		return context.WithDeadline(parent, d)
	}
	return context.WithCancel(parent)
}

// VerifyLeader asks a majority to confirm, now, that this node leads: it
// sends a heartbeat round at once and returns nil when voters that make a
// majority with this node have acknowledged it, ErrNotLeader if the
// leadership ends first, or ctx's error. It needs the quorum guard.
func (e *Elector) VerifyLeader(ctx context.Context) error { return e.def.verify(ctx, 0, 0) }

// VerifyLeader is Elector.VerifyLeader for the name: it needs the quorum
// guard for the name (Config.QuorumSize or ElectionOptions.QuorumSize).
func (el *Election) VerifyLeader(ctx context.Context) error { return el.verify(ctx, 0, 0) }

// verify is VerifyLeader for span number span of term (0, 0: whatever this
// node leads in now).
func (el *Election) verify(ctx context.Context, term uint64, span int) error {
	e := el.e
	if e.cfg.QuorumSize == 0 && el.quorumSize == 0 {
		return ErrNoQuorumGuard
	}
	done := make(chan error, 1)
	err := e.do(ctx, func() error {
		return e.inView(func() error {
			if el.removed || span != 0 && !el.inSpan(term, span) {
				return ErrNotLeader
			}
			e.touch(el)
			seq, _ := e.g.VerifyRound(el.name)
			if seq == 0 {
				return ErrNotLeader
			}
			l := el.leader()
			l.verifiers = append(l.verifiers, verifier{seq: seq, term: uint64(el.node().Status().Term), span: span, done: done})
			return nil
		})
	})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// verifier is a VerifyLeader waiting for its round's acknowledgements.
type verifier struct {
	seq  uint64
	term uint64
	span int // the span it must stay in (Span.Verify); 0: any span of term
	done chan error
}

// inSpan reports whether this node leads, as the loop last reported, in
// span number span of term.
func (el *Election) inSpan(term uint64, span int) bool {
	run := el.leading.Load()
	return el.lastLeader().IsSelf && run != nil && run.span.Term == term && run.span.Number == span
}

// checkVerifiers answers the VerifyLeader calls whose round a majority has
// acknowledged, or whose leadership has ended.
func (el *Election) checkVerifiers() {
	l := el.lead
	keep := l.verifiers[:0]
	for _, v := range l.verifiers {
		switch {
		case !el.lastLeader().IsSelf || el.lastLeader().Term != v.term, v.span != 0 && !el.inSpan(v.term, v.span):
			v.done <- ErrNotLeader
		case el.node().Verified(v.seq):
			v.done <- nil
		default:
			keep = append(keep, v)
		}
	}
	clear(l.verifiers[len(keep):])
	l.verifiers = keep
}

// publishLease stores what Check reads: the term and span this node leads
// in and, with the guard, its lease end turned from the core's ticks into
// an instant of the monotonic clock (origin + ticks x Tick, never later than
// the send time of the round that gave the lease plus QuorumLease).
func (el *Election) publishLease() {
	run := el.leading.Load()
	if !el.lastLeader().IsSelf || run == nil {
		if el.lease.Load() != nil {
			el.lease.Store(nil)
		}
		return
	}
	s := leaseState{term: run.span.Term, span: run.span.Number}
	if el.guarded() {
		end, ok := el.node().LeaseEnd()
		if !ok {
			el.lease.Store(nil)
			return
		}
		if int64(end) > math.MaxInt64/int64(el.e.cfg.Tick) {
			end = 0
		}
		s.end = el.instant(end)
	}
	if old := el.lease.Load(); old == nil || *old != s {
		el.lease.Store(&s) // allocated only when it changed
	}
}

// observeIsolated logs when a ring member starts and stops sitting out of
// elections because it found it cannot reach a majority of QuorumSize
// (quorum guard; docs/design.md, "Rings on a slow host"): a member cut off
// from most of the others, or on a host so loaded that a majority's
// answers came too late. It reports whether the sit-out changed
// (Status.SittingOut).
func (el *Election) observeIsolated() bool {
	v := el.node().Isolated()
	if v == el.isolated || el.e.self.Algorithm == core.Bully {
		return false // bully has no such rule (the core guard's sitsOut is the rings')
	}
	el.isolated = v
	el.u().SittingOut, el.u().SittingOutChanged = v, true
	if v {
		el.logger().Warn("sitting out ring elections: fewer than a majority of QuorumSize answered or acknowledged", "quorum", el.e.cfg.QuorumSize)
		return true
	}
	el.logger().Info("back in ring elections: this member reaches a majority again")
	return true
}

// observeLease follows the lease this node asks for as coordinator
// (Update.Lease), and logs when it stretches beyond QuorumLease and when
// it comes back: a failover after this coordinator's crash takes as much
// longer as the lease has stretched.
func (el *Election) observeLease() {
	ask := time.Duration(el.node().LeaseAsk()) * el.e.cfg.Tick
	was := el.leaseAsk()
	if ask == was {
		return
	}
	switch base := el.e.cfg.QuorumLease; {
	case ask > base && was <= base:
		el.logger().Info("quorum lease stretched: heartbeat round trips are slow", "lease", ask, "quorum_lease", base)
	case ask == base && was > base:
		el.logger().Info("quorum lease back to QuorumLease", "lease", ask)
	}
	el.leader().leaseAsk = ask
	el.u().LeaseChanged = true
}

// guarded reports whether the name runs with the quorum guard.
func (el *Election) guarded() bool { return el.e.cfg.QuorumSize > 0 || el.quorumSize > 0 }
