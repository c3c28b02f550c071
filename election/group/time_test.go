package group

import (
	"reflect"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// leadAll makes g's member coordinator of names in term 1.
func leadAll(t *testing.T, g *Group, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := g.Add(name, Options{}); err != nil {
			t.Fatal(err)
		}
		_ = g.With(name, func(n *core.Node) error { n.Bootstrap(g.ID(), core.MakeTerm(1, core.Tag(g.ID()))); return nil })
	}
	g.Ready()
}

// Skip(k) then Ready does what k Ticks then Ready do: the same pairs go
// out and every name ends in the same state.
func TestSkipIsTicks(t *testing.T) {
	a, b := newGroup(t, 4), newGroup(t, 4)
	leadAll(t, a, "x", "y")
	leadAll(t, b, "x", "y")
	a.Tick()
	a.Ready()
	leadAll(t, a, "z")
	b.Skip(1)
	b.Ready()
	leadAll(t, b, "z")
	pairs := func(rd *Ready, into map[string][]core.Message) {
		for _, bt := range rd.Batches {
			for _, p := range bt.Pairs {
				into[p.Name] = append(into[p.Name], p.Msg)
			}
		}
	}
	ta, tb := map[string][]core.Message{}, map[string][]core.Message{}
	for range 23 {
		a.Tick()
	}
	pairs(a.Ready(), ta)
	b.Skip(23)
	pairs(b.Ready(), tb)
	if a.Now() != b.Now() {
		t.Fatalf("clocks %d and %d", a.Now(), b.Now())
	}
	for _, name := range []string{"x", "y", "z"} {
		if !reflect.DeepEqual(ta[name], tb[name]) {
			t.Errorf("%s: ticking sent %d messages, skipping %d", name, len(ta[name]), len(tb[name]))
		}
		if sa, sb := a.Node(name).Status(), b.Node(name).Status(); sa != sb {
			t.Errorf("%s: %+v after ticks, %+v after Skip", name, sa, sb)
		}
	}
}

// NextDeadline is the earliest of the names' deadlines and, while
// heartbeats wait, the next round instant; the ticks before it send
// nothing.
func TestNextDeadline(t *testing.T) {
	g := newGroup(t, 3)
	leadAll(t, g, "a")
	g.Tick()
	g.Ready()
	g.Tick()
	g.Ready()
	leadAll(t, g, "b") // its rounds fall at 7, 12, ...: the routine ones wait for 10, 15, ...
	for range 40 {
		d := g.NextDeadline()
		if d <= g.Now() {
			t.Fatalf("NextDeadline %d at %d", d, g.Now())
		}
		for g.Now() < d-1 {
			g.Tick()
			if rd := g.Ready(); len(rd.Batches) > 0 {
				t.Fatalf("tick %d, before the deadline %d, sent %d batches", g.Now(), d, len(rd.Batches))
			}
		}
		g.Tick()
		g.Ready()
	}
}

// Removing a name this member leads hands it to the next candidate at
// once (no election timeout), and the name's other members go on.
func TestRemoveHandsOff(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i, id := range c.ids {
		for _, o := range c.ids {
			c.groups[o].PeerUp(core.Peer{ID: id, Rating: int64(i)})
		}
		c.groups[id].SetRating(int64(i))
	}
	c.add(Options{}, "x")
	c.settle([]string{"x"}, 100)
	top := c.ids[2]
	if err := c.groups[top].Remove("x"); err != nil {
		t.Fatal(err)
	}
	for _, o := range c.ids[:2] {
		if err := c.groups[o].PeerCandidate(top, "x", false); err != nil {
			t.Fatal(err)
		}
	}
	c.deliver()
	if c.groups[top].Has("x") || c.groups[top].Len() != 0 {
		t.Fatalf("x still in %s's group", top)
	}
	for _, o := range c.ids[:2] {
		if st := c.groups[o].Node("x").Status(); st.Coordinator != c.ids[1] {
			t.Errorf("%s: x's coordinator %q right after the removal, want %s", o, st.Coordinator, c.ids[1])
		}
	}
}

// NextTimer is NextDeadline while no name's loop ran late; after a late
// jump (Advance) Health is above 0 and NextTimer is no sooner than
// NextDeadline, which also counts the health score's fall.
func TestNextTimerAndHealth(t *testing.T) {
	g := newGroup(t, 3)
	leadAll(t, g, "a", "b")
	for range 7 {
		g.Tick()
		g.Ready()
		if g.Health() != 0 || g.NextTimer() != g.NextDeadline() {
			t.Fatalf("tick %d: health %d, NextTimer %d, NextDeadline %d", g.Now(), g.Health(), g.NextTimer(), g.NextDeadline())
		}
	}
	g.Advance(3 * g.Config().HeartbeatInterval)
	g.Ready()
	if g.Health() == 0 {
		t.Fatal("health 0 after a late jump")
	}
	if nt, nd := g.NextTimer(), g.NextDeadline(); nt < nd || nt <= g.Now() {
		t.Fatalf("at %d: NextTimer %d, NextDeadline %d", g.Now(), nt, nd)
	}
}
