package group

import (
	"math"
	"slices"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// best returns the live candidate a name should elect as member id's node
// sees it: the highest rank among the live voters of its roster.
func (c *cluster) best(id, name string) string {
	n := c.groups[id].Node(name)
	r := n.Roster()
	var top core.Peer
	found := false
	for i := 0; i < r.Len(); i++ {
		p := r.At(i)
		if p.NonVoter || !n.Alive(p.ID) || c.down[p.ID] {
			continue
		}
		if !found || p.Rank().Compare(top.Rank()) > 0 {
			top, found = p, true
		}
	}
	return top.ID
}

// Spread at n = 20, E = 1,000: every name elects the candidate its
// placement ranks first, and no member leads more than 1.25 times the
// mean. A crash of the busiest member: every name it led re-elects among
// the survivors, spread over them; it comes back and, with
// PreemptAlways, takes its names back.
func TestSpreadCrashAndReturn(t *testing.T) {
	const n, e = 20, 1000
	c := newCluster(t, n, nil)
	ns := names(e)
	c.add(Options{Placement: PlaceSpread}, ns...)
	c.settle(ns, 200)
	before := c.leaders(ns)
	for _, name := range ns {
		if want := c.best(c.ids[0], name); before[name] != want {
			t.Fatalf("%s: leader %s, its placement ranks %s first", name, before[name], want)
		}
	}
	loads := c.loads(before)
	mx, mean := maxMean(loads)
	t.Logf("spread n=%d E=%d: leaders per member max %d mean %.1f (max/mean %.3f)", n, e, mx, mean, float64(mx)/mean)
	if float64(mx) > 1.25*mean {
		t.Errorf("max %d > 1.25 * mean %.1f: %v", mx, mean, loads)
	}

	// The busiest member crashes.
	victim := ""
	for _, id := range c.ids {
		if victim == "" || loads[id] > loads[victim] {
			victim = id
		}
	}
	before0 := loads[victim]
	c.crash(victim)
	took := c.settle(ns, 200)
	after := c.leaders(ns)
	gained := map[string]int{}
	for _, name := range ns {
		switch {
		case before[name] == victim:
			gained[after[name]]++
		case after[name] != before[name]:
			t.Errorf("%s moved from %s to %s though %s led it", name, before[name], after[name], before[name])
		}
	}
	loads = c.loads(after)
	mx, mean = maxMean(loads)
	gmx, gmean := maxMean(gained)
	t.Logf("crash of %s (%d names): all re-elected in %d ticks, by %d survivors (gained max %d mean %.2f); leaders per member max %d mean %.1f (max/mean %.3f)",
		victim, before0, took, len(gained), gmx, gmean, mx, mean, float64(mx)/mean)
	if len(gained) < n/2 {
		t.Errorf("%s's names went to %d survivors only: %v", victim, len(gained), gained)
	}
	if float64(mx) > 1.25*mean {
		t.Errorf("after the crash: max %d > 1.25 * mean %.1f: %v", mx, mean, loads)
	}

	// It comes back (a restart: a new group, as a new process) and takes
	// its names back by preemption.
	c.restart(victim)
	c.settle(ns, 400)
	back := c.leaders(ns)
	for _, name := range ns {
		if back[name] != before[name] {
			t.Errorf("%s: led by %s after the return, %s before the crash", name, back[name], before[name])
		}
	}
}

// restart brings a crashed member back as a fresh group with the same
// names and options as member 0's, and tells the others it is up.
func (c *cluster) restart(id string) {
	c.t.Helper()
	old := c.groups[id]
	cfg := old.Config()
	peers := make([]core.Peer, len(c.ids))
	for i, o := range c.ids {
		peers[i] = core.Peer{ID: o, Rating: 1}
	}
	cfg.Roster = core.MustRoster(peers)
	g, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	ref := c.groups[c.live()[0]]
	for _, name := range ref.Names() {
		opts, _ := ref.Options(name)
		if err := g.Add(name, opts); err != nil {
			c.t.Fatal(err)
		}
	}
	c.groups[id] = g
	delete(c.down, id)
	for _, o := range c.ids {
		if o != id {
			c.groups[o].PeerUp(core.Peer{ID: id, Rating: 1})
		}
	}
	c.deliver()
}

// With PreemptNever a member that comes back takes none of its names
// back while their new coordinators live.
func TestSpreadReturnNoPreemption(t *testing.T) {
	c := newCluster(t, 5, func(cfg *core.Config) { cfg.Preemption = core.PreemptNever })
	ns := names(50)
	c.add(Options{Placement: PlaceSpread}, ns...)
	c.settle(ns, 200)
	before := c.leaders(ns)
	victim := before[ns[0]]
	c.crash(victim)
	c.settle(ns, 200)
	during := c.leaders(ns)
	c.restart(victim)
	c.run(20 * c.h)
	after := c.leaders(ns)
	for _, name := range ns {
		if after[name] != during[name] {
			t.Errorf("%s moved from %s to %s when %s came back", name, during[name], after[name], victim)
		}
	}
}

// The spread assignment depends on the names, not on the order they were
// added in: two members that add the same names in different orders give
// every member the same rating for every name. It is load-bounded, and
// weighted: a member of weight 3 leads about three times a member of
// weight 1.
func TestSpreadAssignment(t *testing.T) {
	const n, e = 20, 1000
	peers := make([]core.Peer, n)
	for i := range peers {
		peers[i] = core.Peer{ID: memberID(i), Rating: 1}
	}
	peers[5].Rating = 3
	build := func(self int, order []string) *Group {
		cfg := core.DefaultConfig()
		cfg.ID, cfg.Roster, cfg.Mode = memberID(self), core.MustRoster(peers), core.View
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range order {
			if err := g.Add(name, Options{Placement: PlaceSpread}); err != nil {
				t.Fatal(err)
			}
		}
		g.Ready()
		return g
	}
	ns := names(e)
	rev := slices.Clone(ns)
	slices.Reverse(rev)
	a, b := build(0, ns), build(7, rev)
	first := map[string]int{}
	for _, name := range ns {
		ra, rb := a.Node(name).Roster(), b.Node(name).Roster()
		top := core.Peer{}
		for i := 0; i < ra.Len(); i++ {
			p := ra.At(i)
			q, _ := rb.Get(p.ID)
			if p.Rating != q.Rating {
				t.Fatalf("%s: %s rates %s %d, %s rates it %d", name, a.ID(), p.ID, p.Rating, b.ID(), q.Rating)
			}
			if p.Rank().Compare(top.Rank()) > 0 {
				top = p
			}
		}
		first[top.ID]++
	}
	share := float64(e) / float64(n+2) // the weights add up to 22
	for id, k := range first {
		w := 1.0
		if id == memberID(5) {
			w = 3
		}
		bound := math.Ceil(1.15 * share * w)
		if float64(k) > bound || float64(k) < share*w/2 {
			t.Errorf("%s (weight %.0f) ranks first for %d names, want at most %.0f and about %.0f", id, w, k, bound, share*w)
		}
	}
	t.Logf("first places: weight 3 member %d; weight 1 members %v", first[memberID(5)], first)
}

// A crash that no membership layer reports: every name the crashed
// member led is found by its followers' heartbeat detectors, in the same
// few ticks for every name (their heartbeats came in the same batches),
// and re-elects among the survivors. Its watchers are its successors
// (doc.go, "Placement"): only they give up on its names, each on all the
// names it watches in one tick, and the names go to them.
func TestSilentCrash(t *testing.T) {
	const n, e = 20, 1000
	c := newCluster(t, n, nil)
	ns := names(e)
	c.addStaggered(Options{Placement: PlaceSpread}, 7, ns...)
	c.settle(ns, 300)
	c.run(4 * c.h)
	before := c.leaders(ns)
	victim := before[ns[0]]
	k := uint64(c.groups[victim].Config().HeartbeatMisses)
	gaveUp := map[string]map[int]int{} // member -> tick -> names whose detector gave up on victim
	c.onUpdate = func(member string, u Update) {
		if before[u.Name] == victim && u.Ready.HeartbeatMisses >= k && u.Ready.ElectionsStarted > 0 && u.Ready.Cause == core.CauseSilence {
			if gaveUp[member] == nil {
				gaveUp[member] = map[int]int{}
			}
			gaveUp[member][c.now]++
		}
	}
	c.down[victim] = true // no PeerDown: the detectors must find it
	first, last := -1, -1
	for t0 := c.now; ; {
		c.tick()
		agreed := 0
		for _, name := range ns {
			if before[name] != victim {
				continue
			}
			if _, err := c.leader(name); err == nil {
				agreed++
			}
		}
		if agreed > 0 && first < 0 {
			first = c.now - t0
		}
		if agreed == c.loads(before)[victim] {
			last = c.now - t0
			break
		}
		if c.now-t0 > 200 {
			t.Fatalf("%d of %s's names re-elected after 200 ticks", agreed, victim)
		}
	}
	t.Logf("%s's %d names: the first agreed on a new leader %d ticks after the crash, the last %d (H = %d, K = 3)",
		victim, c.loads(before)[victim], first, last, c.h)
	if last-first > c.h {
		t.Errorf("the names re-elected over %d ticks, more than a heartbeat interval", last-first)
	}
	c.onUpdate = nil
	g := c.groups[c.ids[0]]
	succ := map[string]bool{}
	for _, i := range g.succ[g.memberIdx[victim]] {
		succ[g.members[i].id] = true
	}
	if len(gaveUp) == 0 {
		t.Fatalf("no detector gave up on %s: the test tests nothing", victim)
	}
	for member, ticks := range gaveUp {
		if len(ticks) != 1 {
			t.Errorf("%s gave up on %s's names at %d different ticks: %v", member, victim, len(ticks), ticks)
		}
		if !succ[member] {
			t.Errorf("%s, not a successor of %s, gave up on its names", member, victim)
		}
	}
	for _, name := range ns {
		if l, _ := c.leader(name); before[name] == victim && !succ[l] {
			t.Errorf("%s went to %s, not a successor of %s", name, l, victim)
		}
	}
}

// A member that stands for no spread name (heavy, but it abstains from
// them all: an older build that runs none) takes no share of the load
// bound: the others share the names as if it were not there.
func TestSpreadBoundWithoutAbstainers(t *testing.T) {
	const n, e = 20, 1000
	peers := make([]core.Peer, n)
	for i := range peers {
		peers[i] = core.Peer{ID: memberID(i), Rating: 1}
	}
	peers[4].Rating = 20
	cfg := core.DefaultConfig()
	cfg.ID, cfg.Roster, cfg.Mode = memberID(0), core.MustRoster(peers), core.View
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := names(e)
	for _, name := range ns {
		if err := g.Add(name, Options{Placement: PlaceSpread}); err != nil {
			t.Fatal(err)
		}
		if err := g.PeerCandidate(memberID(4), name, false); err != nil {
			t.Fatal(err)
		}
	}
	g.Skip(cfg.HeartbeatInterval) // the assignment's next tick (settlePlace)
	g.Ready()
	first := map[string]int{}
	for _, name := range ns {
		r := g.Node(name).Roster()
		top := core.Peer{}
		for i := 0; i < r.Len(); i++ {
			if p := r.At(i); !p.NonVoter && p.Rank().Compare(top.Rank()) > 0 {
				top = p
			}
		}
		first[top.ID]++
	}
	bound := int(math.Ceil(1.15 * e / (n - 1)))
	for id, k := range first {
		if id == memberID(4) || k > bound {
			t.Errorf("%s ranks first for %d names, want at most %d (and the abstainer none): %v", id, k, bound, first)
		}
	}
}

// Under Spread the group's rating of a member for a name is the one its
// node keeps: a message that carries another (one the sender computed
// before its placement moved, still in flight) does not replace it, or
// the members' views would disagree on who ranks first for good.
func TestSpreadRatingOutlivesAStaleMessage(t *testing.T) {
	c := newCluster(t, 3, nil)
	ns := names(4)
	c.add(Options{Placement: PlaceSpread}, ns...)
	c.settle(ns, 300)
	g := c.groups[c.ids[0]]
	from := c.ids[1]
	want, _ := g.Node(ns[0]).Roster().Get(from)
	g.Step(Batch{From: from, To: g.ID(), Pairs: []Pair{{Name: ns[0],
		Msg: core.Message{Type: core.MsgPreVote, From: from, To: g.ID(), Rating: want.Rating + 12345}}}})
	if got, _ := g.Node(ns[0]).Roster().Get(from); got.Rating != want.Rating {
		t.Errorf("%s's rating for %s: %d after a message that carried %d, want the placement's %d",
			from, ns[0], got.Rating, want.Rating+12345, want.Rating)
	}
}

// A member adds its names one at a time, each read back at once (as the
// runtime's Election does): only the first add works the assignment out;
// the others are built with their plain ratings and told the assignment
// at the next one, before their start-up delay ends. Every name then
// elects what a batch add elects, with as many elections.
func TestSpreadAddsOneByOne(t *testing.T) {
	const n, e = 20, 1000
	ns := names(e)
	run := func(oneByOne bool) (map[string]string, uint64) {
		c := newCluster(t, n, nil)
		c.counting = true
		if !oneByOne {
			c.add(Options{Placement: PlaceSpread}, ns...)
		} else {
			for _, id := range c.ids {
				g := c.groups[id]
				for _, name := range ns {
					if err := g.Add(name, Options{Placement: PlaceSpread}); err != nil {
						t.Fatal(err)
					}
					if g.Node(name) == nil {
						t.Fatalf("%s: %s not built", id, name)
					}
				}
			}
			c.deliver()
		}
		c.settle(ns, 200)
		return c.leaders(ns), c.elections
	}
	batch, batchElections := run(false)
	single, singleElections := run(true)
	for _, name := range ns {
		if single[name] != batch[name] {
			t.Errorf("%s: led by %s when added one by one, by %s when added at once", name, single[name], batch[name])
		}
	}
	t.Logf("elections started: %d added at once, %d one by one", batchElections, singleElections)
	if singleElections != batchElections {
		t.Errorf("%d elections added one by one, %d added at once", singleElections, batchElections)
	}
}
