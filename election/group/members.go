package group

import (
	"fmt"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/grow"
)

// The membership, shared by every name: each change is given to the
// group once and reaches every name's node in the same call.

// PeerUp reports a member alive (joined, restarted, or back after a
// partition) with its rating (its own: the group rates it per name) and
// NonVoter (it stands for no name). Every name's node hears it, rated for
// that name.
func (g *Group) PeerUp(p core.Peer) {
	if p.ID == "" || p.ID == g.cfg.ID {
		return
	}
	g.settle()
	i, known := g.memberIdx[p.ID]
	rerated := false
	switch {
	case !known && g.tagClash(p.ID):
		return // a term names its winner by tag: the core refuses such a member too
	case !known:
		i = int32(g.addMember(p))
		g.spreadChanged()
	case g.members[i].rating != p.Rating || g.members[i].nonVoter != p.NonVoter:
		m := &g.members[i]
		rerated = m.rating != p.Rating
		m.rating, m.nonVoter = p.Rating, p.NonVoter
		g.version++
		g.spreadChanged()
	}
	if !g.members[i].alive {
		g.members[i].alive = true
		g.version++
	}
	for _, e := range g.list {
		q := g.peer(e, int(i))
		if rerated {
			e.node.PeerRating(q.ID, q.Rating) // first: it may preempt
		}
		e.node.PeerUp(q)
		g.touch(e)
	}
}

// tagClash reports whether a member other than id has id's core.Tag.
func (g *Group) tagClash(id string) bool {
	t := core.Tag(id)
	for i := range g.members {
		if g.members[i].id != id && core.Tag(g.members[i].id) == t {
			return true
		}
	}
	return false
}

// PeerDown reports a member dead. Every name's node hears it in this
// one call: every name it led starts its election now.
func (g *Group) PeerDown(id string) {
	i, known := g.memberIdx[id]
	if !known || int(i) == selfIndex || !g.members[i].alive {
		return
	}
	g.settle()
	g.members[i].alive = false
	g.version++
	for _, e := range g.list {
		e.node.PeerDown(id)
		g.touch(e)
	}
}

// PeerRating reports a member's new rating (its own: the group rates it
// per name).
func (g *Group) PeerRating(id string, rating int64) {
	i, known := g.memberIdx[id]
	if !known || int(i) == selfIndex || g.members[i].rating == rating {
		return
	}
	g.settle()
	g.members[i].rating = rating
	g.version++
	g.spreadChanged()
	for _, e := range g.list {
		e.node.PeerRating(id, g.rating(e, int(i)))
		g.touch(e)
	}
}

// SetRating changes this member's own rating: every name rates it anew
// (a name it now outranks the coordinator of, by the preemption policy,
// elects it).
func (g *Group) SetRating(rating int64) {
	if g.members[selfIndex].rating == rating {
		return
	}
	g.settle()
	g.members[selfIndex].rating = rating
	g.version++
	g.spreadChanged()
	for _, e := range g.list {
		e.node.SetRating(g.rating(e, selfIndex))
		g.touch(e)
	}
}

// Rating returns this member's own rating.
func (g *Group) Rating() int64 { return g.members[selfIndex].rating }

// PeerCandidate says whether member id stands for name (default: it
// does, unless it stands for no name). Members learn each other's
// candidacies from the membership layer, as they learn ratings; every
// member must be told the same, or their nodes disagree on who may lead
// the name. It may come before the member or the name is known; a name
// added later, and a member that comes up later, take it into account.
func (g *Group) PeerCandidate(id, name string, stand bool) error {
	if id == g.cfg.ID {
		return fmt.Errorf("group: PeerCandidate(%q, %q): this member's own candidacy is SetCandidate's", id, name)
	}
	if err := ValidateName(name); err != nil {
		return err
	}
	set := g.abstain[name]
	if !stand == set[id] {
		return nil
	}
	g.settle()
	if stand {
		delete(set, id)
		if len(set) == 0 {
			delete(g.abstain, name)
			g.shrinkAbstain()
		}
	} else {
		if set == nil {
			set = make(map[string]bool)
			g.abstain[name] = set
			g.abstainPeak = max(g.abstainPeak, len(g.abstain))
		}
		set[id] = true
	}
	e := g.names[name]
	if e == nil {
		return nil
	}
	if e.opts.Placement == PlaceSpread {
		g.placeDirty = true
	}
	if i, known := g.memberIdx[id]; known && g.members[i].alive {
		e.node.PeerUp(g.peer(e, int(i))) // a dead member's flag is set when it comes back
		g.touch(e)
	}
	return nil
}

// shrinkAbstain makes g.abstain anew once it holds less than an eighth
// of the names it held at most: a map keeps the room it grew to, and
// while the members start, each name's map lists the members whose
// candidacies are not known yet (the names added before their
// statements came).
func (g *Group) shrinkAbstain() {
	g.abstain = grow.ShrinkMap(g.abstain, &g.abstainPeak)
}

// spreadChanged notes a change to what the spread assignment depends
// on.
func (g *Group) spreadChanged() {
	if g.spread > 0 {
		g.placeDirty = true
	}
}

// Member returns the index of member id among the members the group
// knows (this member is 0; indices are stable, from 0 to Members()-1,
// since members are never forgotten), and false for a member it does not
// know.
func (g *Group) Member(id string) (int, bool) {
	i, ok := g.memberIdx[id]
	return int(i), ok
}

// MemberID returns the ID of the member of index i (Member).
func (g *Group) MemberID(i int) string { return g.members[i].id }

// Members returns how many members the group knows, itself included.
func (g *Group) Members() int { return len(g.members) }
