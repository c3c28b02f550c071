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
// The part of a pause that falls before the wake it delays cannot be told
// from sleep, and counts as time on time. The sleep is capped so that this
// part stays small against what it could fire: the loop sleeps at most
// half of what is left before the core's deadline once that is more than
// a floor away (1.5 heartbeat intervals, at most K-1), and never more than
// maxSleep. A follower that heard its coordinator less than an interval
// before its last wake therefore never gives up on it for a pause alone:
// the late wake counts at most the floor or half the detector's remaining
// K intervals. With K = 1 the floor is one tick, and the loop wakes at
// every tick as it did before it slept.

// maxSleep bounds one sleep of the loop, however far the core's deadline.
const maxSleep = 10 * time.Second

// setSleep derives the bounds of the loop's sleep, in ticks, from the
// core's configuration.
func (e *Elector) setSleep() {
	cc := e.node.Config()
	h := cc.HeartbeatInterval
	e.sleepFloor = max(1, min(h+h/2, (cc.HeartbeatMisses-1)*h))
	e.sleepMax = max(1, int(maxSleep/e.cfg.Tick))
}

// plan sets due, the tick the loop is to wake at next: the core's next
// deadline, or earlier when that is more than sleepFloor away (see above).
// It holds until the next call into the node.
func (e *Elector) plan() {
	now := e.node.Now()
	d := e.node.NextDeadline() - now // at least 1
	if d > e.sleepFloor {
		d = min(max(e.sleepFloor, d/2), e.sleepMax)
	}
	e.due = now + d
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
	now := e.node.Now()
	target := int(time.Since(e.origin) / e.cfg.Tick)
	k := target - now
	if k <= 0 {
		return
	}
	if target <= e.due {
		e.node.Skip(k)
		return
	}
	onTime := max(e.due-1-now, 0)
	e.node.Skip(onTime)
	late := k - onTime - 1
	e.lateTicks.Add(uint64(late))
	if late >= e.cfg.HeartbeatMisses*int(e.cfg.HeartbeatInterval/e.cfg.Tick) {
		e.log.Info("the loop ran late: this process was paused or starved", "late", time.Duration(late)*e.cfg.Tick)
	}
	e.node.Advance(k - onTime)
}
