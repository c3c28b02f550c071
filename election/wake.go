package election

import "time"

// The loop's clock (docs/design.md, "The loop's clock"). The core counts
// ticks of Config.Tick since Run started, but the loop does not wake at
// every one: it sleeps until the core's next deadline (core.Node.NextDeadline,
// the first tick at which the core may send a message or change its state)
// unless an event, a request or the end of leader work wakes it first. At
// each wake it brings the core's clock to the monotonic clock at once
// (advance): the ticks it slept through only count (core.Node.Skip), as the
// ticks of a loop that woke at every one would have.
//
// A loop that wakes after the tick it was due at (a paused, starved or
// throttled process) ran late by the difference, and only those ticks are
// missed ones: the core sees them as one step (core.Node.Advance by more
// than one tick), so that its lease sees the whole gap, its failure
// detector counts one tick of it, its health score rises and a
// coordinator heartbeats at once and reports its lag. A pause that ends
// before the loop was due to wake goes unseen: nothing was due in it.
//
// The loop wakes by its timer at least every samplePeriod ticks (1.5
// heartbeat intervals, at most K-1 of them, at least one tick), counted
// from its last wake at or after a tick it was due at: events that come
// before do not postpone it. These wakes are the
// loop's samples of its own lateness: a starved process shows as a timer
// that fires a tick or more late, which raises the core's health score
// (more patience with others while the process is itself late), as the
// loop that woke at every tick noticed it at its next tick. They also
// bound the part of a pause that falls before the wake it delays, which
// the loop cannot tell from sleep and counts as time on time: at most
// samplePeriod ticks. A follower that heard its coordinator less than an
// interval before a pause therefore never gives up on it for the pause
// alone. With K = 1 the floor is one tick: the loop wakes at every tick,
// as before it slept.
//
// A node whose next timer (core.Node.NextTimer) is further off samples
// less often: a quarter of the way to the timer, at most maxSampleStretch
// sample periods (sampleEvery). A follower in the heartbeat rotation of a
// large cluster hears its coordinator every few seconds and its detector
// gives up after K of those periods: it samples about once a second
// instead of 14 times, and the part of a pause it counts as on time is
// still less than a quarter of what was left before its timer. The
// samples come closer as the timer does. At n = 1,000 members in one
// process the samples were most of the loops' wakes (docs/performance.md).
//
// While the core's health score is above 0 (its loop ran late lately, and
// until it has run K*H ticks on time again) and one of its timers is due
// within samplePeriod ticks (core.Node.NextTimer: a coordinator's next
// heartbeat, a detector about to give up, an election's timeout), the
// loop wakes at every tick, as it did before it slept: lateness is then
// measured against every tick, so that a starved process keeps raising its
// score and its timers do not run on through ticks it could not act in.
// Without this rule, guarded starts of 5 real members under the race
// detector on the loaded 2-core machine livelocked (no coordinator in
// 15 s) more often than with the loop that woke at every tick
// (docs/reliability.md). A node whose timers are all further off keeps
// its samples: a pause that delays one is still measured (the ticks after
// the one due count as one step), and none of its timers can fire in the
// part that counts as on time. Without that limit, every loop of a process
// that ran late woke at every tick for at least K*H: at n = 1,000 members
// in one process (docs/performance.md) the loops' wakes grew with the
// load they caused, from 16 to 31 a second per member during the start,
// the most CPU of anything in the process.

// setSleep derives the loop's sample period, in ticks, from the core's
// configuration.
func (e *Elector) setSleep() {
	cc := e.g.Config()
	h := cc.HeartbeatInterval
	e.samplePeriod = max(1, min(h+h/2, (cc.HeartbeatMisses-1)*h))
}

// plan sets due, the tick the loop is to wake at next: the core's next
// deadline, or the next sample (sampleEvery ticks after the last) if that
// is sooner; every tick while the health score is above 0 and a timer is
// due within samplePeriod ticks. It holds until the next call into the
// node.
func (e *Elector) plan() {
	now := e.g.Now()
	timer := e.g.NextTimer() - now
	if e.g.Health() > 0 && timer <= e.samplePeriod {
		e.due = now + 1 // it ran late lately and times something: every tick is a sample
		return
	}
	e.due = min(e.g.NextDeadline(), max(e.sampled+e.sampleEvery(timer), now+1))
	if w := e.cand.wake(); w >= 0 {
		e.due = min(e.due, max(w, now+1)) // candidacies held back, or digests
	}
}

// maxSampleStretch bounds the stretched sample period (sampleEvery): at
// most this many samplePeriods between two samples (1.05 s at the
// defaults).
const maxSampleStretch = 15

// sampleEvery is the sample period for a node whose next timer is timer
// ticks away: samplePeriod, or a quarter of the way to the timer if that
// is longer, up to maxSampleStretch samplePeriods. The next sample is then
// due before the timer, so no timer can fire in the part of a pause that
// counts as on time (at most a quarter of what was left of it); as the
// timer comes nearer, the samples come closer together.
func (e *Elector) sampleEvery(timer int) int {
	return min(max(e.samplePeriod, timer/4), maxSampleStretch*e.samplePeriod)
}

// schedule plans the next wake and sets the loop's timer for it, unless
// it is set for that tick already.
func (e *Elector) schedule(t *time.Timer) {
	e.plan()
	if e.due == e.armed {
		return
	}
	e.armed = e.due
	t.Reset(time.Until(e.origin.Add(time.Duration(e.due) * e.cfg.Tick)))
}

// advance brings the core's clock to the monotonic clock: one tick per
// Tick since Run started. The ticks before the one the loop was due to
// wake at are counted as on time (Skip: the core does what ticking each
// would have); the loop ran late by the ticks after it (a starved or
// paused process), and those the core takes in one step (Advance: the
// lease sees the whole gap, the failure detector one tick).
func (e *Elector) advance() {
	now := e.g.Now()
	target := int(time.Since(e.origin) / e.cfg.Tick)
	k := target - now
	if k <= 0 {
		return
	}
	if target >= e.due {
		e.sampled = target // a wake at or after the tick due: a sample
	}
	if target <= e.due {
		e.g.Skip(k)
		return
	}
	onTime := max(e.due-1-now, 0)
	e.g.Skip(onTime)
	late := k - onTime - 1
	e.lateTicks.Add(uint64(late))
	if late >= e.cfg.HeartbeatMisses*int(e.cfg.HeartbeatInterval/e.cfg.Tick) {
		e.log.Info("the loop ran late: this process was paused or starved", "late", time.Duration(late)*e.cfg.Tick)
	}
	e.g.Advance(k - onTime)
}
