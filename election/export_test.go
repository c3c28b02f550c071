package election

import "context"

// LoopCounters returns how often e's loop has woken (events, requests and
// its timer) and the ticks it woke late by (wake.go).
func LoopCounters(e *Elector) (wakes, lateTicks uint64) {
	return e.wakes.Load(), e.lateTicks.Load()
}

// LeadingSpan returns the span e leads in as its loop last reported it and
// that span's context (the one handed to its Claim and OnStartedLeading);
// ok is false while e leads in none.
func LeadingSpan(e *Elector) (span Span, ctx context.Context, ok bool) {
	run := e.leading.Load()
	if run == nil {
		return Span{}, nil, false
	}
	return run.span, run.ctx, true
}
