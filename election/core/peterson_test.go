package core

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// petersonRun is what one active/relay election looked like on the wire.
type petersonRun struct {
	perPhase []int // election messages sent in phase p (index p-1)
	actives  []int // actives in phase p: senders of a first message of their own
	total    int   // election messages
	coord    int   // COORDINATOR messages
	leader   string
	term     Term
}

// watchPeterson records w's election traffic by phase into run.
func watchPeterson(w *testNet, run *petersonRun) {
	seen := map[[2]uint64]bool{}
	w.observe = func(m Message) {
		switch m.Type {
		case MsgCoordinator:
			run.coord++
		case MsgElection:
			run.total++
			if m.Phase == wakeUp {
				return
			}
			p, second := unpackPhase(m.Phase)
			for len(run.perPhase) < int(p) {
				run.perPhase = append(run.perPhase, 0)
				run.actives = append(run.actives, 0)
			}
			run.perPhase[p-1]++
			key := [2]uint64{uint64(p), uint64(Tag(m.Initiator))}
			if !second && m.From == m.Initiator && !seen[key] {
				seen[key] = true
				run.actives[p-1]++
			}
		}
	}
}

// runPeterson elects on a ring whose i-th member (ID i+1) has rating
// ratings[i], started by initiators (nil: all at once).
func runPeterson(tb testing.TB, cfg Config, ratings []int64, initiators []string, rng *rand.Rand) (*testNet, petersonRun) {
	tb.Helper()
	w := newTestNet(tb, cfg, members(len(ratings), func(i int) int64 { return ratings[i] }))
	w.rng, w.fifo = rng, true
	var run petersonRun
	watchPeterson(w, &run)
	if initiators == nil {
		initiators = w.ids
	}
	w.detect(initiators...)
	run.leader, run.term = w.settle(1000)
	return w, run
}

// permutations calls fn with every permutation of 1..n (Heap's algorithm).
func permutations(n int, fn func([]int64)) {
	a := make([]int64, n)
	for i := range a {
		a[i] = int64(i + 1)
	}
	c := make([]int, n)
	fn(a)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				a[0], a[i] = a[i], a[0]
			} else {
				a[c[i]], a[i] = a[i], a[c[i]]
			}
			fn(a)
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
}

func log2(n int) int { return bits.Len(uint(n)) - 1 }

// announcement is how many COORDINATOR messages tell n live members the
// outcome: a lap round them (Textbook mode), or one to each of the others
// (View mode).
func announcement(w *testNet, n int) int {
	if w.nodes[w.ids[0]].cfg.Mode == View {
		return n - 1
	}
	return n
}

// checkPetersonRun checks one election against the active/relay ring
// (docs/algorithms.md; Dolev–Klawe–Rodeh, Peterson 1982) on a ring of n
// members all of which took part as actives from phase 1. The outcome
// costs n COORDINATOR messages as a lap (Textbook mode), n − 1 told
// directly (View mode). In View mode an election whose last two actives
// meet ends in their phase (peterson.onF): that phase is the last, with n
// to 2n messages (the winner's d has gone round; the loser's may still be
// on its way when the outcome reaches the relays that carry it).
func checkPetersonRun(t *testing.T, w *testNet, run petersonRun, n int) {
	t.Helper()
	last := len(run.perPhase)
	if last > log2(n)+1 {
		t.Fatalf("%d phases, want at most ⌊log₂ %d⌋ + 1 = %d", last, n, log2(n)+1)
	}
	lastActives := 1
	if w.nodes[w.ids[0]].cfg.Mode == View && n > 1 && run.actives[last-1] == 2 {
		lastActives = 2
	}
	for p := 1; p <= last; p++ {
		want := 2 * n
		switch {
		case p == last && lastActives == 1:
			want = n // the only active's d goes round once
		case p == last && run.perPhase[p-1] >= n:
			want = run.perPhase[p-1] // the last two actives: checked above
		}
		if run.perPhase[p-1] != want || run.perPhase[p-1] > 2*n {
			t.Fatalf("phase %d/%d: %d election messages, want %d", p, last, run.perPhase[p-1], want)
		}
	}
	if run.actives[0] != n || run.actives[last-1] != lastActives {
		t.Fatalf("actives per phase %v: want %d in phase 1 and %d in the last", run.actives, n, lastActives)
	}
	for p := 1; p < last; p++ {
		if a, s := run.actives[p-1], run.actives[p]; s > a/2 {
			t.Fatalf("phase %d: %d of %d actives survived, want at most ⌊%d/2⌋", p, s, a, a)
		}
	}
	if want := w.highestLive(); run.leader != want {
		t.Fatalf("leader %s, want the maximum %s", run.leader, want)
	}
	if want := announcement(w, n); run.coord != want {
		t.Fatalf("%d COORDINATOR messages, want %d", run.coord, want)
	}
	for _, id := range w.ids {
		if got := w.nodes[id].Phases(); got != last {
			t.Fatalf("node %s reports %d phases, want %d", id, got, last)
		}
	}
}

