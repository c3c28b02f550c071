package core

import (
	"fmt"
	"slices"
)

// Roster is a member list: ring (clockwise) order, ranks and an index.
// Nodes of a simulated cluster share one Roster, which nothing changes, so
// a 10,000-node cluster keeps one copy; a node that learns a change makes
// its own copy.
//
// A node's own copy (the view's, once it has changed anything) is updated
// in place (set): a member joining a cluster of n costs O(n) moves and no
// allocation, where building a new roster cost O(n log n) and 180 KB of
// garbage at n = 1,000, for each of the n members every member learns.
// Node.Roster's result is therefore valid until the next call into the
// node; the node's Ready says when its view changed (ViewChanged).
type Roster struct {
	ring    []Peer
	index   map[string]int
	byRank  []int32 // ring positions, ascending by rank
	rankPos []int32 // ring position -> position in byRank
	// nonVoters counts the members that never stand: while there are
	// none, the live voters above a rank are counted in O(log n + dead)
	// (bully's liveVotersAbove), not by a walk.
	nonVoters int
}

// NewRoster builds a roster from members in ring order. IDs must be unique
// and non-empty, and no two may share a Tag: a term names its winner by
// tag, so two members with one tag could both win the same term (IDs "0"
// and "00" are the same number, for instance).
func NewRoster(members []Peer) (*Roster, error) {
	r := &Roster{ring: slices.Clone(members), index: make(map[string]int, len(members))}
	tags := make(map[uint32]string, len(members))
	for i, p := range r.ring {
		if p.ID == "" {
			return nil, fmt.Errorf("core: roster member %d has an empty ID", i)
		}
		if _, dup := r.index[p.ID]; dup {
			return nil, fmt.Errorf("core: roster member %q appears twice", p.ID)
		}
		if other, clash := tags[Tag(p.ID)]; clash {
			return nil, fmt.Errorf("core: roster members %q and %q have the same tag %d (terms name their winner by tag): rename one", other, p.ID, Tag(p.ID))
		}
		tags[Tag(p.ID)] = p.ID
		r.index[p.ID] = i
		if p.NonVoter {
			r.nonVoters++
		}
	}
	r.sortRanks()
	return r, nil
}

// MustRoster is NewRoster for fixed inputs in tests and examples; it panics
// on an invalid member list.
func MustRoster(members []Peer) *Roster {
	r, err := NewRoster(members)
	if err != nil {
		panic(err)
	}
	return r
}

func (r *Roster) sortRanks() {
	n := len(r.ring)
	r.byRank = make([]int32, n)
	for i := range r.byRank {
		r.byRank[i] = int32(i)
	}
	slices.SortFunc(r.byRank, func(a, b int32) int { return r.ring[a].Rank().Compare(r.ring[b].Rank()) })
	r.rankPos = make([]int32, n)
	for pos, i := range r.byRank {
		r.rankPos[i] = int32(pos)
	}
}

// Len is the number of members.
func (r *Roster) Len() int { return len(r.ring) }

// At returns the member at ring position i.
func (r *Roster) At(i int) Peer { return r.ring[i] }

// Index returns the ring position of id, or -1.
func (r *Roster) Index(id string) int {
	if i, ok := r.index[id]; ok {
		return i
	}
	return -1
}

// Get returns the member with the given ID.
func (r *Roster) Get(id string) (Peer, bool) {
	if i, ok := r.index[id]; ok {
		return r.ring[i], true
	}
	return Peer{}, false
}

// Members returns a copy of the members in ring order.
func (r *Roster) Members() []Peer { return slices.Clone(r.ring) }

// ByRank returns the member at rank position k (0 is the lowest).
func (r *Roster) ByRank(k int) Peer { return r.ring[r.byRank[k]] }

// RankOf returns the rank position of ring position i.
func (r *Roster) RankOf(i int) int { return int(r.rankPos[i]) }

// tagClash returns the member other than id whose Tag equals id's, or "".
func (r *Roster) tagClash(id string) string {
	t := Tag(id)
	for _, q := range r.ring {
		if q.ID != id && Tag(q.ID) == t {
			return q.ID
		}
	}
	return ""
}

// clone returns a copy of r that shares nothing with it.
func (r *Roster) clone() *Roster {
	out := &Roster{ring: slices.Clone(r.ring), index: make(map[string]int, len(r.ring)),
		byRank: slices.Clone(r.byRank), rankPos: slices.Clone(r.rankPos), nonVoters: r.nonVoters}
	for id, i := range r.index {
		out.index[id] = i
	}
	return out
}

// with returns a copy of r in which p is replaced or, if new, inserted
// before the first member with a greater ID (see set).
func (r *Roster) with(p Peer) *Roster {
	out := r.clone()
	out.set(p)
	return out
}

// set replaces p in r or, if new, inserts it before the first member with
// a greater ID; p's tag must not clash (see tagClash). A roster grown from
// membership events (the runtime starts with itself alone) is therefore in
// ID order on every node, whatever order the events came in: the rings
// need one order. The result equals NewRoster's of the changed ring. Only
// a node's own copy may be changed (view.update).
func (r *Roster) set(p Peer) {
	byRank := func(a int32, rk Rank) int { return r.ring[a].Rank().Compare(rk) }
	if p.NonVoter {
		r.nonVoters++
	}
	if i, ok := r.index[p.ID]; ok {
		old := r.ring[i]
		if old.NonVoter {
			r.nonVoters--
		}
		r.ring[i] = p
		if old.Rating == p.Rating {
			return
		}
		// Move i to its new rank position.
		r.byRank = slices.Delete(r.byRank, int(r.rankPos[i]), int(r.rankPos[i])+1)
		k, _ := slices.BinarySearchFunc(r.byRank, p.Rank(), byRank)
		r.byRank = slices.Insert(r.byRank, k, int32(i))
		r.reindexRanks()
		return
	}
	at := slices.IndexFunc(r.ring, func(q Peer) bool { return CompareID(p.ID, q.ID) < 0 })
	if at < 0 {
		at = len(r.ring)
	}
	r.ring = slices.Insert(r.ring, at, p)
	for j := at; j < len(r.ring); j++ {
		r.index[r.ring[j].ID] = j
	}
	for k, pos := range r.byRank {
		if int(pos) >= at {
			r.byRank[k] = pos + 1
		}
	}
	k, _ := slices.BinarySearchFunc(r.byRank, p.Rank(), byRank)
	r.byRank = slices.Insert(r.byRank, k, int32(at))
	r.reindexRanks()
}

// reindexRanks rebuilds rankPos from byRank.
func (r *Roster) reindexRanks() {
	r.rankPos = slices.Grow(r.rankPos[:0], len(r.byRank))[:len(r.byRank)]
	for pos, i := range r.byRank {
		r.rankPos[i] = int32(pos)
	}
}
