package election_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// wakesOver returns how often each member's loop woke during d of idle
// bubble time.
func wakesOver(c *cluster, d time.Duration) map[string]uint64 {
	before := map[string]uint64{}
	for id, m := range c.members {
		before[id], _ = election.LoopCounters(m.e)
	}
	<-time.After(d)
	out := map[string]uint64{}
	for id, m := range c.members {
		w, _ := election.LoopCounters(m.e)
		out[id] = w - before[id]
	}
	return out
}

// TestIdleLoopsSleep: the loops of an idle cluster wake for the messages
// they receive, the deadlines of their core and a sample of their own
// lateness every 1.5 heartbeat intervals, or less often while their next
// timer is further off (wake.go), not at every tick: a coordinator once
// per heartbeat round, a follower once per heartbeat it hears (every
// round, or once per rotation period beyond W + B + 1 members, fanout.go)
// and once per sample. After a long idle stretch a
// crash of the coordinator is detected as soon as in TestCrashFailover.
func TestIdleLoopsSleep(t *testing.T) {
	const idle = 10 * time.Second
	const watchers = 4 // W, Config.HeartbeatWatchers' default
	ticks := uint64(idle / election.DefaultTick)
	for _, tc := range []struct {
		name string
		n    int
		tune func(*election.Config)
		// most wakes per tick allowed: of the coordinator, of a watcher
		// (a follower that hears every round), of any other follower
		coord, watcher, rest float64
	}{
		// every follower hears every round
		{name: "n=5", n: 5, coord: 0.25, watcher: 0.4, rest: 0.4},
		// B = 1: W = 4 watchers, the 7 others hear one round in 7, and
		// their detectors give up after K of those: they sample a quarter
		// of the way to that (about 0.06 a tick; 0.17 when every loop
		// sampled every 1.5 H)
		{name: "n=12/fan-out", n: 12, tune: func(c *election.Config) { c.HeartbeatBatch = 1 },
			coord: 0.25, watcher: 0.4, rest: 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				specs := voters(tc.n)
				top, next := specs[tc.n-1].id, specs[tc.n-2].id
				c := newCluster(t, specs, tc.tune)
				old, _ := c.waitAgreed(time.Second, top, 0)
				<-time.After(time.Second) // the start-up's messages are over
				wakes := wakesOver(c, idle)
				for i, s := range specs {
					w := wakes[s.id]
					limit, role := tc.rest, "follower"
					switch {
					case s.id == top:
						limit, role = tc.coord, "coordinator"
					case i >= tc.n-1-watchers:
						limit, role = tc.watcher, "watcher"
					}
					t.Logf("%s (%s): %d wakes in %d ticks (%.3f a tick)", s.id, role, w, ticks, float64(w)/float64(ticks))
					if float64(w) > limit*float64(ticks) {
						t.Errorf("%s (%s) woke %d times in %d ticks, want at most %.2f a tick", s.id, role, w, ticks, limit)
					}
				}

				const announce = time.Second
				c.crash(top)
				down := time.AfterFunc(announce, func() { c.net.AnnounceDown(top) })
				defer down.Stop()
				_, took := c.waitAgreed(announce, next, old)
				t.Logf("crash failover after the idle stretch: %v", took)
				if took < detection-heartbeat || took > detection+10*latency {
					t.Errorf("failover took %v, want K*H = %v less the heartbeat phase, plus an election", took, detection)
				}
			})
		})
	}
}

// stallNext makes m's loop block in its next metrics call (a paused or
// starved process) until open is called; open is idempotent and also runs
// at the test's cleanup, before the cluster's (Close waits for the loop).
func stallNext(t *testing.T, m *member) (open func()) {
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { m.rec.gate.Store(nil); close(gate) }) }
	t.Cleanup(open)
	m.rec.gate.Store(&gate)
	return open
}

