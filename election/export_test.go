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

// StallLoop blocks e's loop goroutine, as a pause of the process would,
// until release is called: the loop handles no event, tick or request in
// between, while Status, Check and the handlers still answer.
func StallLoop(e *Elector) (release func()) {
	stalled, resume := make(chan struct{}), make(chan struct{})
	go func() {
		_ = e.do(context.Background(), func() error {
			close(stalled)
			<-resume
			return nil
		})
	}()
	<-stalled
	return func() { close(resume) }
}
