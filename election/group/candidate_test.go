package group

import (
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// candidacy makes member id stand for name or not, on itself
// (SetCandidate) and on every other member (PeerCandidate), in one
// step, as gossip that reached everyone would.
func (c *cluster) candidacy(id, name string, stand bool) {
	c.t.Helper()
	for _, o := range c.ids {
		var err error
		if o == id {
			err = c.groups[o].SetCandidate(name, stand)
		} else {
			err = c.groups[o].PeerCandidate(id, name, stand)
		}
		if err != nil {
			c.t.Fatal(err)
		}
	}
	c.deliver()
}

// A member that stops standing for a name it leads hands it off: the
// name's next candidate leads it at once, with no election timeout, and
// the member follows it as a non-voter. When it stands again it takes
// the name back (PreemptAlways). Under PlaceRating, a member that does
// not stand for one name still leads the others.
func TestStopStanding(t *testing.T) {
	t.Run("rating", func(t *testing.T) {
		c := newCluster(t, 3, nil)
		for i, id := range c.ids {
			for _, o := range c.ids {
				c.groups[o].PeerUp(core.Peer{ID: id, Rating: int64(i)})
			}
			c.groups[id].SetRating(int64(i))
		}
		c.add(Options{}, "x", "y")
		top := c.ids[2]
		c.candidacy(top, "x", false)
		c.settle([]string{"x", "y"}, 100)
		if l, _ := c.leader("x"); l != c.ids[1] {
			t.Errorf("x led by %s after its top member stopped standing, want %s", l, c.ids[1])
		}
		if l, _ := c.leader("y"); l != top {
			t.Errorf("y led by %s, want %s", l, top)
		}
	})
	t.Run("spread", func(t *testing.T) {
		c := newCluster(t, 5, nil)
		ns := names(40)
		c.add(Options{Placement: PlaceSpread}, ns...)
		c.settle(ns, 200)
		before := c.leaders(ns)
		x := ns[7]
		l := before[x]
		c.candidacy(l, x, false)
		took := c.settle(ns, 200)
		after := c.leaders(ns)
		if after[x] == l {
			t.Fatalf("%s still led by %s, which stopped standing", x, l)
		}
		if want := c.best(c.ids[0], x); after[x] != want {
			t.Errorf("%s led by %s, its placement ranks %s first now", x, after[x], want)
		}
		if p, _ := c.groups[l].Node(x).Roster().Get(l); !p.NonVoter {
			t.Errorf("%s's node of %s does not see itself as a non-voter", l, x)
		}
		moved := 0
		for _, name := range ns {
			if name != x && after[name] != before[name] {
				moved++
			}
		}
		t.Logf("%s: %s -> %s in %d ticks; %d other names moved (the load bound's first places)", x, l, after[x], took, moved)
		c.candidacy(l, x, true)
		c.settle(ns, 200)
		if back, _ := c.leader(x); back != l {
			t.Errorf("%s led by %s after %s stands again, want %s", x, back, l, l)
		}
	})
}

// A candidacy told before the name exists, and one told while the member
// is down, hold when the name is added and when the member comes back.
func TestCandidacyBeforeName(t *testing.T) {
	c := newCluster(t, 3, nil)
	top := c.ids[2]
	for i, id := range c.ids {
		for _, o := range c.ids {
			c.groups[o].PeerUp(core.Peer{ID: id, Rating: int64(i)})
		}
		c.groups[id].SetRating(int64(i))
	}
	for _, o := range c.ids[:2] {
		if err := c.groups[o].PeerCandidate(top, "x", false); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range c.ids {
		if err := c.groups[o].Add("x", Options{Abstain: o == top}); err != nil {
			t.Fatal(err)
		}
	}
	c.settle([]string{"x"}, 100)
	if l, _ := c.leader("x"); l != c.ids[1] {
		t.Errorf("x led by %s, want %s (%s abstains)", l, c.ids[1], top)
	}
}
