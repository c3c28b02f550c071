package group

import (
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Every name elects exactly one coordinator, and under PlaceRating it is
// the top-rated member for every name (the bully rule, as with one
// election); under PlaceSpread the leaders spread.
func TestElectsOnePerName(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			c := newCluster(t, 5, func(cfg *core.Config) { cfg.Algorithm = alg })
			ns := names(20)
			c.add(Options{Placement: PlaceSpread}, ns...)
			c.settle(ns, 500)
			loads := c.loads(c.leaders(ns))
			for id, k := range loads {
				if k == 0 {
					t.Errorf("%s leads no name: %v", id, loads)
				}
			}
		})
	}
}

func newGroup(t *testing.T, n int) *Group {
	t.Helper()
	peers := make([]core.Peer, n)
	for i := range peers {
		peers[i] = core.Peer{ID: memberID(i), Rating: int64(i)}
	}
	cfg := core.DefaultConfig()
	cfg.ID, cfg.Roster, cfg.Mode = memberID(0), core.MustRoster(peers), core.View
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Add, Remove, SetCandidate and PeerCandidate refuse bad input with an
// error that names the field or the name and the value.
func TestInputErrors(t *testing.T) {
	g := newGroup(t, 3)
	if err := g.Add("a", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		err  error
		want []string
	}{
		{"empty name", g.Add("", Options{}), []string{`name ""`}},
		{"long name", g.Add(strings.Repeat("x", MaxNameLen+1), Options{}), []string{"65 bytes", "at most 64"}},
		{"control", g.Add("a\nb", Options{}), []string{`"a\nb"`, "control character U+000A"}},
		{"twice", g.Add("a", Options{}), []string{`name "a"`, "already"}},
		{"placement", g.Add("b", Options{Placement: 9}), []string{`name "b"`, "Options.Placement = placement(9)"}},
		{"quorum", g.Add("b", Options{QuorumSize: -1}), []string{"Options.QuorumSize = -1"}},
		{"remove", g.Remove("zz"), []string{`name "zz"`, "not in this group"}},
		{"candidate", g.SetCandidate("zz", false), []string{`name "zz"`}},
		{"with", g.With("zz", func(*core.Node) error { return nil }), []string{`name "zz"`}},
		{"peer self", g.PeerCandidate(memberID(0), "a", false), []string{`"m00"`, "SetCandidate"}},
		{"peer name", g.PeerCandidate(memberID(1), "", false), []string{`name ""`}},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.what)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(tc.err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.what, tc.err, w)
			}
		}
	}
	if g.Len() != 1 || g.Has("b") {
		t.Errorf("a refused Add changed the group: %v", g.Names())
	}
	cfg := g.Config()
	cfg.HeartbeatInterval = -1
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Roster") {
		t.Errorf("New with a bad core.Config: %v", err)
	}
}

// Under PlaceRating every name elects the top-rated member, as one
// election does.
func TestRatingPlacement(t *testing.T) {
	c := newCluster(t, 5, nil)
	for i, id := range c.ids {
		for _, o := range c.ids {
			c.groups[o].PeerUp(core.Peer{ID: id, Rating: int64(10 * i)})
		}
		c.groups[id].SetRating(int64(10 * i))
	}
	ns := names(10)
	c.add(Options{}, ns...)
	c.settle(ns, 200)
	for name, l := range c.leaders(ns) {
		if l != c.ids[4] {
			t.Errorf("%s is led by %s, want the top-rated %s", name, l, c.ids[4])
		}
	}
}

// A batch pair for a name the group does not host is counted and
// dropped; a batch for another member is counted as misaddressed.
func TestStepDrops(t *testing.T) {
	g := newGroup(t, 3)
	if err := g.Add("a", Options{}); err != nil {
		t.Fatal(err)
	}
	g.Ready()
	hb := core.Message{Type: core.MsgHeartbeat, From: memberID(1), To: memberID(0), Coordinator: memberID(1), Term: core.MakeTerm(1, core.Tag(memberID(1)))}
	g.Step(Batch{From: memberID(1), To: memberID(0), Pairs: []Pair{{Name: "nope", Msg: hb}, {Name: "a", Msg: hb}}})
	g.Step(Batch{From: memberID(1), To: memberID(2), Pairs: []Pair{{Name: "a", Msg: hb}}})
	hb.From = memberID(2)
	g.Step(Batch{From: memberID(1), To: memberID(0), Pairs: []Pair{{Name: "a", Msg: hb}}})
	rd := g.Ready()
	if rd.UnknownName != 1 || rd.Misaddressed != 2 {
		t.Errorf("counters %+v, want 1 unknown name and 2 misaddressed", rd.Counters)
	}
	if st := g.Node("a").Status(); st.Coordinator != memberID(1) {
		t.Errorf("the good pair was not stepped: %+v", st)
	}
	if rd := g.Ready(); rd.Counters != (Counters{}) {
		t.Errorf("counters not reset by Ready: %+v", rd.Counters)
	}
}
