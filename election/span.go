package election

import (
	"context"
	"time"
)

// Span is one span of this node's leadership: a maximal interval during
// which it is the valid leader (Elector.Check passes) in one term
// (docs/design.md, "Leadership spans"). A term holds several spans when,
// with the quorum guard, the lease lapses and a majority confirms this
// node again in the same term before it abdicates. Each span has its own
// context, cancelled when the span ends, and its own Claim,
// OnStartedLeading and OnStoppedLeading; the span's context carries the
// Span (SpanFromContext).
//
// A Span is a value: its methods may be called from any goroutine, at any
// time, also after the span has ended (they then fail). The zero Span is
// no leadership.
type Span struct {
	// Term is the term this node leads in: the fencing token.
	Term uint64
	// Number counts this node's spans in Term: 1 for the first, 2 for
	// the next, and so on.
	Number int

	el *Election
}

// Check is Elector.Check for this span: nil while the span lasts and its
// lease holds; ErrNotLeader once the span has ended (even if a later span
// of the same term has begun), ErrLeaseExpired when the lease has run out
// on the monotonic clock before the loop has ended the span.
func (s Span) Check() error {
	if s.el == nil {
		return ErrNotLeader
	}
	return s.el.check(s.Term, s.Number)
}

// Valid reports whether Check passes.
func (s Span) Valid() bool { return s.Check() == nil }

// Deadline returns the instant at which the span's lease ends if it is not
// renewed; ok is false once the span has ended, or without the quorum guard
// (no lease: the span lasts until the leadership is lost).
func (s Span) Deadline() (deadline time.Time, ok bool) {
	if s.el == nil {
		return time.Time{}, false
	}
	return s.el.leaseDeadline(s.Term, s.Number)
}

// Verify is Elector.VerifyLeader for this span: nil when a majority has
// acknowledged, now, that this node leads in this span; ErrNotLeader if the
// span has ended or ends first, ErrNoQuorumGuard without the guard, or
// ctx's error.
func (s Span) Verify(ctx context.Context) error {
	if s.el == nil {
		return ErrNotLeader
	}
	return s.el.verify(ctx, s.Term, s.Number)
}

// spanKey is the context key of the Span a leadership context carries.
type spanKey struct{}

// SpanFromContext returns the Span of a leadership context: the one handed
// to Claim and OnStartedLeading, or any context derived from it.
func SpanFromContext(ctx context.Context) (Span, bool) {
	s, ok := ctx.Value(spanKey{}).(Span)
	return s, ok
}

// spanRun is the span this node leads in, as the loop started it.
type spanRun struct {
	span Span
	// ctx is the leadership context handed to the span's Claim and
	// OnStartedLeading; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// work numbers the span's leader work among every span this member
	// has started, of any name (Elector.spans, from 1): the name's
	// notifier reports it done (markWorkDone) in that order.
	work uint64
}

// startSpan starts the span of l (this node leads): a new context, and
// Number one past the previous span's if that was in the same term.
func (el *Election) startSpan(l Leadership) *spanRun {
	n := 1
	if el.lastSpanTerm == l.Term {
		n = int(el.lastSpanNumber) + 1
	}
	el.lastSpanTerm, el.lastSpanNumber = l.Term, int32(n)
	span := Span{Term: l.Term, Number: n, el: el}
	el.e.spans++
	parent := el.e.runCtx
	if parent == nil {
		parent = context.Background() // a span before Run: its context ends with the span
	}
	ctx, cancel := context.WithCancel(context.WithValue(parent, spanKey{}, span))
	run := &spanRun{span: span, ctx: ctx, cancel: cancel, work: el.e.spans}
	el.leading.Store(run)
	return run
}