// TestStalledCoordinatorWakesEveryTick: a coordinator's next heartbeat is
// always within a sample period, so once its loop has run late (a stall of
// a few ticks, too short for anyone to elect) it wakes at every tick while
// its health score is above 0, and samples again once the score is back
// to 0 (wake.go).
func TestStalledCoordinatorWakesEveryTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), nil)
		term, _ := c.waitAgreed(time.Second, "c", 0)
		<-time.After(time.Second)
		co := c.members["c"]
		_, late0 := election.LoopCounters(co.e)

		co.rec.entered = make(chan struct{}, 1)
		open := stallNext(t, co) // c's loop blocks in its next metrics call
		// A heartbeat round's metrics call (after its sends) comes within
		// an interval. The stall lasts 1.5 intervals: c wakes after its
		// next round was due, and the followers' silence stays under K*H.
		<-co.rec.entered
		<-time.After(heartbeat + heartbeat/2)
		open()
		ticks := uint64(heartbeat / election.DefaultTick)
		<-time.After(election.DefaultTick) // the wake after the stall
		w0, late := election.LoopCounters(co.e)
		<-time.After(heartbeat)
		w1, _ := election.LoopCounters(co.e)
		<-time.After(time.Second) // K*H on time brings the score back to 0
		w2, _ := election.LoopCounters(co.e)
		<-time.After(time.Second)
		w3, _ := election.LoopCounters(co.e)
		t.Logf("c ran %d ticks late; its wakes: %d in %d ticks after the stall, %d in 100 ticks a second later", late-late0, w1-w0, ticks, w3-w2)
		if late == late0 {
			t.Fatalf("c's loop did not run late in the stall")
		}
		if w1-w0 < ticks {
			t.Errorf("c woke %d times in the %d ticks after its stall, want at least one a tick", w1-w0, ticks)
		}
		if w3-w2 > 40 {
			t.Errorf("c woke %d times in 100 ticks a second after its stall, want at most 40: it should sample again", w3-w2)
		}
		if l, tm := c.agreed(); l != "c" || tm != term {
			t.Errorf("after the stall the members agree on %q in %v, want c in %v%s", l, core.Term(tm), core.Term(term), c.describe())
		}
	})
}

// TestStalledFollowerRanLate: a follower whose loop stalls for a second
// (a paused or starved process; here its metrics call blocks) counts the
// stall as ticks it ran late, and does not blame its coordinator for it:
// no election starts, the coordinator and term stay. Its health score is
// then above 0, but its detector is more than a sample period from firing,
// so its loop keeps sampling instead of waking at every tick (wake.go): in
// one process of 1,000 members every loop woke at every tick after the
// process ran late, and the wakes grew with the load they made.
func TestStalledFollowerRanLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), nil)
		term, _ := c.waitAgreed(time.Second, "c", 0)
		<-time.After(time.Second)
		a := c.members["a"]
		_, late0 := election.LoopCounters(a.e)
		started0 := a.rec.snapshot().ElectionsStarted

		const stall = time.Second
		open := stallNext(t, a) // a's loop blocks in its next metrics call
		<-time.After(stall)
		open()
		// Having run late, a's health score is above 0 for K*H on time;
		// its detector is further off than a sample period, so it wakes
		// for the heartbeats and its samples, not at every tick.
		ticks := uint64(3 * heartbeat / election.DefaultTick)
		<-time.After(heartbeat) // the events queued in the stall are handled
		w0, _ := election.LoopCounters(a.e)
		<-time.After(3 * heartbeat)
		w1, _ := election.LoopCounters(a.e)
		<-time.After(time.Second)
		w2, _ := election.LoopCounters(a.e)
		<-time.After(time.Second)
		w3, _ := election.LoopCounters(a.e)
		t.Logf("a's wakes: %d in %d ticks after the stall, %d in 100 ticks a second later", w1-w0, ticks, w3-w2)
		if w1-w0 > ticks/2 {
			t.Errorf("a woke %d times in the %d ticks after its stall, want at most %d: nothing of it is due within a sample period", w1-w0, ticks, ticks/2)
		}
		if w3-w2 > 40 {
			t.Errorf("a woke %d times in 100 ticks a second after its stall, want at most 40: it should sleep", w3-w2)
		}

		_, late := election.LoopCounters(a.e)
		lateTicks := late - late0
		t.Logf("a stalled for %v: %d ticks late", stall, lateTicks)
		// The stall begins at a's next metrics call, within a heartbeat
		// interval; the ticks before the wake it delayed count as on time.
		if want := uint64((stall - 3*heartbeat) / election.DefaultTick); lateTicks < want {
			t.Errorf("a's loop ran late by %d ticks in a %v stall, want at least %d", lateTicks, stall, want)
		}
		if s := a.rec.snapshot().ElectionsStarted; s != started0 {
			t.Errorf("a started %d elections after its stall, want none", s-started0)
		}
		if l, tm := c.agreed(); l != "c" || tm != term {
			t.Errorf("after the stall the members agree on %q in %v, want c in %v%s", l, core.Term(tm), core.Term(term), c.describe())
		}
	})
}
