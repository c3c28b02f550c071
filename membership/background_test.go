package membership

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Kicks from many goroutines, while the work's goroutine keeps finishing
// and returning: every kick is followed by a run that starts after it (no
// kick lost to a goroutine deciding to return), runs never overlap, and
// no goroutine is left once the kicks stop (wg.Wait returns).
func TestOnDemandServesEveryKick(t *testing.T) {
	const kickers, each = 8, 200
	var wg sync.WaitGroup
	sp := &spawner{wg: &wg}
	var d onDemand
	var kicked, served [kickers]atomic.Int64 // per kicker: last kick, last kick seen by a run
	var active, runs atomic.Int32
	work := func() {
		if active.Add(1) != 1 {
			t.Error("two runs at once")
		}
		runs.Add(1)
		for k := range kickers {
			served[k].Store(kicked[k].Load())
		}
		active.Add(-1)
	}
	var kwg sync.WaitGroup
	for k := range kickers {
		kwg.Go(func() {
			for i := 1; i <= each; i++ {
				kicked[k].Store(int64(i))
				d.kick(sp, work)
				if i%10 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	kwg.Wait()
	wg.Wait()
	for k := range kickers {
		if s := served[k].Load(); s != each {
			t.Errorf("kicker %d: the last run saw kick %d of %d", k, s, each)
		}
	}
	if d.running {
		t.Error("running after every goroutine returned")
	}
	t.Logf("%d kicks, %d runs", kickers*each, runs.Load())
}

// After close, the spawner starts no goroutine and its timers neither
// fire nor can be re-armed.
func TestSpawnerClose(t *testing.T) {
	var wg sync.WaitGroup
	sp := &spawner{wg: &wg}
	fired := make(chan struct{}, 1)
	var timer *time.Timer
	sp.afterFunc(&timer, time.Hour, func() { fired <- struct{}{} })
	sp.close()
	sp.reset(&timer, time.Nanosecond)
	if sp.goFunc(func() { t.Error("ran after close") }) {
		t.Fatal("goFunc started a goroutine after close")
	}
	var late *time.Timer
	if sp.afterFunc(&late, time.Nanosecond, func() {}); late != nil {
		t.Fatal("afterFunc made a timer after close")
	}
	wg.Wait()
	select {
	case <-fired:
		t.Fatal("a timer fired after close")
	case <-time.After(50 * time.Millisecond):
	}
}

// An idle member keeps no goroutine but the dispatcher and the
// transport's two readers: after SetRating (the publisher), sends (the
// links) and re-join turns (the joiner, every 50 ms here), none of the
// on-demand goroutines is left running.
func TestIdleNodeKeepsNoOnDemandGoroutine(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 2, func(c *Config) { c.RejoinInterval = 50 * time.Millisecond })
	if err := ms[0].SetRating(15); err != nil {
		t.Fatal(err)
	}
	ms[1].waitPeerEvents(t, "n1", "rating:n1/15")
	for i := range uint32(5) {
		for _, m := range []core.Message{
			{Type: core.MsgElection, From: "n1", To: "n2", Phase: i},
			{Type: core.MsgElection, From: "n2", To: "n1", Phase: i},
		} {
			if err := ms[m.From[1]-'1'].Send(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	tried := func(m *member) bool { s := m.Stats(); return s.Sent+s.SendFailed == 5 }
	if !waitUntil(waitTimeout, func() bool { return tried(ms[0]) && tried(ms[1]) }) {
		t.Fatalf("stats %+v and %+v: want 5 sends tried by each", ms[0].Stats(), ms[1].Stats())
	}
	// A re-join turn must have come (the joiner's goroutine ran), or the
	// test proves nothing about the joiner; then all must be gone.
	if !waitUntil(waitTimeout, func() bool { s := ms[1].Stats(); return s.Rejoins+s.RejoinsSkipped > 0 }) {
		t.Fatalf("stats %+v: no re-join turn came", ms[1].Stats())
	}
	if !waitUntil(waitTimeout, func() bool { return onDemandGoroutines() == 0 }) {
		t.Fatalf("%d on-demand goroutines left running on idle members", onDemandGoroutines())
	}
}

// onDemandGoroutines counts the goroutines of this process started by a
// spawner or running a link.
func onDemandGoroutines() int {
	return goroutinesWith("membership.(*spawner).goFunc", "membership.(*outLink).run(")
}

// goroutinesWith counts the goroutines of this process whose stack (with
// the "created by" line) mentions one of subs.
func goroutinesWith(subs ...string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		k := 0
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			for _, sub := range subs {
				if strings.Contains(g, sub) {
					k++
					break
				}
			}
		}
		return k
	}
}
