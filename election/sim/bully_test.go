package sim

import (
	"strconv"
	"strings"
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

// Resign hands off to the next by rating at once: one RESIGN and the
// successor's announcement, no failure detection.
func TestBullyResignHandsOff(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	s.ResetCounts()
	if err := s.Resign("5"); err != nil {
		t.Fatal(err)
	}
	start := s.Now()
	if !s.Settle(10_000) {
		t.Fatal("no agreement after resign")
	}
	agreed, _ := s.Agreement()
	if agreed.Coordinator != "4" || agreed.Term.Epoch() != 2 {
		t.Fatalf("after resign: %s in %s, want 4 in epoch 2", agreed.Coordinator, agreed.Term)
	}
	if el := s.Now() - start; el > 20 {
		t.Errorf("hand-off took %dms of virtual time, want one message delay plus an announcement", el)
	}
	if s.Sent[core.MsgResign] != 1 || s.Sent[core.MsgElection] != 0 {
		t.Errorf("resign sent %v", s.Sent)
	}
	// The resigned node does not take the role back while 4 works.
	s.RunFor(2_000)
	if agreed, _ := s.Agreement(); agreed.Coordinator != "4" {
		t.Fatalf("resigned node took over again: %s", agreed.Coordinator)
	}
}

// Non-voters follow but never stand, even when they rate highest.
func TestBullyNonVoterNeverLeads(t *testing.T) {
	ms := members(4)
	ms[3].NonVoter = true
	s, err := New(Config{Members: ms, Mode: core.View, HeartbeatDetector: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Settle(10_000) {
		t.Fatal("no agreement from a cold start")
	}
	agreed, _ := s.Agreement()
	if agreed.Coordinator != "3" {
		t.Fatalf("coordinator %s, want 3 (4 is a non-voter)", agreed.Coordinator)
	}
	if v := s.Checker().Violations; len(v) > 0 {
		t.Fatal(v)
	}
}

// The preemption policy: a follower whose rating rises above the
// coordinator's takes over under "always", not under "never", and under
// "margin" only when it clears the margin.
func TestBullyPreemptionPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy core.Preemption
		margin int64
		rating int64
		want   string
	}{
		{core.PreemptAlways, 0, 6, "2"},
		{core.PreemptNever, 0, 100, "5"},
		{core.PreemptMargin, 10, 12, "5"},
		{core.PreemptMargin, 10, 16, "2"},
	} {
		s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, Seed: 5,
			Core: core.Config{Preemption: tc.policy, PreemptMargin: tc.margin}})
		if err != nil {
			t.Fatal(err)
		}
		s.Bootstrap("5")
		if err := s.SetRating("2", tc.rating); err != nil {
			t.Fatal(err)
		}
		s.RunFor(1_000)
		if agreed, ok := s.Agreement(); !ok || agreed.Coordinator != tc.want {
			t.Errorf("%s margin %d, rating 2 -> %d: coordinator %s (agreed %v), want %s",
				tc.policy, tc.margin, tc.rating, agreed.Coordinator, ok, tc.want)
		}
	}
}

// A cold start (every node asleep) elects the highest, in every mode.
func TestBullyColdStart(t *testing.T) {
	for _, mode := range []core.Mode{core.Textbook, core.View} {
		s, err := New(Config{Members: members(7), Mode: mode, HeartbeatDetector: true, Seed: 6})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Checker().CheckLiveness(10_000, true) {
			t.Fatalf("%s: %v", mode, s.Checker().Violations)
		}
	}
}

// Every survivor's heartbeat detector fires at once while the membership
// view still holds the crashed coordinator alive (memberlist has not
// noticed yet). Only the top survivor asks (the silent coordinator, once)
// and declares; every other survivor has a live senior and waits for its
// announcement without sending anything. So the failover costs exactly n
// messages: one ELECTION and n - 1 COORDINATOR (the crashed coordinator is
// still in the view and is told too).
func TestBullyHeartbeatFailoverIsLinear(t *testing.T) {
	for _, n := range []int{5, 50, 200} {
		s, err := New(Config{Members: members(n), Mode: core.View, HeartbeatDetector: true,
			ViewDelayMs: -1, Seed: uint64(n)})
		if err != nil {
			t.Fatal(err)
		}
		s.Bootstrap(strconv.Itoa(n))
		s.RunFor(100)
		s.ResetCounts()
		s.Crash(strconv.Itoa(n))
		if !s.Checker().CheckLiveness(10_000, true) {
			t.Fatalf("n=%d: %v", n, s.Checker().Violations)
		}
		e, a, c := sent(s, core.MsgElection), sent(s, core.MsgAnswer), sent(s, core.MsgCoordinator)
		if e != 1 || a != 0 || c != n-1 {
			t.Errorf("n=%d: election %d answer %d coordinator %d, want 1, 0 and n-1 = %d", n, e, a, c, n-1)
		}
		if agreed, _ := s.Agreement(); agreed.Coordinator != strconv.Itoa(n-1) {
			t.Errorf("n=%d: coordinator %s, want %d", n, agreed.Coordinator, n-1)
		}
	}
}

