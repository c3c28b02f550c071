package sim

import (
	"slices"
	"strconv"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// failover bootstraps n nodes under the highest, runs idle for a second,
// crashes the coordinator with every view still holding it alive (only
// heartbeats can tell) and runs until every live node follows the next
// highest. It returns the heartbeats sent in the idle second, the
// milliseconds from the crash to agreement, and the messages sent meanwhile.
func failover(t *testing.T, n int, seed uint64) (idleHeartbeats int, ms int64, msgs int) {
	t.Helper()
	r := crashFailover(t, n, seed, 1, nil)
	return r.idleHeartbeats, r.ms, r.msgs
}

// failoverRun is what crashFailover measured.
type failoverRun struct {
	idleHeartbeats int   // the coordinator's, in the idle second before the crash
	ms             int64 // from the crash to every survivor following the new coordinator
	msgs           int   // election messages meanwhile (heartbeats and their acks left out)
	elections      int   // ELECTIONs among them
}

// crashFailover is failover with the top `top` members crashing at once
// (the views still hold them alive) and the members in detect noticing at
// the moment of the crash besides the heartbeat detectors (as members of
// a starved process whose loops ran late do). It runs until every
// survivor follows the highest survivor.
func crashFailover(t *testing.T, n int, seed uint64, top int, detect []string) failoverRun {
	t.Helper()
	s, err := New(Config{Members: members(n), Mode: core.View, HeartbeatDetector: true, ViewDelayMs: -1, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	s.RunFor(2_000)
	s.ResetCounts()
	s.RunFor(1_000)
	var r failoverRun
	r.idleHeartbeats = sent(s, core.MsgHeartbeat)
	s.ResetCounts()
	for i := range top {
		s.Crash(strconv.Itoa(n - i))
	}
	for _, id := range detect {
		if err := s.Detect(id); err != nil {
			t.Fatal(err)
		}
	}
	start, next := s.Now(), strconv.Itoa(n-top)
	for s.Now()-start < 10_000 {
		s.RunFor(1)
		if st, ok := s.Agreement(); ok && st.Coordinator == next && s.InFlight() == 0 {
			break
		}
	}
	if st, ok := s.Agreement(); !ok || st.Coordinator != next {
		t.Fatalf("n=%d, %d crashed: no agreement on %s within 10 s: %+v", n, top, next, st)
	}
	for _, c := range s.Sent {
		r.msgs += int(c)
	}
	r.ms = s.Now() - start
	r.msgs -= sent(s, core.MsgHeartbeat) + sent(s, core.MsgHeartbeatAck)
	r.elections = sent(s, core.MsgElection)
	return r
}

// At n = 1,000 the coordinator's idle heartbeats stay at W + B a round (20
// rounds a second at H = 50 ms: 180 a second, not 19,980), and a crash is
// still detected and replaced at the detection floor: K·H of silence at
// the top survivor, a pre-vote round trip, the announcement, as at n = 5,
// for about n messages.
func TestFanOutFailoverAt1000(t *testing.T) {
	def := core.DefaultConfig()
	const tickMs, delayMax = 10, 5 // the simulator's defaults
	hMs := int64(def.HeartbeatInterval * tickMs)
	floor := int64(def.HeartbeatMisses)*hMs + hMs + 2*delayMax + 2*tickMs // silence from the last heartbeat, + a round trip
	for seed := uint64(1); seed <= 3; seed++ {
		h5, ms5, m5 := failover(t, 5, seed)
		h, ms, m := failover(t, 1000, seed)
		t.Logf("seed %d: n=5: idle heartbeats %d/s, failover %d ms, %d messages; n=1000: %d/s, %d ms, %d messages",
			seed, h5, ms5, m5, h, ms, m)
		if want := int(1000/hMs) * (def.HeartbeatWatchers + def.HeartbeatBatch); h > want {
			t.Errorf("seed %d: n=1000: %d heartbeats in an idle second, want at most %d", seed, h, want)
		}
		if ms > floor || ms5 > floor {
			t.Errorf("seed %d: failover %d ms at n=1000, %d ms at n=5, want both within the floor %d ms", seed, ms, ms5, floor)
		}
		if m > 2*1000 {
			t.Errorf("seed %d: %d messages per failover at n=1000, want at most 2n", seed, m)
		}
	}
}

// At n = 1,000, the failovers where the top survivors are dead too, with
// the views still holding them alive: the coordinator and its first
// watcher (the surviving watchers elect); the same while a hundred members
// spread over the ranks notice at the moment of the crash, as members of a
// starved process do (each escalates past the dead first watcher, in
// bands: docs/algorithms.md, bully, View mode); and the top K + 1 = 9
// (the coordinator, every watcher and four more) with every survivor
// noticing at once. One coordinator, the highest survivor, wins each; the
// times and messages are logged for docs/performance.md.
func TestFanOutMultipleCrashesAt1000(t *testing.T) {
	const n = 1000
	var starved, all []string
	for i := 10; i < n-1; i += 10 {
		starved = append(starved, strconv.Itoa(i))
	}
	for i := 1; i <= n-9; i++ {
		all = append(all, strconv.Itoa(i))
	}
	// The bound on a failover's election messages: the winner's n − 1
	// announcements, and for each member that noticed, in each of at most
	// two elections (an ANSWER followed by no COORDINATOR within T'
	// restarts one), its question to the first watcher and the bands it
	// asks, one reply each. Before the bands each asked every member above
	// it: 99,817 messages for the starved hundred (seed 1), 991,012 for
	// the top 9.
	const band = 8
	bound := func(noticed, bands int) int { return n + 2*noticed*2*(1+bands*band) }
	for _, c := range []struct {
		name   string
		top    int
		detect []string
		// maxMsgs bounds the election messages per failover.
		maxMsgs int
	}{
		{"coordinator", 1, nil, 2 * n},
		{"coordinator and first watcher", 2, nil, 2 * n},
		{"coordinator and first watcher, 99 starved members notice", 2, starved, bound(len(starved), 1)},
		{"top 9, every survivor notices", 9, all, bound(len(all), 2)},
	} {
		var ms []int64
		var msgs, elections []int
		for seed := uint64(1); seed <= 10; seed++ {
			r := crashFailover(t, n, seed, c.top, c.detect)
			ms, msgs, elections = append(ms, r.ms), append(msgs, r.msgs), append(elections, r.elections)
			if r.msgs > c.maxMsgs {
				t.Errorf("%s, seed %d: %d election messages, want at most %d", c.name, seed, r.msgs, c.maxMsgs)
			}
			if r.ms > 1_000 {
				t.Errorf("%s, seed %d: failover %d ms, want at most 1 s", c.name, seed, r.ms)
			}
		}
		slices.Sort(ms)
		slices.Sort(msgs)
		slices.Sort(elections)
		t.Logf("%s: failover %d / %d / %d ms (min / p50 / max of 10 seeds); election messages %d / %d / %d, ELECTION %d / %d / %d",
			c.name, ms[0], ms[len(ms)/2], ms[len(ms)-1], msgs[0], msgs[len(msgs)/2], msgs[len(msgs)-1],
			elections[0], elections[len(elections)/2], elections[len(elections)-1])
	}
}
