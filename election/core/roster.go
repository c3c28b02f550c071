package core

import (
	"fmt"
	"slices"

	"github.com/coordelect/coordelect/internal/grow"
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
//
// The ring is kept as parallel slices (IDs, ratings, non-voter flags):
// 25 bytes a member where a []Peer took 32 (a Peer's bool pads to 8), and
// every member of a cluster holds a roster of every other.
type Roster struct {
	ids      []string // ring order
	ratings  []int64  // ratings[i] is ids[i]'s
	nonVoter []bool   // nonVoter[i] is ids[i]'s
	index    idIndex
	byRank   []int32 // ring positions, ascending by rank
	rankPos  []int32 // ring position -> position in byRank
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
	r := &Roster{ids: make([]string, len(members)), ratings: make([]int64, len(members)),
		nonVoter: make([]bool, len(members)), index: newIDIndex(len(members))}
	for i, p := range members {
		r.ids[i], r.ratings[i], r.nonVoter[i] = p.ID, p.Rating, p.NonVoter
	}
	tags := make(map[uint32]string, len(members))
	for i, p := range members {
		if p.ID == "" {
			return nil, fmt.Errorf("core: roster member %d has an empty ID", i)
		}
		slot, at := r.index.find(r.ids, p.ID)
		if at >= 0 {
			return nil, fmt.Errorf("core: roster member %q appears twice", p.ID)
		}
		if other, clash := tags[Tag(p.ID)]; clash {
			return nil, fmt.Errorf("core: roster members %q and %q have the same tag %d (terms name their winner by tag): rename one", other, p.ID, Tag(p.ID))
		}
		tags[Tag(p.ID)] = p.ID
		r.index.slots[slot] = int32(i) + 1
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
	n := len(r.ids)
	r.byRank = make([]int32, n)
	for i := range r.byRank {
		r.byRank[i] = int32(i)
	}
	slices.SortFunc(r.byRank, func(a, b int32) int { return r.rank(a).Compare(r.rank(b)) })
	r.rankPos = make([]int32, n)
	for pos, i := range r.byRank {
		r.rankPos[i] = int32(pos)
	}
}

// Len is the number of members.
func (r *Roster) Len() int { return len(r.ids) }

// At returns the member at ring position i.
func (r *Roster) At(i int) Peer {
	return Peer{ID: r.ids[i], Rating: r.ratings[i], NonVoter: r.nonVoter[i]}
}

// rank returns the rank of the member at ring position i.
func (r *Roster) rank(i int32) Rank { return Rank{Rating: r.ratings[i], ID: r.ids[i]} }

// Index returns the ring position of id, or -1.
func (r *Roster) Index(id string) int {
	_, i := r.index.find(r.ids, id)
	return i
}

// Get returns the member with the given ID.
func (r *Roster) Get(id string) (Peer, bool) {
	if _, i := r.index.find(r.ids, id); i >= 0 {
		return r.At(i), true
	}
	return Peer{}, false
}

// Members returns a copy of the members in ring order.
func (r *Roster) Members() []Peer {
	out := make([]Peer, len(r.ids))
	for i := range out {
		out[i] = r.At(i)
	}
	return out
}

// ByRank returns the member at rank position k (0 is the lowest).
func (r *Roster) ByRank(k int) Peer { return r.At(int(r.byRank[k])) }

// RankOf returns the rank position of ring position i.
func (r *Roster) RankOf(i int) int { return int(r.rankPos[i]) }

// tagClash returns the member other than id whose Tag equals id's, or "".
func (r *Roster) tagClash(id string) string {
	t := Tag(id)
	for _, q := range r.ids {
		if q != id && Tag(q) == t {
			return q
		}
	}
	return ""
}

// clone returns a copy of r that shares nothing with it.
func (r *Roster) clone() *Roster {
	return &Roster{ids: slices.Clone(r.ids), ratings: slices.Clone(r.ratings), nonVoter: slices.Clone(r.nonVoter),
		index: r.index.clone(), byRank: slices.Clone(r.byRank), rankPos: slices.Clone(r.rankPos), nonVoters: r.nonVoters}
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
	byRank := func(a int32, rk Rank) int { return r.rank(a).Compare(rk) }
	if p.NonVoter {
		r.nonVoters++
	}
	if _, i := r.index.find(r.ids, p.ID); i >= 0 {
		old := r.At(i)
		if old.NonVoter {
			r.nonVoters--
		}
		r.ratings[i], r.nonVoter[i] = p.Rating, p.NonVoter
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
	at := slices.IndexFunc(r.ids, func(q string) bool { return CompareID(p.ID, q) < 0 })
	if at < 0 {
		at = len(r.ids)
	}
	r.ids = slices.Insert(grow.RoomForOne(r.ids), at, p.ID)
	r.ratings = slices.Insert(grow.RoomForOne(r.ratings), at, p.Rating)
	r.nonVoter = slices.Insert(grow.RoomForOne(r.nonVoter), at, p.NonVoter)
	r.index.insert(r.ids, at)
	for k, pos := range r.byRank {
		if int(pos) >= at {
			r.byRank[k] = pos + 1
		}
	}
	k, _ := slices.BinarySearchFunc(r.byRank, p.Rank(), byRank)
	r.byRank = slices.Insert(grow.RoomForOne(r.byRank), k, int32(at))
	r.reindexRanks()
}

// clip gives back the spare room set's insertions leave in the slices
// (grow.RoomForOne: up to an eighth of each), one copy of each slice.
func (r *Roster) clip() {
	r.ids, r.ratings, r.nonVoter = grow.Clip(r.ids), grow.Clip(r.ratings), grow.Clip(r.nonVoter)
	r.byRank, r.rankPos = grow.Clip(r.byRank), grow.Clip(r.rankPos)
}

// reindexRanks rebuilds rankPos from byRank.
func (r *Roster) reindexRanks() {
	if cap(r.rankPos) < len(r.byRank) {
		r.rankPos = make([]int32, len(r.byRank), cap(r.byRank))
	}
	r.rankPos = r.rankPos[:len(r.byRank)]
	for pos, i := range r.byRank {
		r.rankPos[i] = int32(pos)
	}
}

// idIndex maps a member's ID to its ring position: an open-addressing
// hash table (linear probing) of ring positions + 1 (0: an empty slot),
// whose keys are the IDs at those positions. Every member holds a roster
// of every other, so its index costs 4 bytes a slot (8 per member at
// n = 1,000, at most 3/4 of the slots used), where a map[string]int's
// 24-byte slots, which repeat the ID's header, took about 50. Members are
// never removed from a roster, so no slot is ever emptied.
//
// The hash is fixed (idHash, not seeded), so that two nodes built alike
// are alike, as the deterministic core's tests compare them. Members are
// the membership layer's admitted members; names chosen to collide would
// make look-ups slower (a longer probe), never wrong.
type idIndex struct {
	slots []int32 // length a power of two
	shift uint8   // 64 - log2(len(slots)): idHash's top bits pick the slot
}

// newIDIndex returns an empty index with room for n members.
func newIDIndex(n int) idIndex {
	size, bits := 8, uint8(3)
	for size*3 < n*4 {
		size, bits = size*2, bits+1
	}
	return idIndex{slots: make([]int32, size), shift: 64 - bits}
}

// idHash is FNV-1a of id, spread by a Fibonacci multiplication (its top
// bits are the slot).
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	return h * 0x9E3779B97F4A7C15
}

// find returns the ring position of id (-1 if absent) and its slot: the
// one that holds it, or the empty one where it would go.
func (x *idIndex) find(ids []string, id string) (slot, pos int) {
	mask := uint64(len(x.slots) - 1)
	for h := idHash(id) >> x.shift; ; h = (h + 1) & mask {
		s := x.slots[h]
		if s == 0 {
			return int(h), -1
		}
		if ids[s-1] == id {
			return int(h), int(s - 1)
		}
	}
}

// insert indexes ids[at], just inserted at ring position at: the
// members from at on moved up by one.
func (x *idIndex) insert(ids []string, at int) {
	if len(ids)*4 > len(x.slots)*3 {
		x.rebuild(ids)
		return
	}
	for k, s := range x.slots {
		if int(s) > at { // position s-1 >= at
			x.slots[k] = s + 1
		}
	}
	slot, _ := x.find(ids, ids[at]) // not found: the ID is new
	x.slots[slot] = int32(at) + 1
}

// rebuild indexes ids in a table of twice the size.
func (x *idIndex) rebuild(ids []string) {
	x.slots, x.shift = make([]int32, 2*len(x.slots)), x.shift-1
	for i, id := range ids {
		slot, _ := x.find(ids, id)
		x.slots[slot] = int32(i) + 1
	}
}

// clone returns a copy of x that shares nothing with it.
func (x idIndex) clone() idIndex {
	return idIndex{slots: slices.Clone(x.slots), shift: x.shift}
}
