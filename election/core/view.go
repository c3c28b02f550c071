package core

// The view: what a node knows of the members (the roster, shared until the
// node learns a change) and, in View mode, which of them are dead. The
// Node's queries of it (Alive, liveVoters, learnRating) are in node.go.

// view is the node's membership knowledge: a shared roster (copied on the
// first change) and, in View mode, the set of members known dead.
type view struct {
	r    *Roster
	dead deadSet
	own  bool // r is this node's own copy
	mode Mode
	// changed: a member came, went or changed since the last Ready.
	changed bool
}

func (v *view) alive(id string) bool {
	return v.mode != View || !v.dead.has(id)
}

// down marks id dead; it reports whether anything changed.
func (v *view) down(id string) bool {
	if v.r.Index(id) < 0 || !v.alive(id) {
		return false
	}
	v.dead.add(id)
	v.changed = true
	return true
}

// up marks p alive, adding it to the roster if it is new. It reports
// false, changing nothing, for a new member whose tag another member has.
func (v *view) up(p Peer) bool {
	q, ok := v.r.Get(p.ID)
	if !ok && v.r.tagClash(p.ID) != "" {
		return false
	}
	if v.dead.remove(p.ID) {
		v.changed = true
	}
	if !ok || q != p {
		v.update(p)
	}
	return true
}

// deadSet is the members a view holds dead. Most views hold none or one
// (the crashed coordinator), so the first is kept inline and a map is
// made only for more: a million simulated members that all learn of one
// crash then allocate nothing for it.
type deadSet struct {
	one  string              // a dead member; "" when none (never also in more)
	more map[string]struct{} // the others
}

func (d *deadSet) has(id string) bool {
	if id == "" {
		return false
	}
	if d.one == id {
		return true
	}
	_, ok := d.more[id]
	return ok
}

// add adds id ("" and members already in the set are not added).
func (d *deadSet) add(id string) {
	switch {
	case id == "" || d.has(id):
	case d.one == "":
		d.one = id
	default:
		if d.more == nil {
			d.more = make(map[string]struct{})
		}
		d.more[id] = struct{}{}
	}
}

// remove removes id and reports whether it was in the set.
func (d *deadSet) remove(id string) bool {
	if id != "" && d.one == id {
		d.one = ""
		return true
	}
	if _, ok := d.more[id]; ok {
		delete(d.more, id)
		return true
	}
	return false
}

func (d *deadSet) len() int {
	k := len(d.more)
	if d.one != "" {
		k++
	}
	return k
}

// all yields the members of the set, in no particular order.
func (d *deadSet) all(yield func(string) bool) {
	if d.one != "" && !yield(d.one) {
		return
	}
	for id := range d.more {
		if !yield(id) {
			return
		}
	}
}

// update sets p in the node's own roster, copying the shared one on the
// first change (Roster.set: in place, O(n) moves and no allocation).
func (v *view) update(p Peer) {
	if !v.own {
		v.r = v.r.clone() // the roster shared with other nodes stays as it was
		v.own = true
	}
	v.r.set(p)
	v.changed = true
}
