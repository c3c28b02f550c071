package core

import (
	"slices"
	"strconv"
	"testing"
)

// escalation records, on a testNet, every ELECTION each node sends, in
// order, and how many times each node won.
type escalation struct {
	asked map[string][]string // sender -> recipients, in send order
	total int
}

func watchElections(w *testNet) *escalation {
	e := &escalation{asked: map[string][]string{}}
	w.observe = func(m Message) {
		if m.Type == MsgElection {
			e.asked[m.From] = append(e.asked[m.From], m.To)
			e.total++
		}
	}
	return e
}

// silentCrash stops ids without telling any view: memberlist has not
// noticed yet, so the views still hold them alive and only silence tells.
func (w *testNet) silentCrash(ids ...string) {
	for _, id := range ids {
		w.down[id] = true
	}
}

// ids returns the decimal IDs from hi down to lo.
func idsDown(hi, lo int) []string {
	var out []string
	for i := hi; i >= lo; i-- {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// settleOn ticks until every running node follows want in one term with
// no election running, and returns the term; it fails the test otherwise.
func settleOn(t *testing.T, w *testNet, want string, maxTicks int) Term {
	t.Helper()
	c, term := w.settle(maxTicks)
	if c != want {
		t.Fatalf("coordinator %s, want %s", c, want)
	}
	if won := w.counter(func(c *Counters) uint64 { return c.ElectionsWon }); won != 1 {
		t.Fatalf("%d elections won, want exactly one (by %s)", won, want)
	}
	return term
}

// n = 1,000, View mode, default timings: the coordinator and its first
// watcher crash at once (the views still hold them alive), and besides the
// surviving watchers, whose detectors fire after K·H, a hundred members
// spread over the ranks notice at the moment of the crash, as members of a
// starved process whose loops ran late do. Each of them waits for the
// first watcher (dead), asks it, and then escalates: before the bands each
// asked every member above it (49,500 ELECTIONs from this set alone); now
// each asks the top band (the eight highest live peers other than the
// silent one it asked first), where the surviving watchers answer, and
// exactly one coordinator, the highest survivor, wins in a new term.
func TestBullyEscalationBandedAt1000(t *testing.T) {
	const n = 1000
	w := newTestNet(t, viewCfg(Bully), members(n, func(i int) int64 { return int64(i + 1) }))
	w.bootstrap("1000")
	for range 40 { // settled heartbeating: every member has a promised period
		w.tick()
	}
	before := w.nodes["1"].Status().Term
	e := watchElections(w)
	w.silentCrash("1000", "999")
	var starved []string
	for i := 10; i < n; i += 10 { // 10, 20, ..., 990
		starved = append(starved, strconv.Itoa(i))
	}
	w.detect(starved...)
	w.deliver()
	term := settleOn(t, w, "998", 300)
	if term.Epoch() != before.Epoch()+1 {
		t.Fatalf("term %s after %s, want the next epoch", term, before)
	}
	band := w.nodes["1"].electionBand()
	if band != escalateBand {
		t.Fatalf("electionBand() = %d at n = %d, want %d (the cluster fans out)", band, n, escalateBand)
	}
	top := idsDown(n, n-band-1) // the silent first watcher and the top band
	for from, to := range e.asked {
		for _, id := range to {
			if !slices.Contains(top, id) {
				t.Fatalf("%s sent ELECTION to %s, outside the top band %v: %v", from, id, top, to)
			}
		}
	}
	// Every candidate asks at most the silent one and one band per
	// election it holds.
	limit := 0
	for from, to := range e.asked {
		started := w.total(from).ElectionsStarted
		if uint64(len(to)) > started*uint64(1+band) {
			t.Errorf("%s sent %d ELECTIONs in %d elections, want at most %d each: %v", from, len(to), started, 1+band, to)
		}
		limit += int(started) * (1 + band)
	}
	msgs := 0
	for typ, k := range w.sent {
		if MsgType(typ).ElectionTraffic() {
			msgs += k
		}
	}
	s := w.sent
	t.Logf("%d candidates sent %d ELECTIONs (bound %d); %d election messages in all: %d ANSWER, %d COORDINATOR, %d PREVOTE, %d PREVOTEACK",
		len(e.asked), e.total, limit, msgs, s[MsgAnswer], s[MsgCoordinator], s[MsgPreVote], s[MsgPreVoteAck])
	// The failover costs the winner's announcement to the n − 1 others,
	// the ELECTIONs, at most one reply to each (an ANSWER, or a COORDINATOR
	// naming the coordinator the asked member still hears), and the
	// pre-votes: O(n + candidates × band), not O(candidates × n).
	if extra := msgs - (n - 1) - 2*e.total - s[MsgPreVote] - s[MsgPreVoteAck]; extra > 0 {
		t.Errorf("%d election messages beyond the announcement, the ELECTIONs, one reply each and the pre-votes", extra)
	}
}

// n = 1,000, View mode: the top K + 1 = 9 members (the coordinator, all
// four watchers and four more) crash at once, the views still holding them
// alive, and every survivor notices. The top survivor asks the first
// watcher, then the band of the eight dead above it, and, nobody above it
// having answered, declares. Every other candidate asks the first watcher,
// the same dead band, and then the next band down, where the live members
// above it answer: it does not declare, and follows the top survivor,
// the one coordinator, in a new term.
func TestBullyEscalationPassesADeadBand(t *testing.T) {
	const n = 1000
	w := newTestNet(t, viewCfg(Bully), members(n, func(i int) int64 { return int64(i + 1) }))
	w.bootstrap("1000")
	for range 40 {
		w.tick()
	}
	before := w.nodes["1"].Status().Term
	e := watchElections(w)
	dead := idsDown(n, n-escalateBand) // 1000 .. 992
	w.silentCrash(dead...)
	var live []string
	for i := 1; i <= n-len(dead); i++ {
		live = append(live, strconv.Itoa(i))
	}
	w.detect(live...)
	w.deliver()
	term := settleOn(t, w, "991", 300)
	if term.Epoch() != before.Epoch()+1 {
		t.Fatalf("term %s after %s, want the next epoch", term, before)
	}
	deadBand := append([]string{"1000"}, idsDown(998, 992)...)
	want := map[string][][]string{
		// The top survivor: the first watcher, the dead band, nobody left.
		"991": {{"999"}, deadBand},
		// A member far below: the first watcher, the dead band, then the
		// next eight down, where 991 (electing) answers.
		"1": {{"999"}, deadBand, idsDown(991, 984)},
		// Just below the top survivor: the next band is the live ones
		// above it.
		"988": {{"999"}, deadBand, idsDown(991, 989)},
	}
	for id, bands := range want {
		got := e.asked[id]
		if !slices.Equal(got, slices.Concat(bands...)) {
			t.Errorf("%s asked %v, want the bands %v", id, got, bands)
		}
		if won := w.total(id).ElectionsWon; id != "991" && won != 0 {
			t.Errorf("%s won %d elections: it declared though a live member above it answered", id, won)
		}
	}
	t.Logf("%d candidates sent %d ELECTIONs (every one of them would have sent one to each member above it: %d)",
		len(e.asked), e.total, (n-len(dead))*(n-1)-((n-len(dead))*(n-len(dead)-1))/2)
}