// Every ring order of n = 2..8 processes, all starting at once: 2n election
// messages per phase while two or more are active and n in the last phase,
// at most ⌊log₂ n⌋ + 1 phases, at most half the actives surviving each
// phase, the maximum elected and agreed by all; and the worst case over all
// orders is exactly 2n⌊log₂ n⌋ + n messages (Textbook mode). View mode
// runs the same phases, less the last one's n messages when the phase
// before it had two actives (checkPetersonRun).
func TestPetersonExhaustive(t *testing.T) {
	for n := 2; n <= 8; n++ {
		t.Run("n="+strconv.Itoa(n), func(t *testing.T) {
			worst, runs := 0, 0
			permutations(n, func(ratings []int64) {
				w, text := runPeterson(t, testCfg(Peterson, Textbook), ratings, nil, nil)
				checkPetersonRun(t, w, text, n)
				worst = max(worst, text.total)
				runs++
				w, view := runPeterson(t, testCfg(Peterson, View), ratings, nil, nil)
				checkPetersonRun(t, w, view, n)
				want := text.perPhase
				if k := len(want); k > 1 && text.actives[k-2] == 2 {
					want = want[:k-1]
				}
				// The in-order schedule delivers the last two actives'
				// messages before the outcome: the View mode's phases are
				// the Textbook mode's, the last one dropped.
				if !slices.Equal(view.perPhase, want) || view.leader != text.leader {
					t.Fatalf("%v: View mode per phase %v leader %s, want %v %s", ratings, view.perPhase, view.leader, want, text.leader)
				}
			})
			if bound := 2*n*log2(n) + n; worst != bound {
				t.Fatalf("worst case over %d orders: %d election messages, want 2n⌊log₂ n⌋ + n = %d", runs, worst, bound)
			}
		})
	}
}

// The outcome and the counts do not depend on the schedule: random
// interleavings of FIFO links give the same phases as the in-order queue,
// and a single initiator (the others wake up on its first message and join
// as actives) costs exactly what all starting at once costs.
func TestPetersonScheduleAndWakeUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		n := 2 + rng.IntN(9)
		ratings := make([]int64, n)
		for j, v := range rng.Perm(n) {
			ratings[j] = int64(v)
		}
		mode := Mode(rng.IntN(2))
		_, want := runPeterson(t, testCfg(Peterson, mode), ratings, nil, nil)
		initiator := []string{strconv.Itoa(1 + rng.IntN(n))}
		for _, tc := range []struct {
			name       string
			initiators []string
		}{{"all start", nil}, {"one initiator", initiator}} {
			w, got := runPeterson(t, testCfg(Peterson, mode), ratings, tc.initiators, rng)
			checkPetersonRun(t, w, got, n)
			if !samePhases(got, want, mode) {
				t.Fatalf("%v %s (random FIFO schedule): per phase %v actives %v, in order %v %v",
					ratings, tc.name, got.perPhase, got.actives, want.perPhase, want.actives)
			}
		}
	}
}

// samePhases reports whether runs a and b went through the same phases
// with the same actives and messages; in View mode the last phase's count
// may differ when it had two actives (checkPetersonRun).
func samePhases(a, b petersonRun, mode Mode) bool {
	if !slices.Equal(a.actives, b.actives) || len(a.perPhase) != len(b.perPhase) {
		return false
	}
	k := len(a.perPhase)
	if mode == View && k > 0 && a.actives[k-1] == 2 {
		k--
	}
	return slices.Equal(a.perPhase[:k], b.perPhase[:k])
}

