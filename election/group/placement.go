package group

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"

	"github.com/coordelect/coordelect/election/core"
)

// Placement says how a name ranks its candidates: the core elects the
// live candidate of highest rating, so a placement is a rule that gives
// each member a rating per name.
type Placement uint8

// The placements.
const (
	// PlaceRating: a member's rating for the name is its own rating, as
	// with a single election (the bully rule): every name elects the
	// same member while it lives.
	PlaceRating Placement = iota
	// PlaceSpread: members are ranked per name by weighted rendezvous
	// hashing of the name and the member's ID, weighted by the member's
	// rating, so that leaders spread over the members in proportion to
	// their weights (SpreadRating). The first place is load-bounded, and
	// the next ones are the first's successors, over which a failed
	// member's names spread: see the package documentation, "Placement".
	PlaceSpread
	numPlacements
)

var placementNames = [...]string{"rating", "spread"}

// String returns the placement's name: rating or spread.
func (p Placement) String() string {
	if p < numPlacements {
		return placementNames[p]
	}
	return "placement(" + strconv.Itoa(int(p)) + ")"
}

// spreadHash is the rendezvous hash of a name and a member: FNV-1a (64
// bits) of the name's bytes, a zero byte and the member's ID, then
// splitmix64's finalizer, so that names and IDs that differ in one
// character land far apart. Stable across processes, builds and
// platforms.
func spreadHash(name, id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	h *= prime // the zero byte between them
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// log2Q32 returns log2(x) for x >= 1 in fixed point with 32 fractional
// bits, rounded down: integer arithmetic only, so every machine computes
// the same bits (math.Log is assembly on some platforms and pure Go on
// others, and the compiler may fuse floating-point operations).
func log2Q32(x uint64) uint64 {
	k := uint64(bits.Len64(x) - 1)
	m := x << (63 - k) // the mantissa in [1, 2), 63 fractional bits
	r := k << 32
	for i := 31; i >= 0; i-- {
		hi, lo := bits.Mul64(m, m) // m² with 126 fractional bits
		if hi>>63 == 1 {           // m² >= 2: the bit is 1, halve it
			r |= 1 << i
			m = hi
		} else {
			m = hi<<1 | lo>>63
		}
	}
	return r
}

// MaxWeight bounds a member's weight under Spread.
const MaxWeight = 1 << 20

// Weight is a member's weight under Spread: its rating, at least 1 and
// at most MaxWeight.
func Weight(rating int64) int64 { return min(max(rating, 1), MaxWeight) }

// spreadScale sets the resolution of spread ratings: a member of weight
// w whose hash gives -log2(u) = 1 rates w << 16.
const spreadScale = 48

// spreadBand splits the spread ratings in three bands: SpreadRating is
// below it; the successors of the member a name is assigned to rate
// spreadBand more, and that member (the load-bounded first place)
// 2*spreadBand more. Ratings stay below 2^46, seven bytes as a zig-zag
// varint on the wire.
const spreadBand = 1 << 44

// SpreadRating is a member's rendezvous rating for a name under Spread:
// weighted highest random weight, score = w / -ln(u) with u in (0, 1)
// drawn from a stable hash of the name and the ID (Schindelhauer and
// Schomaker, "Weighted distributed hash tables", SPAA 2005: each member
// ranks first for its weight's share of the names, and when a member
// fails each of its names goes to the member that ranks second for it,
// which is each survivor in proportion to its weight). It is computed in
// integer arithmetic: floor(w * 2^48 / L), where L is -log2(u) in fixed
// point with 32 fractional bits (ln and log2 differ by a constant factor,
// which does not change the order), capped below 2^44; w is
// Weight(rating). It depends on the name, the ID and the rating alone,
// so every member computes the same value. Spread ranks by it within
// each band (spreadBand): the first place, its successors, the others.
func SpreadRating(name, id string, rating int64) int64 {
	w := uint64(Weight(rating))
	h := spreadHash(name, id) | 1           // u = h / 2^64, in (0, 1)
	l := 64<<32 - log2Q32(h)                // -log2(u) in Q32.32, at least 1
	hi, lo := bits.Mul64(w, 1<<spreadScale) // w * 2^48
	if hi >= l {
		return spreadBand - 1
	}
	q, _ := bits.Div64(hi, lo, l)
	return int64(min(q, spreadBand-1))
}

// Spread's load bound: no member is assigned more than
// ceil(spreadLoad * its weight's share of the spread names) first places.
const (
	spreadLoadNum = 23 // spreadLoad = 23/20 = 1.15
	spreadLoadDen = 20
)

// place assigns every spread name its first place: the candidate of
// highest SpreadRating among those still below their load bound, names
// taken in the order of their hash (consistent hashing with bounded
// loads, Mirrokni, Thorup and Zadimoghaddam, SODA 2018, with rendezvous
// ranks). The bound counts every known member that stands for some
// spread name (dead ones too: a crash must not move the names of the
// living), so
// the assignment depends on the spread names, the members, their
// ratings and their candidacies, all of which every member learns alike;
// it changes when they change, never on a crash or a recovery.
func (g *Group) place() {
	g.placeDirty, g.placeAt = false, g.now+g.cfg.HeartbeatInterval
	names := g.scratchNames[:0]
	for _, e := range g.list {
		if e.opts.Placement == PlaceSpread {
			names = append(names, e)
		}
	}
	g.scratchNames = names
	if len(names) == 0 {
		return
	}
	slices.SortFunc(names, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.name, b.name))
	})
	load := slices.Grow(g.scratchLoad[:0], len(g.members))[:len(g.members)]
	clear(load)
	g.scratchLoad = load
	// The bound shares the names among the members that stand for some
	// spread name (stand): a member that stands for none (a member of an
	// older build, one that abstains from them all) takes no share, and
	// is nobody's successor.
	stand := slices.Grow(g.scratchStand[:0], len(g.members))[:len(g.members)]
	clear(stand)
	g.scratchStand = stand
	for _, e := range names {
		abstain := g.abstain[e.name]
		for i := range g.members {
			if !stand[i] && g.stands(e, i, abstain) {
				stand[i] = true
			}
		}
	}
	var total uint64
	for i := range g.members {
		if stand[i] {
			total += uint64(Weight(g.members[i].rating))
		}
	}
	if total == 0 {
		total = 1 // none stands: every name's first place is nobody's
	}
	bound := func(i int) int {
		w := uint64(Weight(g.members[i].rating))
		return int((spreadLoadNum*uint64(len(names))*w + spreadLoadDen*total - 1) / (spreadLoadDen * total))
	}
	best := slices.Grow(g.scratchBest[:0], len(names))[:len(names)]
	g.scratchBest = best
	for k, e := range names {
		best[k] = -1
		bestFull := -1
		var bestR, bestFullR int64
		abstain := g.abstain[e.name]
		for i := range g.members {
			m := &g.members[i]
			if !g.stands(e, i, abstain) {
				continue
			}
			r := SpreadRating(e.name, m.id, m.rating)
			better := func(j int, rj int64) bool {
				return j < 0 || core.Rank{Rating: r, ID: m.id}.Compare(core.Rank{Rating: rj, ID: g.members[j].id}) > 0
			}
			if load[i] < bound(i) && better(int(best[k]), bestR) {
				best[k], bestR = int32(i), r
			}
			if better(bestFull, bestFullR) {
				bestFull, bestFullR = i, r
			}
		}
		if best[k] < 0 {
			best[k] = int32(bestFull) // every candidate is at its bound, or none stands
		}
		if best[k] >= 0 {
			load[best[k]]++
		}
	}
	old := g.succ
	g.succ = g.successors(load, stand)
	for k, e := range names {
		g.reassign(e, best[k], old)
	}
}

