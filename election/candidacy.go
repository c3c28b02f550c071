package election

import (
	"time"
)

// The candidacy exchange: how every member learns which names the others
// run and stand for (group.Group.PeerCandidate), so that every member of
// a name agrees on its candidates (docs/design.md, "Named elections").
//
// A member's statement is the names it runs, each with whether it stands
// for it; its version counts the statement's changes. A member sends each
// other member that runs named elections (Event.Named) its whole
// statement when it learns of it (EventPeerUp: a join, a restart, a
// return after a PeerDown), and after that, at the end of every flush
// that changed it (Election, Close, SetCandidate), the changes since the
// version it sent before, over the link's reliable, ordered stream (the
// batches'). A receiver applies a change only to the statement of the
// version it names (Candidacy.Base); one that finds a change missing (a
// lost frame: the link skips a gap after its reorder hold) asks for the
// whole statement again (Candidacy.Ask). Every member thus holds, for
// each other member, the statement that member sent last, and every
// member learns the same.
//
// Until a member's first statement arrives it is taken to stand for
// every name (as in the unnamed election, where every member stands); a
// member that does not run named elections (an older build) runs the
// unnamed election alone, and stands for no other name. What a member
// holds of the others is two bits per member and name it runs (runs,
// stands: Election.peers), and the same for the names only others run
// (foreign), so that a name added later knows its candidates at once.

// maxCandidacyEntries bounds the entries of one Candidacy: a whole
// statement of more names goes in several (each name and its flags take
// at most group.MaxNameLen + 3 bytes of a frame).
const maxCandidacyEntries = 512

// candidacies is an Elector's side of the exchange; the loop owns it.
type candidacies struct {
	e       *Elector
	version uint64 // this member's statement's version
	// changes are the statement's changes since version base: what the
	// next flush sends the members that have been sent version base.
	changes []CandidacyEntry
	base    uint64
	// peers are the other members, by their index in the group
	// (group.Group.Member; 0, this member, unused), as far as any of
	// them runs named elections; a member beyond it does not.
	peers []peerCandidacy
	// foreign holds the candidacies of the names this member does not
	// run and some other member does.
	foreign map[string]*candidateBits
	due     bool // some member is to be sent something (flush)
	// next is the group tick from which the next sends may go: at most
	// one round of them per heartbeat interval, so that a burst of
	// changes (a thousand names added one by one) goes as one change.
	next int
	// nextDigest is the group tick of the next look for the members
	// owed a digest (digest).
	nextDigest int
	// varied: this member's statement has been, at some version, other
	// than the plain one (the unnamed election alone, stood for; see
	// quiet).
	varied bool
	buf    []CandidacyEntry
}

// peerCandidacy is what this member knows of another's candidacies, and
// what it has sent it. Members are never forgotten (as in the group).
type peerCandidacy struct {
	// sent is the version of this member's statement the member has been
	// sent: 0 while a whole statement is due (flagSendFull).
	sent  uint64
	known uint64 // the version of its statement held (flagHeard)
	// sentAt is the group tick of the last candidacy sent to it.
	sentAt int
	flags  peerFlags
}

type peerFlags uint8

const (
	flagNamed    peerFlags = 1 << iota // it runs named elections (Event.Named)
	flagAlive                          // alive, as the last PeerUp or PeerDown said
	flagSendFull                       // its next is a whole statement
	flagAskDue                         // a request for its whole statement is to go (Candidacy.Ask)
	flagAsked                          // one went, and no whole statement came since
	flagHeard                          // a whole statement of it has come
)

func (p *peerCandidacy) is(f peerFlags) bool { return p.flags&f != 0 }

func (p *peerCandidacy) set(f peerFlags, on bool) {
	if on {
		p.flags |= f
	} else {
		p.flags &^= f
	}
}

// candidateBits are the members' candidacies for one name: for member i
// (peerCandidacy.i), bit i%64 of the first word of its 64's pair says
// that it runs the name, of the second that it stands for it. A member
// of thousands of names keeps them for each: the first 64 members' pair
// is in place, the others' (more) made when one of them runs it.
type candidateBits struct {
	low  [2]uint64 // members 0 to 63: runs, stands
	more *[]uint64 // the members from 64, two words per 64 as low; nil: none runs
}

// words returns the runs and stands words of member i's 64, made if grow
// is set; nil, nil if they are not and are not made.
func (b *candidateBits) words(i int, grow bool) (runs, stands *uint64) {
	w := i / 64
	if w == 0 {
		return &b.low[0], &b.low[1]
	}
	k := 2 * (w - 1)
	if b.more == nil || k >= len(*b.more) {
		if !grow {
			return nil, nil
		}
		if b.more == nil {
			b.more = new([]uint64)
		}
		for len(*b.more) <= k {
			*b.more = append(*b.more, 0, 0)
		}
	}
	return &(*b.more)[k], &(*b.more)[k+1]
}

