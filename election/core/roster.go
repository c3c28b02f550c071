package core

import (
	"fmt"
	"slices"
	"sync/atomic"
	"weak"

	"github.com/coordelect/coordelect/internal/grow"
)

// Roster is a member list: ring (clockwise) order, ratings, ranks and an
// index. Nodes of a simulated cluster share one Roster, which nothing
// changes, so a 10,000-node cluster keeps one copy; a node that learns a
// change makes its own copy.
//
// The IDs in ring order and their index are a memberList, which the
// rosters of one set of members share: the copies the nodes of a cluster
// make, and the rosters of a member's named elections (WithRatings),
// which rate the same members each its own way. A roster of its own thus
// costs its ratings, non-voter flags (none while every member stands)
// and rank order: 12 or 13 bytes a member.
//
// A node's own copy (the view's, once it has changed anything) is updated
// in place (set): a new rating moves one member across the ranks with no
// allocation, and a member joining a cluster of n costs O(n) moves and a
// member list with the newcomer, which the first roster to take it in
// builds and the others of its member list find (memberList.with).
// Node.Roster's result is therefore valid until the next call into the
// node; the node's Ready says when its view changed (ViewChanged).
type Roster struct {
	m       *memberList
	ratings []int64 // ratings[i] is m.ids[i]'s
	// (*nonVoter)[i] is m.ids[i]'s flag; nil while no member is a
	// non-voter (a cluster whose members all stand: then the live voters
	// above a rank are counted in O(log n + dead), bully's
	// liveVotersAbove, not by a walk). A pointer, so that a Roster is 64
	// bytes: a member keeps one per name, and most have no non-voter.
	nonVoter *[]bool
	byRank   []int32 // ring positions, ascending by rank
}

// memberList is the IDs of a roster in ring order and their index. It
// never changes once built, and is shared by every roster of those
// members in that order.
type memberList struct {
	ids   []string
	index idIndex
	// next is this list with one member more, added (at its place in the
	// ring: set), as the last roster of this list to take a member in
	// built it: another roster of this list that takes the same member
	// in shares it instead of building its own, while some roster holds
	// it. The pointer is weak, so a list keeps none of its successors:
	// a roster that never changes (the Config's, of the member alone)
	// would otherwise keep every list its member's view grew through,
	// O(n²) bytes.
	next  atomic.Pointer[weak.Pointer[memberList]]
	added string
}

