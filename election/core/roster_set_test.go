package core

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestRosterSetMatchesNewRoster changes rosters in place (set: members
// joining in random order, ratings changing; now and then clip) and checks each result
// against NewRoster's of the same ring, field by field (the ID index by
// its answers: its slots depend on the order the IDs came in).
func TestRosterSetMatchesNewRoster(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	for trial := range 50 {
		r := MustRoster([]Peer{{ID: "self", Rating: 5}})
		shared := r
		own := r.clone()
		ids := []string{"self"}
		for step := range 200 {
			var p Peer
			if len(ids) > 1 && rng.IntN(3) == 0 {
				p = Peer{ID: ids[rng.IntN(len(ids))], Rating: int64(rng.IntN(20)), NonVoter: rng.IntN(4) == 0}
			} else {
				id := strconv.Itoa(rng.IntN(100000))
				if rng.IntN(3) == 0 {
					id = "n" + id
				}
				if own.Index(id) < 0 && own.tagClash(id) != "" {
					continue
				}
				if own.Index(id) < 0 {
					ids = append(ids, id)
				}
				p = Peer{ID: id, Rating: int64(rng.IntN(20))}
			}
			own.set(p)
			if rng.IntN(8) == 0 { // a settled view gives back its spare room
				own.clip()
				if spare := own.spare(); spare != 0 {
					t.Fatalf("trial %d step %d: %d places to spare after clip", trial, step, spare)
				}
			}
			want := MustRoster(own.Members())
			if !sameRoster(own, want) {
				t.Fatalf("trial %d step %d: set(%v) gave\n%+v\nwant\n%+v", trial, step, p, own, want)
			}
		}
		if shared.Len() != 1 || shared.At(0) != (Peer{ID: "self", Rating: 5}) {
			t.Fatalf("the roster cloned from changed: %+v", shared)
		}
	}
}

// spare counts the unused places of r's slices.
func (r *Roster) spare() int {
	flags := r.flags()
	return cap(r.ratings) - len(r.ratings) + cap(flags) - len(flags) + cap(r.byRank) - len(r.byRank)
}

// The node's own roster gives back its spare room; a shared one is not
// touched.
func TestNodeClipRoster(t *testing.T) {
	shared := MustRoster([]Peer{{ID: "a", Rating: 1}, {ID: "b", Rating: 2}})
	n, err := NewNode(Config{ID: "a", Roster: shared, Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	n.ClipRoster()
	if n.Roster() != shared {
		t.Fatal("ClipRoster copied a shared roster")
	}
	for i := range 40 {
		n.PeerUp(Peer{ID: "m" + strconv.Itoa(i), Rating: int64(10 + i)})
	}
	r := n.Roster()
	if r == shared || r.spare() == 0 {
		t.Fatalf("after 40 joins: own roster %t, %d places to spare; want an own roster with room", r != shared, r.spare())
	}
	before := r.Members()
	n.ClipRoster()
	if r.spare() != 0 || !reflect.DeepEqual(r.Members(), before) {
		t.Fatalf("after ClipRoster: %d places to spare, members changed %t", r.spare(), !reflect.DeepEqual(r.Members(), before))
	}
}

// sameRoster reports whether a and b hold the same members in the same
// order and ranks, and index them alike: every member at its position,
// in tables of one size with one slot used per member.
func sameRoster(a, b *Roster) bool {
	if !reflect.DeepEqual(a.Members(), b.Members()) || !reflect.DeepEqual(a.byRank, b.byRank) || a.hasNonVoters() != b.hasNonVoters() ||
		len(a.m.index.slots) != len(b.m.index.slots) || a.m.index.shift != b.m.index.shift {
		return false
	}
	for _, r := range []*Roster{a, b} {
		used := 0
		for _, s := range r.m.index.slots {
			if s != 0 {
				used++
			}
		}
		if used != r.Len() || r.Index("absent") != -1 {
			return false
		}
		for i, p := range r.Members() {
			if r.Index(p.ID) != i || r.RankOf(i) != slices.Index(r.byRank, int32(i)) {
				return false
			}
		}
	}
	return true
}

// BenchmarkRosterRating1000 is a member's new rating (PeerRating, or a
// PeerUp that changes it) in a node's own roster of 1,000: it moves the
// member across the ranks in place and must not allocate.
func BenchmarkRosterRating1000(b *testing.B) {
	var ps []Peer
	for i := 2; i <= 1000; i++ {
		ps = append(ps, Peer{ID: strconv.Itoa(i), Rating: int64(i)})
	}
	var v view
	v.r = MustRoster(ps)
	v.update(Peer{ID: "1", Rating: 1})
	b.ReportAllocs()
	k := int64(0)
	for b.Loop() {
		k++
		v.update(Peer{ID: "1", Rating: 1 + k%2000}) // its rank moves across the roster
	}
}

// Rosters of the same members share their member list: one rated anew
// (WithRatings), and the copies that take the same newcomer in, which
// take the list the first of them built; each still equals NewRoster's
// of its ring, and the roster they came from is unchanged.
func TestRostersShareTheirMemberList(t *testing.T) {
	base := MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "3", Rating: 3}, {ID: "5", Rating: 5}})
	spread, err := base.WithRatings([]int64{30, 10, 20}, []bool{false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	want := MustRoster([]Peer{{ID: "1", Rating: 30}, {ID: "3", Rating: 10, NonVoter: true}, {ID: "5", Rating: 20}})
	if spread.m != base.m || !sameRoster(spread, want) {
		t.Fatalf("WithRatings: shares the member list %t, roster %+v, want %+v", spread.m == base.m, spread.Members(), want.Members())
	}
	if _, err := base.WithRatings([]int64{1}, []bool{false}); err == nil {
		t.Error("WithRatings took 1 rating for 3 members")
	}
	a, b, c := base.clone(), spread.clone(), base.clone()
	a.set(Peer{ID: "4", Rating: 4})
	b.set(Peer{ID: "4", Rating: 40})
	c.set(Peer{ID: "2", Rating: 2})
	if a.m != b.m || a.m == c.m || base.m.ids[1] != "3" || base.Len() != 3 {
		t.Fatalf("after taking 4 in: shared %t; taking 2 in shares it %t; the base has %v", a.m == b.m, a.m == c.m, base.Members())
	}
	for _, tc := range []struct{ got, want *Roster }{
		{a, MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "3", Rating: 3}, {ID: "4", Rating: 4}, {ID: "5", Rating: 5}})},
		{b, MustRoster([]Peer{{ID: "1", Rating: 30}, {ID: "3", Rating: 10, NonVoter: true}, {ID: "4", Rating: 40}, {ID: "5", Rating: 20}})},
		{c, MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}, {ID: "3", Rating: 3}, {ID: "5", Rating: 5}})},
	} {
		if !sameRoster(tc.got, tc.want) {
			t.Errorf("got %+v, want %+v", tc.got.Members(), tc.want.Members())
		}
	}
}