func (b *candidateBits) set(i int, runs, stands bool) {
	r, s := b.words(i, runs)
	if r == nil {
		return // clear already
	}
	m := uint64(1) << (i % 64)
	*r &^= m
	*s &^= m
	if runs {
		*r |= m
	}
	if runs && stands {
		*s |= m
	}
}

func (b *candidateBits) get(i int) (runs, stands bool) {
	r, s := b.words(i, false)
	if r == nil {
		return false, false
	}
	m := uint64(1) << (i % 64)
	return *r&m != 0, *s&m != 0
}

// orRuns ORs into dst, by 64s of member indices, the members that run
// the name, growing dst as needed, and returns it.
func (b *candidateBits) orRuns(dst []uint64) []uint64 {
	if b.low[0] != 0 {
		if len(dst) == 0 {
			dst = append(dst, 0)
		}
		dst[0] |= b.low[0]
	}
	if b.more != nil {
		for w := 0; w < len(*b.more); w += 2 {
			if r := (*b.more)[w]; r != 0 {
				k := 1 + w/2
				for len(dst) <= k {
					dst = append(dst, 0)
				}
				dst[k] |= r
			}
		}
	}
	return dst
}

func (b *candidateBits) empty() bool {
	if b.low[0] != 0 {
		return false
	}
	if b.more != nil {
		for w := 0; w < len(*b.more); w += 2 {
			if (*b.more)[w] != 0 {
				return false
			}
		}
	}
	return true
}

func (c *candidacies) init(e *Elector) {
	c.e = e
	c.foreign = make(map[string]*candidateBits)
	c.version, c.base = 1, 1   // a digest of version 0 would read as a request
	c.varied = e.self.NonVoter // its statement stands for no name
}

// digestEvery is how often a member that has sent another nothing for so
// long sends it a digest: its statement's version, by which the other
// finds out that it missed the last change (a lost frame that no later
// one revealed) and asks for the whole statement.
const digestEvery = 10 * time.Second

// digestTicks is digestEvery in group ticks.
func (c *candidacies) digestTicks() int { return max(1, int(digestEvery/c.e.cfg.Tick)) }

// wake returns the group tick at which the loop is to run flush for the
// exchange (sends held back by next, the digests), or -1.
func (c *candidacies) wake() int {
	if c.e.btr == nil {
		return -1
	}
	if c.due {
		return min(c.next, c.nextDigest)
	}
	return c.nextDigest
}

// peer returns what is known of the member of group index i, making room
// for it; nil for this member.
func (c *candidacies) peer(i int) *peerCandidacy {
	if i <= 0 {
		return nil
	}
	for len(c.peers) <= i {
		c.peers = append(c.peers, peerCandidacy{})
	}
	return &c.peers[i]
}

// named reports whether member id runs named elections.
func (c *candidacies) named(id string) bool {
	i, ok := c.e.g.Member(id)
	return ok && i < len(c.peers) && c.peers[i].is(flagNamed)
}

// stands says whether the member of index i stands for el's name, as
// this member knows it.
func (c *candidacies) stands(i int, el *Election) bool {
	var p peerCandidacy
	if i < len(c.peers) {
		p = c.peers[i]
	}
	switch {
	case !p.is(flagNamed):
		return el.name == DefaultName
	case !p.is(flagHeard):
		return true
	}
	runs, stands := el.peers.get(i)
	return runs && stands
}

// declare hands the group the candidacy for el's name of the member of
// index i.
func (c *candidacies) declare(i int, el *Election) {
	_ = c.e.g.PeerCandidate(c.e.g.MemberID(i), el.name, c.stands(i, el)) // a valid name, another member
	c.e.touch(el)
}

// declareAll hands the group the candidacies of the member of index i
// for every name.
func (c *candidacies) declareAll(i int) {
	for _, el := range c.e.list {
		c.declare(i, el)
	}
}

// peerUp: member id is alive, as a new incarnation or back: it is sent
// this member's whole statement and, if it runs named elections and did
// not (or the other way round), its candidacies are declared anew. The
// group has been told of it (group.Group.PeerUp).
func (c *candidacies) peerUp(id string, named bool) {
	i, ok := c.e.g.Member(id)
	if !ok || i == 0 {
		return
	}
	if !named && i >= len(c.peers) {
		if len(c.e.list) > 1 {
			c.declareAll(i) // it stands for the unnamed election alone
		}
		return
	}
	p := c.peer(i)
	changed := p.is(flagNamed) != named
	p.set(flagNamed, named)
	p.set(flagAlive, true)
	if named && c.e.btr != nil {
		p.sent = 0
		p.set(flagSendFull, true)
		c.due = true
	}
	if changed {
		c.declareAll(i)
	}
}

