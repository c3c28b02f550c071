package election

// LoopCounters returns how often e's loop has woken (events, requests and
// its timer) and the ticks it woke late by (wake.go).
func LoopCounters(e *Elector) (wakes, lateTicks uint64) {
	return e.wakes.Load(), e.lateTicks.Load()
}
