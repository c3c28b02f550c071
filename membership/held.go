package membership

import "github.com/coordelect/coordelect/election/core"

// The guard's mirror of memberlist's live members, kept in the table's
// entries (flagHeld and the address) rather than in a second sorted list:
// every member holds a record of every other, and one record per peer
// costs 64 bytes where the guard's own list cost 40 more (its name and
// address again) at n = 1,000.
//
// The two sides run at different times. The guard's methods below are
// called inside memberlist's callbacks, with memberlist's node lock held,
// and say what memberlist holds now; the table's alive and leave run
// later, in the dispatcher, for the same events queued in the inbox. So a
// held entry can be one the table does not list yet (its join is queued),
// and a listed one can have been released already (its leave is queued).
// flagHeld is the guard's alone, flagAlive the table's alone; an entry
// goes only when neither holds it (prune). The address is memberlist's
// latest while the entry is held: hold writes it, and alive writes the
// queued item's address only to an entry memberlist no longer holds.

// hold records that memberlist holds the member name alive at addr
// (NotifyJoin, NotifyUpdate), adding an entry if the table has none.
func (t *table) hold(name string, addr addrKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tag := core.Tag(name)
	i, ok := t.search(name, tag)
	if !ok {
		t.add(name, tag, i)
	}
	e := &t.peers[i]
	e.addr = addr
	e.set(flagHeld, true)
}

// release records that memberlist no longer holds the member name alive
// (NotifyLeave). The entry stays: the table lists departed members, and
// prune deletes the entries that neither side holds.
func (t *table) release(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.get(name); e != nil {
		e.set(flagHeld, false)
	}
}

// heldAddr returns the address of the member name if memberlist holds it
// alive.
func (t *table) heldAddr(name string) (addrKey, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if e := t.get(name); e != nil && e.is(flagHeld) {
		return e.addr, true
	}
	return addrKey{}, false
}

// boot returns the boot ID the table knows for the member name, 0 if none.
func (t *table) boot(name string) uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if e := t.get(name); e != nil {
		return e.boot
	}
	return 0
}