// peerDown: member id is dead; when it returns it is sent the whole
// statement again.
func (c *candidacies) peerDown(id string) {
	if i, ok := c.e.g.Member(id); ok && i > 0 && i < len(c.peers) {
		p := &c.peers[i]
		p.set(flagAlive, false)
		p.set(flagSendFull, false)
		p.sent = 0
	}
}

// added: this member runs el's name from now on: the members' known
// candidacies for it become its own (foreign), and the others learn it.
func (c *candidacies) added(el *Election) {
	if f := c.foreign[el.name]; f != nil {
		el.peers = *f
		delete(c.foreign, el.name)
	}
	for i := 1; i < c.e.g.Members(); i++ {
		if !c.stands(i, el) {
			c.declare(i, el)
		}
	}
	c.changed(el)
}

// changed: this member's candidacy for el's name changed (or it runs the
// name from now on).
func (c *candidacies) changed(el *Election) {
	c.record(CandidacyEntry{Name: el.name, Stand: !el.abstain && !c.e.self.NonVoter})
}

// removed: this member no longer runs el's name; what it knows of the
// others' candidacies for it is kept if some other member runs it.
func (c *candidacies) removed(el *Election) {
	if !el.peers.empty() {
		f := el.peers
		c.foreign[el.name] = &f
	}
	el.peers = candidateBits{}
	c.record(CandidacyEntry{Name: el.name, Gone: true})
}

// record adds a change to this member's statement.
func (c *candidacies) record(x CandidacyEntry) {
	if c.e.btr == nil {
		return // no member can be told
	}
	c.version++
	c.changes = append(c.changes, x)
	c.due = true
	if x.Name != DefaultName || x.Gone || !x.Stand {
		c.varied = true
	}
}

// flush sends what is due: the whole statement to the members that are
// to have it, the changes to the others, and the requests for whole
// statements. Then every live member that runs named elections has been
// sent the current version.
func (c *candidacies) flush() {
	now := c.e.g.Now()
	if now >= c.nextDigest && c.e.btr != nil {
		c.digest(now)
	}
	if !c.due || now < c.next {
		return
	}
	c.due = false
	c.next = now + c.e.g.Config().HeartbeatInterval
	for i := range c.peers {
		p := &c.peers[i]
		if !p.is(flagAlive) || !p.is(flagNamed) {
			continue
		}
		to := c.e.g.MemberID(i)
		if p.is(flagAskDue) {
			p.set(flagAskDue, false)
			c.send(p, Candidacy{To: to, Ask: true, Base: p.known})
		}
		switch {
		case p.is(flagSendFull) || p.sent != c.base && p.sent != c.version:
			c.sendWhole(p, to)
		case p.sent == c.base && len(c.changes) > 0:
			c.send(p, Candidacy{To: to, Base: c.base, Version: c.version, Entries: c.changes})
		}
		p.sent = c.version
		p.set(flagSendFull, false)
	}
	if cap(c.changes) > maxKeptChanges {
		c.changes = nil // a burst (names added by the thousand): not kept
	} else {
		clear(c.changes)
		c.changes = c.changes[:0]
	}
	c.base = c.version
}

// maxKeptChanges is the room for changes a statement keeps once they are
// sent.
const maxKeptChanges = 64

// digest sends every live member that runs named elections, and has been
// sent nothing for digestEvery ticks, this member's statement's version
// (a Candidacy of no entries whose Base and Version are it), but those
// that it need not (quiet).
func (c *candidacies) digest(now int) {
	every := c.digestTicks()
	c.nextDigest = now + max(every/4, 1)
	var others []uint64 // with quiet: the members that run a name beside the unnamed election
	quiet := c.quiet()
	if quiet {
		others = c.runOthers()
	}
	for i := range c.peers {
		p := &c.peers[i]
		if !p.is(flagAlive) || !p.is(flagNamed) || p.is(flagSendFull) || now-p.sentAt < every {
			continue
		}
		if quiet && p.is(flagHeard) && (i/64 >= len(others) || others[i/64]&(1<<(i%64)) == 0) {
			continue
		}
		if quiet && !p.is(flagHeard) && !p.is(flagAsked) {
			// Its statement never came (it went before this member
			// admitted it, or was lost), and the other, quiet too,
			// sends this one no digests by which it would ask: it is
			// asked for it.
			p.set(flagAskDue, true)
			p.set(flagAsked, true)
			c.due = true
		}
		c.send(p, Candidacy{To: c.e.g.MemberID(i), Base: c.base, Version: c.base})
	}
}