// Textbook mode, dead members: each dead member costs one failed attempt
// (its predecessor skips it for the rest of the election), so the election
// costs what it costs on the ring of live members, plus one message per
// dead member; the COORDINATOR lap skips them too.
func TestPetersonTextbookSkipsDead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		n := 4 + rng.IntN(7)
		ratings := make([]int64, n)
		for j, v := range rng.Perm(n) {
			ratings[j] = int64(v)
		}
		dead := map[int]bool{}
		for k := 1 + rng.IntN(n-2); len(dead) < k; {
			dead[rng.IntN(n)] = true
		}
		var live []int64
		var deadIDs, liveIDs []string
		for j := range n {
			if dead[j] {
				deadIDs = append(deadIDs, strconv.Itoa(j+1))
			} else {
				live = append(live, ratings[j])
				liveIDs = append(liveIDs, strconv.Itoa(j+1))
			}
		}
		_, want := runPeterson(t, testCfg(Peterson, Textbook), live, nil, nil)

		w := newTestNet(t, testCfg(Peterson, Textbook), members(n, func(j int) int64 { return ratings[j] }))
		var got petersonRun
		watchPeterson(w, &got)
		w.crash(deadIDs...)
		w.detect(liveIDs...)
		got.leader, _ = w.settle(1000)
		if got.leader != w.highestLive() {
			t.Fatalf("%v dead %v: leader %s, want %s", ratings, deadIDs, got.leader, w.highestLive())
		}
		if got.total != want.total+len(deadIDs) || got.coord != want.coord {
			t.Fatalf("%v dead %v: %d election + %d coordinator messages, want %d + %d (live ring, a lap) + %d failed",
				ratings, deadIDs, got.total, got.coord, want.total, want.coord, len(deadIDs))
		}
	}
}

// Non-voters are relays from the start: they forward every message and
// are never elected, whatever their rating.
func TestPetersonNonVoters(t *testing.T) {
	ms := members(7, func(i int) int64 { return int64(i) })
	ms[6].NonVoter, ms[3].NonVoter, ms[4].NonVoter = true, true, true
	w := newTestNet(t, testCfg(Peterson, View), ms)
	var run petersonRun
	watchPeterson(w, &run)
	for _, p := range ms {
		w.detect(p.ID) // non-voters ignore it
	}
	c, _ := w.settle(100)
	if c != "6" {
		t.Fatalf("leader %s, want 6 (the highest voter)", c)
	}
	if run.actives[0] != 4 {
		t.Fatalf("%d actives in phase 1, want the 4 voters", run.actives[0])
	}
	for p, got := range run.perPhase[:len(run.perPhase)-1] {
		if got != 2*len(ms) {
			t.Fatalf("phase %d: %d messages, want %d (relays forward)", p+1, got, 2*len(ms))
		}
	}
}

// A member crashes holding an election message: nothing arrives any more,
// the election times out, restarts in a new term that pulls everyone in,
// and elects the highest live member.
func TestPetersonCrashMidElectionRestarts(t *testing.T) {
	w := newTestNet(t, testCfg(Peterson, Textbook), members(6, func(i int) int64 { return int64((i * 5) % 6) }))
	w.detect(w.ids...)
	w.deliverUntil(func(m Message) bool { return m.Type == MsgElection && m.To == "3" && m.Phase > 1 })
	w.nodes["3"].Step(w.pop())
	for _, m := range w.nodes["3"].Ready().Messages {
		if m.Type == MsgAck {
			w.queue = append(w.queue, m)
		}
	}
	w.crash("3")
	c, term := w.settle(10 * lapTicks(w.nodes["1"]))
	if c != w.highestLive() {
		t.Fatalf("leader %s, want %s", c, w.highestLive())
	}
	if w.counter(func(c *Counters) uint64 { return c.ElectionsRestarted }) == 0 || term.Epoch() < 2 {
		t.Fatalf("no restart in a new term (term %s)", term)
	}
}

// View mode: a node whose successor dies mid-election restarts at once.
func TestPetersonViewSuccessorDownRestarts(t *testing.T) {
	w := newTestNet(t, testCfg(Peterson, View), members(6, func(i int) int64 { return int64(i) }))
	w.detect(w.ids...)
	w.deliverUntil(func(m Message) bool { return m.Type == MsgElection && m.To == "4" && m.Phase > 2 })
	w.crash("4")
	if got := w.total("3").ElectionsRestarted; got != 1 {
		t.Fatalf("node 3 restarted %d elections, want 1", got)
	}
	if c, _ := w.settle(10); c != "6" {
		t.Fatalf("leader %s, want 6", c)
	}
}

func TestPackPhase(t *testing.T) {
	for p := uint32(1); p < 40; p++ {
		for _, second := range []bool{false, true} {
			if gp, gs := unpackPhase(packPhase(p, second)); gp != p || gs != second {
				t.Fatalf("unpack(pack(%d, %v)) = %d, %v", p, second, gp, gs)
			}
		}
	}
}

func BenchmarkPetersonElection(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			ratings := rng.Perm(n)
			ms := members(n, func(i int) int64 { return int64(ratings[i]) })
			var msgs, phases int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w := newTestNet(b, testCfg(Peterson, View), ms)
				b.StartTimer()
				w.detect(w.ids...)
				w.deliver()
				msgs, phases = w.sent[MsgElection], w.nodes["1"].Phases()
			}
			b.ReportMetric(float64(msgs), "msgs/op")
			b.ReportMetric(float64(phases), "phases")
		})
	}
}
