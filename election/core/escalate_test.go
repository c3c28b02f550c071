package core

import (
	"math/rand/v2"
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
// starved process whose loops ran late do. Before the bands each of them
// waited for the first watcher (dead), asked it and then every member above
// it (49,500 ELECTIONs from this set alone); with the bands, the first
// watcher and the top band (the eight highest live peers other than the
// silent one it asked first), where the surviving watchers answer (891).
// Now each waits T longer for each band of 8 above it beyond the first
// (bully.deferral): 990 and 980 ask the first watcher and the top band,
// 970 the first watcher alone, before the surviving watchers have elected;
// the other 96 ask nobody. Exactly one coordinator, the highest survivor,
// wins in a new term.
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
	// A starved member with m live voters above it waits H + T + RoundTrip
	// and T for each band beyond the first; the surviving watchers detect
	// after K·H, wait H + T + RoundTrip and win at once (askPair): those
	// from 960 down (40 or more above, 5 bands) ask nobody.
	for _, id := range starved {
		if i, _ := strconv.Atoi(id); i <= 960 && len(e.asked[id]) > 0 {
			t.Errorf("starved %s asked %v: the surviving watchers' announcement should have ended its wait first", id, e.asked[id])
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
// having answered, declares. Every other survivor has more above it than
// its first question and the first band reach, and waits T longer for
// each band beyond (bully.deferral): the next eight (983 – 990) ask the
// first watcher and the dead band, the eight below them only the first
// watcher, before the top survivor's COORDINATOR ends their elections;
// the rest ask nobody. Before the deferral each of them asked the first
// watcher, the same dead band and the next band down: 16,811 ELECTIONs
// (docs/performance.md); now 89.
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
		// Just below it, T later: the same, and 991's COORDINATOR comes
		// before the next band (991 – 989) would be asked.
		"988": {{"999"}, deadBand},
		// Another T later: the first watcher only.
		"975": {{"999"}},
		// Far below: nothing.
		"1": nil,
	}
	for id, bands := range want {
		if got := e.asked[id]; !slices.Equal(got, slices.Concat(bands...)) {
			t.Errorf("%s asked %v, want the bands %v", id, got, bands)
		}
		if won := w.total(id).ElectionsWon; id != "991" && won != 0 {
			t.Errorf("%s won %d elections: it declared though a live member above it answered", id, won)
		}
	}
	for id, to := range e.asked {
		if i, _ := strconv.Atoi(id); i < 975 {
			t.Errorf("%s asked %v: 991's announcement should have ended its wait first", id, to)
		}
	}
	t.Logf("%d candidates sent %d ELECTIONs (every one of them would have sent one to each member above it: %d)",
		len(e.asked), e.total, (n-len(dead))*(n-1)-((n-len(dead))*(n-len(dead)-1))/2)
}

// The rule of bully.deferral, at n = 1,000 (View mode, default timings):
// the top 17 crash, the views still holding them alive, and every survivor
// notices at once, as members of a starved process do. A member with m
// live voters above it in its view sends nothing for H + T + RoundTrip
// and, when its first question and the first band would not reach all m
// (m > 1 + 8), T for each further band more: the top survivor, 983 (17
// above: two bands), asks at H + T + RoundTrip + T, passes
// the two dead bands and wins 3 T and a pre-vote later. Each band of
// members further down starts T after the one above it: the next two
// (967 – 982) ask the dead first watcher and the first dead band, the
// third (959 – 966) only the first watcher, before the top survivor's
// COORDINATOR ends their elections; everyone further down asks nobody.
// Before the deferral every survivor asked 17 members (16,600 ELECTIONs);
// here 25 candidates ask 233.
func TestBullyDeepMemberDefers(t *testing.T) {
	const n, crashed = 1000, 17
	cfg := viewCfg(Bully)
	w := newTestNet(t, cfg, members(n, func(i int) int64 { return int64(i + 1) }))
	w.bootstrap("1000")
	for range 40 {
		w.tick()
	}
	cfg.setDefaults()
	h, T, rt := cfg.HeartbeatInterval, cfg.AnswerTimeout, cfg.RoundTrip
	// The wait for a member with `above` voters above it, by the rule.
	wait := func(above int) int {
		bands := (above - 1 + escalateBand - 1) / escalateBand
		if bands <= 1 {
			return h + T + rt
		}
		return h + T + rt + (bands-1)*T
	}
	for id, above := range map[string]int{"991": 9, "990": 10, "983": 17, "982": 18, "1": 999} {
		if got, want := h+T+rt+w.nodes[id].alg.(*bully).deferral(), wait(above); got != want {
			t.Errorf("%s (%d above): waits %d ticks, want %d", id, above, got, want)
		}
	}
	e := watchElections(w)
	tick, first := 1, map[string]int{}
	w.observe = func(m Message) {
		if m.Type == MsgElection {
			e.asked[m.From] = append(e.asked[m.From], m.To)
			e.total++
			if _, ok := first[m.From]; !ok {
				first[m.From] = tick
			}
		}
	}
	w.silentCrash(idsDown(n, n-crashed+1)...)
	var live []string
	for i := 1; i <= n-crashed; i++ {
		live = append(live, strconv.Itoa(i))
	}
	w.detect(live...)
	w.deliver()
	top := strconv.Itoa(n - crashed)
	for ; tick < 600; tick++ {
		w.tick()
		if c, _, ok := w.agreed(); ok && c == top {
			break
		}
	}
	settleOn(t, w, top, 0)
	for id, at := range first {
		i, _ := strconv.Atoi(id)
		if want := wait(n - i); at != want {
			t.Errorf("%s (%d above) first asked at tick %d, want %d", id, n-i, at, want)
		}
	}
	deadBand := append([]string{"1000"}, idsDown(998, 992)...)
	if got, want := e.asked[top], slices.Concat([]string{"999"}, deadBand, idsDown(991, 984)); !slices.Equal(got, want) {
		t.Errorf("%s asked %v, want %v", top, got, want)
	}
	// The next band down: its first question, then the two dead bands.
	if got, want := e.asked["975"], slices.Concat([]string{"999"}, deadBand, idsDown(991, 984)); !slices.Equal(got, want) {
		t.Errorf("975 asked %v, want %v", got, want)
	}
	if first[top] != wait(crashed) {
		t.Errorf("the top survivor %s asked first at tick %d, want %d", top, first[top], wait(crashed))
	}
	// The winner announces in the tick the cluster agrees (no delays
	// here), after that tick's timeouts: a member whose wait ends by then
	// asks its first question and a band per T that passed; one whose
	// wait ends later asks nobody.
	for _, id := range live {
		i, _ := strconv.Atoi(id)
		asked, ends := e.asked[id], wait(n-i)
		switch {
		case ends > tick && len(asked) > 0:
			t.Errorf("%s (waits until tick %d) asked %v: the announcement at tick %d should have ended its wait first", id, ends, asked, tick)
		case ends <= tick && id != top && len(asked) == 0:
			t.Errorf("%s (waits until tick %d) asked nobody before the announcement at tick %d", id, ends, tick)
		case ends <= tick && id != top && len(asked) > 1+escalateBand*((tick-ends)/T):
			t.Errorf("%s (waits until tick %d) asked %v, more than its first question and a band per T", id, ends, asked)
		}
	}
	t.Logf("%d candidates sent %d ELECTIONs; the top survivor asked at tick %d and the cluster agreed at tick %d",
		len(e.asked), e.total, first[top], tick)
}

// A surviving watcher whose senior and the suspect are all that is above
// it (n = 1,000, the coordinator and its first watcher crashed, the views
// holding both alive): when its wait for the senior runs out it asks both
// at once and wins on the pre-vote's grant, in the same tick on this
// network without delays, instead of asking the senior, waiting T, asking
// the coordinator and waiting T again. At n = 5 (no fan-out) the
// survivor keeps the text's sequence: the senior, T, the coordinator, T.
func TestBullyWatcherAsksSeniorAndSuspectTogether(t *testing.T) {
	for _, c := range []struct {
		n      int
		bands  [][]string // the survivor's ELECTIONs, tick by tick
		gapsOf int        // ticks between them
	}{
		{1000, [][]string{{"1000", "999"}}, 0},
		{5, [][]string{{"4"}, {"5"}}, 4},
	} {
		cfg := viewCfg(Bully)
		w := newTestNet(t, cfg, members(c.n, func(i int) int64 { return int64(i + 1) }))
		top := strconv.Itoa(c.n)
		w.bootstrap(top)
		for range 40 {
			w.tick()
		}
		survivor, senior := strconv.Itoa(c.n-2), strconv.Itoa(c.n-1)
		var asked [][]string
		var at []int
		tick, won := 0, -1
		w.observe = func(m Message) {
			if m.Type != MsgElection || m.From != survivor {
				return
			}
			if len(at) == 0 || at[len(at)-1] != tick {
				asked, at = append(asked, nil), append(at, tick)
			}
			asked[len(asked)-1] = append(asked[len(asked)-1], m.To)
		}
		w.silentCrash(top, senior)
		for ; tick < 300 && won < 0; tick++ {
			w.tick()
			if w.nodes[survivor].Status().State == StateCoordinator {
				won = tick
			}
		}
		settleOn(t, w, survivor, 50)
		if !slices.EqualFunc(asked, c.bands, slices.Equal) {
			t.Errorf("n=%d: %s asked %v, want %v", c.n, survivor, asked, c.bands)
			continue
		}
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] != c.gapsOf {
				t.Errorf("n=%d: questions at ticks %v, want %d apart", c.n, at, c.gapsOf)
			}
		}
		last := at[len(at)-1]
		if c.n == 1000 && won != last {
			t.Errorf("n=%d: asked at tick %d, won at %d: want the same tick (the grant, not T, decides)", c.n, last, won)
		}
		if def := DefaultConfig(); c.n == 5 && won < last+def.AnswerTimeout {
			t.Errorf("n=%d: asked the coordinator at tick %d, won at %d: want T later", c.n, last, won)
		}
		t.Logf("n=%d: %s asked %v at ticks %v and won at tick %d", c.n, survivor, asked, at, won)
	}
}

// liveVotersAbove counts what bully.higher visits, without the walk,
// whatever the view holds dead and whoever is excluded; with non-voters in
// the roster it walks. Checked against the walk on every member of
// rosters with dead members, an excluded member and non-voters.
func TestLiveVotersAboveMatchesTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	for round := range 40 {
		const n = 60
		nonVoters := round%2 == 1
		cfg := viewCfg(Bully)
		w := newTestNet(t, cfg, members(n, func(i int) int64 { return int64(rng.IntN(20)) }))
		for _, nd := range w.nodes {
			for range 8 {
				nd.view.down(strconv.Itoa(1 + rng.IntN(n)))
			}
			if nonVoters {
				nd.view.update(Peer{ID: strconv.Itoa(1 + rng.IntN(n)), Rating: int64(rng.IntN(20)), NonVoter: true})
			}
			b := nd.alg.(*bully)
			b.excluded = strconv.Itoa(1 + rng.IntN(n))
			walk := 0
			b.higher(func(Peer) bool { walk++; return true })
			if got := b.liveVotersAbove(); got != walk {
				t.Fatalf("round %d, node %s: liveVotersAbove %d, the walk %d", round, nd.self.ID, got, walk)
			}
		}
	}
}