// quiet reports whether this member's statement has never been other
// than the plain one: it runs the unnamed election alone and stands for
// it, and did so at every version. A member that runs no other name then
// need not be sent digests (digest) once its statement has come: for the
// names it runs, every statement of this member it may hold (or none,
// which stands for every name) gives it the same candidacy, so a lost
// one changes nothing. Once it runs another name, its statement's change
// says so, and its digests are due again (the next look, as it has been
// sent nothing since); if that change is lost, its own digests reveal
// it. A member whose statement has not come is still sent digests, and
// asked for its statement once (its own digests, if it is quiet too, do
// not reveal that it was missed). An idle cluster of unnamed elections
// thus sends no digests, which would be n·(n-1) datagrams every
// digestEvery.
func (c *candidacies) quiet() bool {
	return !c.varied && len(c.e.list) == 1 && c.e.list[0] == c.e.def && !c.e.def.abstain
}

// runOthers returns, by 64s of member indices, the members that run a
// name this member does not, as it knows it (foreign); nil if none.
func (c *candidacies) runOthers() []uint64 {
	var out []uint64
	for _, f := range c.foreign {
		out = f.orRuns(out)
	}
	return out
}

// sendWhole sends member to this member's whole statement, in pieces of
// at most maxCandidacyEntries: the first is Full, the others change the
// version it makes by nothing but their entries.
func (c *candidacies) sendWhole(p *peerCandidacy, to string) {
	stand := !c.e.self.NonVoter
	first := true
	c.buf = c.buf[:0]
	out := func() {
		x := Candidacy{To: to, Base: c.version, Version: c.version, Entries: c.buf}
		if first {
			x.Full, x.Base = true, 0
		}
		c.send(p, x)
		first = false
		clear(c.buf)
		c.buf = c.buf[:0]
	}
	for _, el := range c.e.list {
		c.buf = append(c.buf, CandidacyEntry{Name: el.name, Stand: stand && !el.abstain})
		if len(c.buf) == maxCandidacyEntries {
			out()
		}
	}
	if len(c.buf) > 0 || first {
		out()
	}
}

// send hands x, for p, to the transport.
func (c *candidacies) send(p *peerCandidacy, x Candidacy) {
	p.sentAt = c.e.g.Now()
	x.From = c.e.id
	if err := c.e.btr.SendCandidacy(x); err != nil {
		// The link is gone (the member left) or full: it is sent the
		// whole statement when it is back, or asks for it.
		c.e.log.Debug("candidacy not sent", "peer", x.To, "error", err)
	}
}

// receive applies a statement or a change from another member.
func (c *candidacies) receive(x *Candidacy) {
	i, ok := c.e.g.Member(x.From)
	if !ok || i == 0 {
		// The membership reports a member before its frames (it holds
		// those of a member it has not admitted yet).
		c.e.log.Debug("candidacy from a member not known yet: dropped", "peer", x.From)
		return
	}
	p := c.peer(i)
	if x.Ask {
		p.set(flagSendFull, true)
		c.due = true
	}
	if !x.Full && len(x.Entries) == 0 && x.Version == 0 {
		return // a request alone
	}
	if !x.Full && len(x.Entries) == 0 && p.is(flagHeard) && x.Version == p.known {
		return // a digest of the statement held
	}
	switch {
	case x.Full:
		c.forget(i)
		p.set(flagHeard, true)
		p.set(flagAsked, false)
	case !p.is(flagHeard) || x.Base != p.known:
		if !p.is(flagAsked) {
			p.set(flagAskDue, true)
			p.set(flagAsked, true)
			c.due = true
			c.e.log.Debug("candidacy change missed: asking for the whole statement", "peer", x.From, "have", p.known, "base", x.Base)
		}
		return
	}
	p.known = x.Version
	for _, en := range x.Entries {
		c.apply(i, en, !x.Full)
	}
	if x.Full {
		c.declareAll(i)
	}
}

// forget clears what is known of the candidacies of the member of index
// i, before its whole statement is applied.
func (c *candidacies) forget(i int) {
	for _, el := range c.e.list {
		el.peers.set(i, false, false)
	}
	for name, f := range c.foreign {
		f.set(i, false, false)
		if f.empty() {
			delete(c.foreign, name)
		}
	}
}

// apply records one entry of the statement of the member of index i,
// and, with declare, hands the group its candidacy for the name if this
// member runs it.
func (c *candidacies) apply(i int, en CandidacyEntry, declare bool) {
	el := c.e.lookup(en.Name)
	if el == nil || el.removed {
		f := c.foreign[en.Name]
		if f == nil {
			if en.Gone {
				return
			}
			f = &candidateBits{}
			c.foreign[en.Name] = f
		}
		f.set(i, !en.Gone, en.Stand)
		if f.empty() {
			delete(c.foreign, en.Name)
		}
		return
	}
	el.peers.set(i, !en.Gone, en.Stand)
	if declare {
		c.declare(i, el)
	}
}