// The top two crash together while the view still holds both alive: the
// survivors wait in vain for the second's announcement, then ask as any
// candidate does, and the highest survivor wins.
func TestBullySeniorDiesWithTheCoordinator(t *testing.T) {
	const n = 7
	s, err := New(Config{Members: members(n), Mode: core.View, HeartbeatDetector: true,
		ViewDelayMs: -1, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("7")
	s.RunFor(100)
	s.ResetCounts()
	s.Crash("7")
	s.Crash("6")
	if !s.Checker().CheckLiveness(10_000, true) {
		t.Fatalf("%v", s.Checker().Violations)
	}
	if agreed, _ := s.Agreement(); agreed.Coordinator != "5" {
		t.Fatalf("coordinator %s, want 5", agreed.Coordinator)
	}
	if sent(s, core.MsgElection) == 0 {
		t.Fatal("nobody asked: the survivors should have stopped waiting for 6 and elected")
	}
}

// The senior a survivor waits for is reported dead while it waits: the
// survivor moves on at once (to the next senior, or asks) instead of
// sitting out the whole wait.
func TestBullyAwaitedSeniorReportedDead(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true,
		ViewDelayMs: -1, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	s.RunFor(100)
	s.Crash("5")
	s.Crash("4")
	// Run until the detectors have fired: everyone below 4 waits for 4.
	for i := 0; i < 1_000 && s.Node("3").Status().Coordinator == "5"; i++ {
		s.RunFor(1)
	}
	if st := s.Node("3").Status(); st.State != core.StateCandidate {
		t.Fatalf("3 after detection: %+v, want a candidate", st)
	}
	start := s.Now()
	for _, id := range []string{"1", "2", "3"} {
		for _, dead := range []string{"4", "5"} {
			if err := s.poke(id, func(n *core.Node) { n.PeerDown(dead) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !s.Settle(10_000) {
		t.Fatal("no agreement")
	}
	agreed, _ := s.Agreement()
	if agreed.Coordinator != "3" {
		t.Fatalf("coordinator %s, want 3", agreed.Coordinator)
	}
	// 3 is top once the view drops 4 and 5: it declares at once.
	if el := s.Now() - start; el > 20 {
		t.Errorf("took %dms of virtual time after the view report, want one message delay", el)
	}
}

// A follower whose detector fires alone while the coordinator is alive (a
// starved process, a one-way loss): it asks the top node below the
// coordinator, which hears the coordinator and says so. No new term, and
// nobody else elects.
func TestBullyLoneFalseDetectionChangesNothing(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	s.RunFor(120)
	before, _ := s.Agreement()
	counts := func() (two, others uint64) {
		for _, id := range s.IDs() {
			if c := s.Counted(id).ElectionsStarted; id == "2" {
				two = c
			} else {
				others += c
			}
		}
		return
	}
	s.Block("5", "2") // 2 stops hearing 5's heartbeats
	s.RunFor(1_000)
	two, others := counts()
	if two == 0 || others != 0 {
		t.Fatalf("elections started: %d by 2, %d by the others; want some by 2 and none elsewhere", two, others)
	}
	s.Heal()
	s.RunFor(200)
	after, ok := s.Agreement()
	if !ok || after.Coordinator != "5" || after.Term != before.Term {
		t.Fatalf("after the false detections: %+v (agreed %v), want 5 in term %s", after, ok, before.Term)
	}
}

// A follower that persistently stops hearing the coordinator (a one-way
// loss on that link alone) is told by its senior that the coordinator
// lives, again and again. After the first time it asks at once instead of
// waiting for a senior's announcement, so it spends little of the time
// without a coordinator.
func TestBullyOneWayLossKeepsTheFollowerServed(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	s.RunFor(100)
	if err := s.Block("5", "1"); err != nil {
		t.Fatal(err)
	}
	const span = 10_000
	without := 0
	for range span {
		s.RunFor(1)
		if s.Node("1").Status().Coordinator == "" {
			without++
		}
	}
	t.Logf("node 1 without a coordinator: %d of %d ms", without, span)
	if without > span/10 {
		t.Errorf("node 1 had no coordinator for %d of %d ms under a one-way loss, want at most a tenth", without, span)
	}
	if agreed, _ := s.Agreement(); agreed.Coordinator != "5" || agreed.Term.Epoch() != 1 {
		t.Errorf("after the loss: %+v, want 5 in its first term", agreed)
	}
}

// A storm that feeds itself (more messages in flight than any election
// needs) stops the run and is reported, instead of growing without bound.
func TestRunawayStormIsReported(t *testing.T) {
	s, err := New(Config{Members: members(3), Mode: core.View, Seed: 14})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("3")
	limit := 3*3 + 10_000
	for i := 0; i <= limit; i++ {
		s.send(core.Message{Type: core.MsgElection, From: "1", To: "2", Term: core.MakeTerm(1, core.Tag("3")), Rating: 1})
	}
	if v := s.Checker().Violations; len(v) != 1 || !strings.Contains(v[0], "runaway") {
		t.Fatalf("violations %q, want one runaway", v)
	}
	if s.Step() {
		t.Fatal("the stopped run went on")
	}
}
