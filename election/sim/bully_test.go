package sim

import (
	"strconv"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// members returns ids 1..n with rating = id.
func members(n int) []core.Peer {
	out := make([]core.Peer, n)
	for i := range out {
		out[i] = core.Peer{ID: strconv.Itoa(i + 1), Rating: int64(i + 1)}
	}
	return out
}

// bullyRun bootstraps n nodes under the highest, crashes the listed ones
// before the run, lets the detectors notice and settles.
func bullyRun(t *testing.T, n int, mode core.Mode, crash []string, detect []string) *Sim {
	return bullyRunDelay(t, n, mode, crash, detect, 1, 5)
}

func bullyRunDelay(t *testing.T, n int, mode core.Mode, crash, detect []string, dmin, dmax int64) *Sim {
	t.Helper()
	s, err := New(Config{Members: members(n), Algorithm: core.Bully, Mode: mode, Seed: uint64(n),
		DelayMin: dmin, DelayMax: dmax})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CrashBefore(crash...); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(s.Highest()); err != nil {
		t.Fatal(err)
	}
	s.ResetCounts()
	for _, id := range detect {
		if err := s.Detect(id); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Settle(60_000) {
		t.Fatalf("n=%d: no agreement", n)
	}
	if v := s.Checker().Violations; len(v) > 0 {
		t.Fatalf("n=%d: violations: %v", n, v)
	}
	return s
}

func sent(s *Sim, t core.MsgType) int { return int(s.Sent[t]) }

// The classic analysis of the bully algorithm (Garcia-Molina 1982; e.g.
// Coulouris et al., "Distributed Systems", §15.3): with the coordinator
// down and the lowest-rated node detecting, ELECTION n(n-1)/2, ANSWER
// (n-1)(n-2)/2 and COORDINATOR n-2 messages.
func TestBullyTextbookLowestDetectsCrash(t *testing.T) {
	for n := 2; n <= 20; n++ {
		s := bullyRun(t, n, core.Textbook, []string{strconv.Itoa(n)}, []string{"1"})
		agreed, _ := s.Agreement()
		if want := strconv.Itoa(n - 1); agreed.Coordinator != want && n > 2 {
			t.Errorf("n=%d: coordinator %s, want %s", n, agreed.Coordinator, want)
		}
		got := [3]int{sent(s, core.MsgElection), sent(s, core.MsgAnswer), sent(s, core.MsgCoordinator)}
		want := [3]int{n * (n - 1) / 2, (n - 1) * (n - 2) / 2, max(n-2, 0)}
		if got != want {
			t.Errorf("n=%d: election/answer/coordinator = %v, want %v", n, got, want)
		}
	}
}

// All alive and the lowest starts an election: n² - 1 messages in total.
// The analysis assumes synchronous rounds, so every link has the same delay:
// with random delays the winner's COORDINATOR can overtake the first
// ELECTION, and a node that already knows the winner does not elect.
func TestBullyTextbookAllAliveLowestStarts(t *testing.T) {
	for n := 2; n <= 20; n++ {
		s := bullyRunDelay(t, n, core.Textbook, nil, []string{"1"}, 3, 3)
		if got, want := int(s.ElectionMessages()), n*n-1; got != want {
			t.Errorf("n=%d: %d messages, want n²-1 = %d (election %d, answer %d, coordinator %d)", n, got, want,
				sent(s, core.MsgElection), sent(s, core.MsgAnswer), sent(s, core.MsgCoordinator))
		}
		if agreed, _ := s.Agreement(); agreed.Coordinator != strconv.Itoa(n) {
			t.Errorf("n=%d: coordinator %s, want %d", n, agreed.Coordinator, n)
		}
	}
}

// The second-highest notices the highest's crash: n - 1 messages (one
// unanswered ELECTION, then n - 2 COORDINATOR).
func TestBullyTextbookSecondHighestDetects(t *testing.T) {
	for n := 2; n <= 20; n++ {
		s := bullyRun(t, n, core.Textbook, []string{strconv.Itoa(n)}, []string{strconv.Itoa(n - 1)})
		if got := int(s.ElectionMessages()); got != n-1 {
			t.Errorf("n=%d: %d messages, want n-1 = %d", n, got, n-1)
		}
	}
}

// View mode, every survivor notices at once (the common case with gossip):
// at most 2n messages per failover, and the highest survivor wins.
func TestBullyViewEveryoneDetects(t *testing.T) {
	for n := 2; n <= 20; n++ {
		var all []string
		for i := 1; i < n; i++ {
			all = append(all, strconv.Itoa(i))
		}
		s := bullyRun(t, n, core.View, []string{strconv.Itoa(n)}, all)
		if got := int(s.ElectionMessages()); got > 2*n {
			t.Errorf("n=%d: %d messages, want <= 2n = %d", n, got, 2*n)
		}
		if agreed, _ := s.Agreement(); n > 1 && agreed.Coordinator != strconv.Itoa(n-1) && n > 2 {
			t.Errorf("n=%d: coordinator %s, want %d", n, agreed.Coordinator, n-1)
		}
	}
}
