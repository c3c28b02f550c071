package sim

import (
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
	idleHeartbeats = sent(s, core.MsgHeartbeat)
	s.ResetCounts()
	s.Crash(strconv.Itoa(n))
	start, next := s.Now(), strconv.Itoa(n-1)
	for s.Now()-start < 10_000 {
		s.RunFor(1)
		if st, ok := s.Agreement(); ok && st.Coordinator == next && s.InFlight() == 0 {
			break
		}
	}
	if st, ok := s.Agreement(); !ok || st.Coordinator != next {
		t.Fatalf("n=%d: no agreement on %s within 10 s: %+v", n, next, st)
	}
	for _, c := range s.Sent {
		msgs += int(c)
	}
	return idleHeartbeats, s.Now() - start, msgs - sent(s, core.MsgHeartbeat) - sent(s, core.MsgHeartbeatAck)
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