// NewRoster builds a roster from members in ring order. IDs must be unique
// and non-empty, and no two may share a Tag: a term names its winner by
// tag, so two members with one tag could both win the same term (IDs "0"
// and "00" are the same number, for instance).
func NewRoster(members []Peer) (*Roster, error) {
	ids := make([]string, len(members))
	r := &Roster{ratings: make([]int64, len(members))}
	nonVoter := make([]bool, len(members))
	for i, p := range members {
		ids[i], r.ratings[i], nonVoter[i] = p.ID, p.Rating, p.NonVoter
	}
	r.keepFlags(nonVoter)
	tags := make(map[uint32]string, len(members))
	for i, p := range members {
		if p.ID == "" {
			return nil, fmt.Errorf("core: roster member %d has an empty ID", i)
		}
		if other, clash := tags[Tag(p.ID)]; clash {
			if other == p.ID {
				return nil, fmt.Errorf("core: roster member %q appears twice", p.ID)
			}
			return nil, fmt.Errorf("core: roster members %q and %q have the same tag %d (terms name their winner by tag): rename one", other, p.ID, Tag(p.ID))
		}
		tags[Tag(p.ID)] = p.ID
	}
	r.m = newMemberList(ids)
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

// WithRatings returns a roster of r's members in r's ring order in which
// the member at ring position i has ratings[i] and is a non-voter if
// nonVoter[i]: the roster of another election among the same members (a
// member's named elections, each rating the members its own way). It
// shares r's member list, so it costs only its ratings, flags and ranks.
// ratings and nonVoter must have r.Len() elements; they are copied.
func (r *Roster) WithRatings(ratings []int64, nonVoter []bool) (*Roster, error) {
	if len(ratings) != r.Len() || len(nonVoter) != r.Len() {
		return nil, fmt.Errorf("core: WithRatings: %d ratings and %d non-voter flags for %d members", len(ratings), len(nonVoter), r.Len())
	}
	out := &Roster{m: r.m, ratings: slices.Clone(ratings)}
	out.keepFlags(slices.Clone(someTrue(nonVoter)))
	out.sortRanks()
	return out, nil
}

// flags returns the non-voter flags, nil if no member is a non-voter.
func (r *Roster) flags() []bool {
	if r.nonVoter == nil {
		return nil
	}
	return *r.nonVoter
}

// keepFlags takes flags as the non-voter flags (not copied), or none if
// no flag is set.
func (r *Roster) keepFlags(flags []bool) {
	r.nonVoter = nil
	if flags = someTrue(flags); flags != nil {
		r.nonVoter = &flags
	}
}

// someTrue returns flags, or nil if none is set.
func someTrue(flags []bool) []bool {
	if slices.Contains(flags, true) {
		return flags
	}
	return nil
}

// newMemberList indexes ids, which are unique.
func newMemberList(ids []string) *memberList {
	l := &memberList{ids: ids, index: newIDIndex(len(ids))}
	for i, id := range ids {
		slot, _ := l.index.find(ids, id)
		l.index.slots[slot] = int32(i) + 1
	}
	return l
}

// with returns the list with id inserted at ring position at: next if the
// last roster to take a member in from l took id in, else a new list,
// which becomes next.
func (l *memberList) with(id string, at int) *memberList {
	if w := l.next.Load(); w != nil {
		if nx := w.Value(); nx != nil && nx.added == id {
			return nx
		}
	}
	ids := make([]string, len(l.ids)+1)
	copy(ids, l.ids[:at])
	ids[at] = id
	copy(ids[at+1:], l.ids[at:])
	out := newMemberList(ids)
	out.added = id
	w := weak.Make(out)
	l.next.Store(&w)
	return out
}

func (r *Roster) sortRanks() {
	r.byRank = make([]int32, len(r.ratings))
	for i := range r.byRank {
		r.byRank[i] = int32(i)
	}
	slices.SortFunc(r.byRank, func(a, b int32) int { return r.rank(a).Compare(r.rank(b)) })
}

// Len is the number of members.
func (r *Roster) Len() int { return len(r.ratings) }

// At returns the member at ring position i.
func (r *Roster) At(i int) Peer {
	return Peer{ID: r.m.ids[i], Rating: r.ratings[i], NonVoter: r.nonVoter != nil && (*r.nonVoter)[i]}
}

// hasNonVoters reports whether a member never stands.
func (r *Roster) hasNonVoters() bool { return r.nonVoter != nil }

// rank returns the rank of the member at ring position i.
func (r *Roster) rank(i int32) Rank { return Rank{Rating: r.ratings[i], ID: r.m.ids[i]} }

// Index returns the ring position of id, or -1.
func (r *Roster) Index(id string) int {
	_, i := r.m.index.find(r.m.ids, id)
	return i
}

// Get returns the member with the given ID.
func (r *Roster) Get(id string) (Peer, bool) {
	if i := r.Index(id); i >= 0 {
		return r.At(i), true
	}
	return Peer{}, false
}

// Members returns a copy of the members in ring order.
func (r *Roster) Members() []Peer {
	out := make([]Peer, r.Len())
	for i := range out {
		out[i] = r.At(i)
	}
	return out
}

// ByRank returns the member at rank position k (0 is the lowest).
func (r *Roster) ByRank(k int) Peer { return r.At(int(r.byRank[k])) }

// RankOf returns the rank position of ring position i: O(log n), by its
// rank (ranks are unique, as IDs are).
func (r *Roster) RankOf(i int) int {
	k, _ := slices.BinarySearchFunc(r.byRank, r.rank(int32(i)), r.compareRank)
	return k
}

// compareRank compares the rank of ring position a with rk.
func (r *Roster) compareRank(a int32, rk Rank) int { return r.rank(a).Compare(rk) }

// tagClash returns the member other than id whose Tag equals id's, or "".
func (r *Roster) tagClash(id string) string {
	t := Tag(id)
	for _, q := range r.m.ids {
		if q != id && Tag(q) == t {
			return q
		}
	}
	return ""
}

// clone returns a copy of r that shares nothing with it but its member
// list, which never changes.
func (r *Roster) clone() *Roster {
	out := &Roster{m: r.m, ratings: slices.Clone(r.ratings), byRank: slices.Clone(r.byRank)}
	out.keepFlags(slices.Clone(r.flags()))
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
	if i := r.Index(p.ID); i >= 0 {
		r.setNonVoter(i, p.NonVoter)
		if r.ratings[i] == p.Rating {
			return
		}
		// Move i to its new rank position.
		k := r.RankOf(i)
		r.byRank = slices.Delete(r.byRank, k, k+1)
		r.ratings[i] = p.Rating
		k, _ = slices.BinarySearchFunc(r.byRank, p.Rank(), r.compareRank)
		r.byRank = slices.Insert(r.byRank, k, int32(i))
		return
	}
	at := slices.IndexFunc(r.m.ids, func(q string) bool { return CompareID(p.ID, q) < 0 })
	if at < 0 {
		at = r.Len()
	}
	r.m = r.m.with(p.ID, at)
	r.ratings = slices.Insert(grow.RoomForOne(r.ratings), at, p.Rating)
	if r.nonVoter != nil {
		*r.nonVoter = slices.Insert(grow.RoomForOne(*r.nonVoter), at, false)
	}
	r.setNonVoter(at, p.NonVoter)
	for k, pos := range r.byRank {
		if int(pos) >= at {
			r.byRank[k] = pos + 1
		}
	}
	k, _ := slices.BinarySearchFunc(r.byRank, p.Rank(), r.compareRank)
	r.byRank = slices.Insert(grow.RoomForOne(r.byRank), k, int32(at))
}

// setNonVoter sets the flag of ring position i, making the flags on the
// first non-voter and dropping them with the last.
func (r *Roster) setNonVoter(i int, v bool) {
	switch {
	case r.nonVoter != nil:
		(*r.nonVoter)[i] = v
		if someTrue(*r.nonVoter) == nil {
			r.nonVoter = nil
		}
	case v:
		flags := make([]bool, r.Len(), cap(r.ratings))
		flags[i] = true
		r.nonVoter = &flags
	}
}

// clip gives back the spare room set's insertions leave in the slices
// (grow.RoomForOne: up to an eighth of each), one copy of each slice.
func (r *Roster) clip() {
	r.ratings, r.byRank = grow.Clip(r.ratings), grow.Clip(r.byRank)
	if r.nonVoter != nil {
		*r.nonVoter = grow.Clip(*r.nonVoter)
	}
}

// idIndex maps a member's ID to its ring position: an open-addressing
// hash table (linear probing) of ring positions + 1 (0: an empty slot),
// whose keys are the IDs at those positions. Every member holds a roster
// of every other, so its index costs 4 bytes a slot (8 per member at
// n = 1,000, at most 3/4 of the slots used), where a map[string]int's
// 24-byte slots, which repeat the ID's header, took about 50. It is built
// once per member list, which never changes.
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
