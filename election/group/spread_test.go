package group

import (
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