// successors returns the successors of every member with a load (load[i]
// names assigned): the members that take the places after the first of
// its names, the spreadSuccessors*HeartbeatWatchers that rank highest for
// it by weighted rendezvous hashing of the pair of IDs, among the members
// that stand for some spread name (stand), dead ones too (a crash moves
// no rating). They depend only on the members, their ratings and
// candidacies.
func (g *Group) successors(load []int, stand []bool) [][]int32 {
	succ := make([][]int32, len(g.members))
	width := spreadSuccessors * g.cfg.HeartbeatWatchers
	top := make([]core.Rank, 0, width+1) // the best so far, best first
	idx := make([]int32, 0, width+1)
	for a := range g.members {
		if load[a] == 0 {
			continue
		}
		key := "\x00" + g.members[a].id // no name starts with a control character
		top, idx = top[:0], idx[:0]
		for i := range g.members {
			m := &g.members[i]
			if i == a || !stand[i] {
				continue
			}
			r := core.Rank{Rating: SpreadRating(key, m.id, m.rating), ID: m.id}
			k := len(top)
			for k > 0 && r.Compare(top[k-1]) > 0 {
				k--
			}
			if k == width {
				continue
			}
			top, idx = slices.Insert(top, k, r), slices.Insert(idx, k, int32(i))
			if len(top) > width {
				top, idx = top[:width], idx[:width]
			}
		}
		succ[a] = slices.Clone(idx)
	}
	return succ
}

// stands reports whether member i stands for e's name: it stands for
// names at all (not NonVoter), has not said it does not stand for this
// one (abstain: PeerCandidate), and, for this member, e's Options allow.
func (g *Group) stands(e *entry, i int, abstain map[string]bool) bool {
	m := &g.members[i]
	switch {
	case m.nonVoter || abstain[m.id]:
		return false
	case i == selfIndex:
		return !e.opts.Abstain
	}
	return true
}

// rating is member i's rating for e's name under e's placement.
func (g *Group) rating(e *entry, i int) int64 {
	m := &g.members[i]
	if e.opts.Placement != PlaceSpread {
		return m.rating
	}
	r := SpreadRating(e.name, m.id, m.rating)
	switch {
	case e.assigned == int32(i):
		r += 2 * spreadBand
	case e.assigned >= 0 && slices.Contains(g.succ[e.assigned], int32(i)):
		r += spreadBand
	}
	return r
}

// reassign gives e's first place to member i (-1: nobody), given the
// successors before this assignment (old), and tells e's node the new
// ratings of the members whose band changed: the first places and the
// successors, before and after.
func (g *Group) reassign(e *entry, i int32, old [][]int32) {
	was := e.assigned
	var before []int32
	if was >= 0 && int(was) < len(old) {
		before = old[was]
	}
	after := []int32(nil)
	if i >= 0 {
		after = g.succ[i]
	}
	if was == i && slices.Equal(before, after) {
		return
	}
	e.assigned = i
	if e.node == nil {
		return // built with the ratings of the assignment
	}
	for _, j := range [2]int32{was, i} {
		if j >= 0 {
			g.pushRating(e, int(j))
		}
	}
	for _, list := range [2][]int32{before, after} {
		for _, j := range list {
			g.pushRating(e, int(j))
		}
	}
}

// pushRating tells e's node member i's current rating for the name.
func (g *Group) pushRating(e *entry, i int) {
	r := g.rating(e, i)
	if i == selfIndex {
		if e.node.Status().Rating != r {
			e.node.SetRating(r)
			g.touch(e)
		}
		return
	}
	if p, ok := e.node.Roster().Get(g.members[i].id); ok && p.Rating != r {
		e.node.PeerRating(p.ID, r)
		g.touch(e)
	}
}

// spreadSuccessors sets how many successors a member has under Spread,
// in multiples of HeartbeatWatchers (W): 3W, over which a failed member's
// names spread. A member heartbeats every round the watchers of the names
// it leads, which are among its successors (the package documentation,
// "Placement"), so this bounds how many members it heartbeats every
// round, whatever the number of names.
const spreadSuccessors = 3
