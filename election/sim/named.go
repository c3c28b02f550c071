package sim

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// Named elections. A cluster whose Config.Names is set runs them: every
// member hosts one group.Group (the deterministic host the runtime
// drives), which holds a core.Node per name, and the network carries the
// group's batches: one delivery per batch (a packet to one destination
// with a pair per name), lost, duplicated, reordered, delayed and cut as
// a single message is. Without names a member is one core.Node, as it
// always was; nothing below runs then.

// Name is a named election that every member of a simulated cluster hosts
// (Config.Names).
type Name struct {
	Name string
	// Placement ranks the name's candidates (group.PlaceRating or
	// group.PlaceSpread).
	Placement group.Placement
	// Abstain lists the members that do not stand for the name: each
	// hosts it as a non-candidate (group.Options.Abstain), and every
	// other member is told so (group.Group.PeerCandidate) before the
	// name is added.
	Abstain []string
	// QuorumSize is the name's quorum guard size (group.Options.
	// QuorumSize). 0: with the cluster's guard (Core.QuorumSize = S), S
	// less the abstaining members that are not the cluster's non-voters
	// (who count in S as the cluster line counts them); without it, none.
	QuorumSize int
}

// memberGroup is a member's group and what the simulator keeps per name.
type memberGroup struct {
	g     *group.Group
	names []nameNode // by name index (Sim.names)
	// batches counts the batches (packets) the member has sent since it
	// last started.
	batches uint64
}

// nameNode is one name of one member as the simulator sees it.
type nameNode struct {
	termCheck
	last  core.Status // the status of the name's last Update
	leads bool        // last.State is coordinator
}

// termCheck is the highest term the checker saw a node hold (per name,
// with names) in incarnation checkInc.
type termCheck struct {
	checkTerm core.Term
	checkInc  int64
}

// named reports whether the cluster runs named elections.
func (s *Sim) named() bool { return s.names != nil }

// elections is the number of elections the checker follows: one per
// name, or the one unnamed election.
func (s *Sim) elections() int { return max(1, len(s.names)) }

// Names returns the names the cluster hosts, in the order declared; nil
// for a cluster of one unnamed election.
func (s *Sim) Names() []string {
	if !s.named() {
		return nil
	}
	out := make([]string, len(s.names))
	for i, nm := range s.names {
		out[i] = nm.Name
	}
	return out
}

// nameLabel is election ni's prefix in trace and violation lines: "" for
// the unnamed election, "NAME: " for a name.
func (s *Sim) nameLabel(ni int) string {
	if !s.named() {
		return ""
	}
	return s.names[ni].Name + ": "
}

// checkNames validates the names against the members and returns the
// quorum size each name runs with.
func (s *Sim) checkNames(names []Name) error {
	seen := map[string]bool{}
	for _, nm := range names {
		if err := group.ValidateName(nm.Name); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if _, dup := s.nameIdx[nm.Name]; dup || seen[nm.Name] {
			return fmt.Errorf("sim: name %q: declared twice", nm.Name)
		}
		seen[nm.Name] = true
		if nm.Placement != group.PlaceRating && nm.Placement != group.PlaceSpread {
			return fmt.Errorf("sim: name %q: placement %v: want rating or spread", nm.Name, nm.Placement)
		}
		for _, id := range nm.Abstain {
			if s.roster.Index(id) < 0 {
				return fmt.Errorf("sim: name %q: abstain=%s: not a member", nm.Name, id)
			}
		}
		if nm.QuorumSize < 0 {
			return fmt.Errorf("sim: name %q: quorum=%d: want 0 (the cluster's) or more", nm.Name, nm.QuorumSize)
		}
		if s.cfg.Core.QuorumSize > 0 && s.nameQuorum(nm) < 1 {
			return fmt.Errorf("sim: name %q: every member of the guard's %d abstains", nm.Name, s.cfg.Core.QuorumSize)
		}
	}
	return nil
}

// nameQuorum is the quorum guard size name nm runs with (Name.QuorumSize).
func (s *Sim) nameQuorum(nm Name) int {
	if nm.QuorumSize > 0 || s.cfg.Core.QuorumSize == 0 {
		return nm.QuorumSize
	}
	q := s.cfg.Core.QuorumSize
	for _, id := range nm.Abstain {
		if p, ok := s.roster.Get(id); ok && !p.NonVoter {
			q--
		}
	}
	return q
}

// candidate reports whether member id stands for name ni: it is not a
// non-voter of the cluster and does not abstain from the name.
func (s *Sim) candidate(ni int, id string) bool {
	if p, ok := s.roster.Get(id); !ok || p.NonVoter {
		return false
	}
	return !s.named() || !s.nameAbstain[ni][id]
}

// AddName adds a named election to a cluster of names, at run time: every
// live member adds it (its node starts asleep and elects after its
// start-up window); a crashed member hosts it when it restarts.
func (s *Sim) AddName(nm Name) error {
	if !s.named() {
		return fmt.Errorf("sim: name %q: the cluster runs one unnamed election; declare names before it is built (Config.Names)", nm.Name)
	}
	if err := s.checkNames([]Name{nm}); err != nil {
		return err
	}
	s.appendName(nm)
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		g := s.inputGroup(sn)
		if err := s.addNameTo(g, sn.id, nm); err != nil {
			return err
		}
		s.groups[sn.idx].names = append(s.groups[sn.idx].names, nameNode{last: g.Node(nm.Name).Status()})
		s.flush(sn)
	}
	return nil
}

// appendName records nm as the cluster's next name.
func (s *Sim) appendName(nm Name) {
	nm.Abstain = slices.Clone(nm.Abstain)
	idx := len(s.names)
	s.names = append(s.names, nm)
	if s.nameIdx == nil {
		s.nameIdx = map[string]int{}
	}
	s.nameIdx[nm.Name] = idx
	ab := map[string]bool{}
	for _, id := range nm.Abstain {
		ab[id] = true
	}
	s.nameAbstain = append(s.nameAbstain, ab)
	s.check.addElection(nm.Name)
}

// nameIndex returns the index of name, or -1.
func (s *Sim) nameIndex(name string) int {
	if i, ok := s.nameIdx[name]; ok {
		return i
	}
	return -1
}

// addNameTo adds nm to member id's group: the other members' abstentions
// first, then the name with this member's options. It reads no node (a
// read builds the nodes added so far).
func (s *Sim) addNameTo(g *group.Group, id string, nm Name) error {
	if err := s.abstentions(g, id, nm); err != nil {
		return err
	}
	opts := group.Options{Placement: nm.Placement, Abstain: slices.Contains(nm.Abstain, id), QuorumSize: s.nameQuorum(nm)}
	if err := g.Add(nm.Name, opts); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// abstentions tells member id's group which other members do not stand
// for nm (group.Group.PeerCandidate; a name need not be added yet).
func (s *Sim) abstentions(g *group.Group, id string, nm Name) error {
	for _, a := range nm.Abstain {
		if a != id {
			if err := g.PeerCandidate(a, nm.Name, false); err != nil {
				return fmt.Errorf("sim: name %q: %w", nm.Name, err)
			}
		}
	}
	return nil
}

// bootGroup (re)creates a member's group with every name of the cluster:
// a restart loses all state.
func (s *Sim) bootGroup(sn *simNode) error {
	g, err := group.New(s.coreConfig(sn.id))
	if err != nil {
		return fmt.Errorf("sim: node %s: %w", sn.id, err)
	}
	mg := &memberGroup{g: g, names: make([]nameNode, len(s.names))}
	// Every name is added before any node is read: the group builds the
	// nodes (and works out the spread assignment) once, at the first read.
	for _, nm := range s.names {
		if err := s.abstentions(g, sn.id, nm); err != nil {
			return err
		}
	}
	for _, nm := range s.names {
		if err := s.addNameTo(g, sn.id, nm); err != nil {
			return err
		}
	}
	for i, nm := range s.names {
		mg.names[i].last = g.Node(nm.Name).Status()
	}
	s.groups[sn.idx], sn.node, sn.up = mg, nil, true
	sn.last, sn.counted, sn.leads, sn.quiet = core.Status{ID: sn.id}, core.Counters{}, false, false
	sn.synced, sn.wake = s.phases[sn.phase].ticks, 0
	s.reschedule(sn)
	return nil
}

// coreConfig is the core configuration of member id's node (or of every
// name's node, with names).
func (s *Sim) coreConfig(id string) core.Config {
	cc := s.cfg.Core
	cc.ID, cc.Roster, cc.Algorithm, cc.Mode = id, s.roster, s.cfg.Algorithm, s.cfg.Mode
	if !s.cfg.HeartbeatDetector {
		cc.HeartbeatMisses = 1 << 30
	}
	return cc
}

// inputGroup returns a live member's group brought up to the present,
// for an input; flush must follow.
func (s *Sim) inputGroup(sn *simNode) *group.Group {
	s.sync(sn)
	return s.groups[sn.idx].g
}

// nodeOf returns the node of election ni on member sn (its group's node
// for name ni, or its one node).
func (s *Sim) nodeOf(sn *simNode, ni int) *core.Node {
	if s.names == nil {
		return sn.node
	}
	return s.groups[sn.idx].g.Node(s.names[ni].Name)
}

// statusOf returns member sn's status in election ni (a crashed member's
// State is sleep with no coordinator).
func (s *Sim) statusOf(sn *simNode, ni int) core.Status {
	if !sn.up {
		return core.Status{ID: sn.id}
	}
	return s.nodeOf(sn, ni).Status()
}

// NodeOf returns member id's node for name (nil if either is unknown), to
// read. Without names, name "" gives Node(id).
func (s *Sim) NodeOf(id, name string) *core.Node {
	sn, ok := s.find(id)
	if !ok {
		return nil
	}
	if !s.named() {
		if name != "" {
			return nil
		}
		return s.Node(id)
	}
	ni := s.nameIndex(name)
	if ni < 0 {
		return nil
	}
	if sn.up {
		s.sync(sn)
	}
	return s.nodeOf(sn, ni)
}

// Group returns member id's group (nil without names or for an unknown
// member), brought up to the present: to read, not to feed.
func (s *Sim) Group(id string) *group.Group {
	sn, ok := s.find(id)
	if !ok || !s.named() {
		return nil
	}
	if sn.up {
		s.sync(sn)
	}
	return s.groups[sn.idx].g
}

// Batches returns the batches (packets) member id has sent since it last
// started; 0 without names.
func (s *Sim) Batches(id string) uint64 {
	if sn, ok := s.find(id); ok && s.named() {
		return s.groups[sn.idx].batches
	}
	return 0
}

// flushGroup takes a member's group Ready: it hands the batches to the
// network, fires triggers, traces decisions and each name's state
// changes, adds up the counts and runs the checker on every name that
// reported.
func (s *Sim) flushGroup(sn *simNode) {
	mg := s.groups[sn.idx]
	rd := mg.g.Ready()
	sn.quiet = false
	for _, u := range rd.Updates {
		sn.counted.Add(&u.Ready.Counters)
		if s.tracing() {
			for _, d := range u.Ready.Decisions {
				f := "-"
				if d.F.ID != "" {
					f = d.F.ID
				}
				s.tracef("%s: %s: phase %d d=%s e=%s f=%s -> %s", u.Name, sn.id, d.Phase, d.D.ID, d.E.ID, f, d.Outcome)
			}
		}
	}
	if s.fireBatches(sn, rd.Batches) {
		return // crashed before sending
	}
	for _, b := range rd.Batches {
		s.sendBatch(sn, b)
	}
	for _, u := range rd.Updates {
		ni := s.nameIndex(u.Name)
		if ni < 0 {
			continue
		}
		nn := &mg.names[ni]
		if st := u.Ready.Status; st != nn.last {
			if s.tracing() && (st.State != nn.last.State || st.Coordinator != nn.last.Coordinator) {
				s.tracef("%s: %s: %s -> %s coordinator=%s term=%s", u.Name, sn.id, nn.last.State, st.State, orNone(st.Coordinator), st.Term)
			}
			nn.last, nn.leads = st, st.State == core.StateCoordinator
		}
		s.check.afterName(sn, ni)
	}
	s.reschedule(sn)
}

// fireBatches is fire for a group's batches: a trigger counts the
// messages of its type over every pair.
func (s *Sim) fireBatches(sn *simNode, batches []group.Batch) bool {
	return s.fireCounting(sn, func(t core.MsgType) int {
		k := 0
		for _, b := range batches {
			for _, p := range b.Pairs {
				if p.Msg.Type == t {
					k++
				}
			}
		}
		return k
	})
}

// tracePairs traces a batch's election traffic, one line per pair, each
// line the pair's message as a single message's, then suffix.
func (s *Sim) tracePairs(b *group.Batch, suffix string) {
	if !s.tracing() {
		return
	}
	for _, p := range b.Pairs {
		if p.Msg.Type.ElectionTraffic() {
			s.tracef("%s: %s%s", p.Name, msgText(p.Msg), suffix)
		}
	}
}

// sendBatch puts a batch on the network as one packet: counted (each
// pair as a message of its type), then lost, delayed, duplicated or
// reordered as a single message is.
func (s *Sim) sendBatch(from *simNode, b group.Batch) {
	s.groups[from.idx].batches++
	s.BatchesSent++
	for _, p := range b.Pairs {
		s.Sent[p.Msg.Type]++
	}
	s.tracePairs(&b, "")
	to, ok := s.find(b.To)
	if !ok {
		s.Lost += uint64(len(b.Pairs))
		return
	}
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		s.Lost += uint64(len(b.Pairs))
		s.tracePairs(&b, " dropped by the network")
		return
	}
	copies := 1
	if s.cfg.Dup > 0 && s.rng.Float64() < s.cfg.Dup {
		copies = 2
	}
	head := core.Message{From: b.From, To: b.To}
	for range copies {
		for _, p := range b.Pairs {
			s.inFlight[p.Msg.Type]++
		}
		s.inFlightAll += len(b.Pairs)
		at := s.arrival(int(from.idx), head, to)
		s.scheduleBatch(at, to, b.Clone(), false)
	}
	s.runaway()
}

// scheduleBatch schedules the delivery of b (a copy the network owns) to
// member to at time at. The batch waits in Sim.batches; the event holds
// its slot in msg.Seq, and its sender and receiver in msg.From and msg.To
// (for the partitions).
func (s *Sim) scheduleBatch(at int64, to *simNode, b group.Batch, forged bool) {
	var slot uint64
	if k := len(s.freeBatch); k > 0 {
		slot = s.freeBatch[k-1]
		s.freeBatch = s.freeBatch[:k-1]
		s.batches[slot] = b
	} else {
		slot = uint64(len(s.batches))
		s.batches = append(s.batches, b)
	}
	s.schedule(event{at: at, kind: evBatch, node: to.idx, inc: to.inc, forged: forged,
		msg: core.Message{From: b.From, To: b.To, Seq: slot}})
}

// takeBatch returns the batch of an evBatch event and frees its slot.
func (s *Sim) takeBatch(e *event) group.Batch {
	b := s.batches[e.msg.Seq]
	s.batches[e.msg.Seq] = group.Batch{}
	s.freeBatch = append(s.freeBatch, e.msg.Seq)
	return b
}

// deliverBatch delivers an evBatch event to its member (live, as the
// caller checked stalls). It reports whether the member took it (flush
// must follow).
func (s *Sim) deliverBatch(sn *simNode, e *event) bool {
	b := s.takeBatch(e)
	if !e.forged {
		for _, p := range b.Pairs {
			s.inFlight[p.Msg.Type]--
		}
		s.inFlightAll -= len(b.Pairs)
	}
	if !sn.up || sn.inc != e.inc || (!e.forged && s.cut(b.From, b.To)) {
		s.Lost += uint64(len(b.Pairs))
		s.tracePairs(&b, " lost")
		return false
	}
	s.inputGroup(sn).Step(b)
	return true
}

// resetBatches forgets the batches in flight (the queue was emptied).
func (s *Sim) resetBatches() {
	s.batches, s.freeBatch = nil, nil
}

// bootstrapNames settles every name before the run: each follows, in
// term 1, its highest-ranked candidate (by the name's ratings), as if it
// had won an election.
func (s *Sim) bootstrapNames() {
	coords := make([]string, len(s.names))
	for ni := range s.names {
		coords[ni] = s.highestFor(ni)
	}
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		g := s.inputGroup(sn)
		for ni, nm := range s.names {
			c := coords[ni]
			_ = g.With(nm.Name, func(n *core.Node) error {
				n.Bootstrap(c, core.MakeTerm(1, core.Tag(c)))
				return nil
			})
		}
		s.flush(sn)
	}
}

// highestFor returns the highest-ranked candidate of election ni by its
// ratings, dead or alive (the highest-ranked member when none stands).
func (s *Sim) highestFor(ni int) string {
	var best core.Peer
	found := false
	for _, sn := range s.nodes {
		p, _ := s.nodeOf(sn, ni).Roster().Get(sn.id)
		if !s.candidate(ni, sn.id) {
			continue
		}
		if !found || p.Rank().Compare(best.Rank()) > 0 {
			best, found = p, true
		}
	}
	if !found {
		return s.roster.ByRank(s.roster.Len() - 1).ID
	}
	return best.ID
}

// pokeNames applies fn to member id's node of every name (name ""), or of
// one name.
func (s *Sim) pokeNames(id, name string, fn func(*core.Node)) error {
	sn, ok := s.find(id)
	if !ok {
		return fmt.Errorf("sim: unknown node %q", id)
	}
	if name != "" && s.nameIndex(name) < 0 {
		return fmt.Errorf("sim: name %q: not a name of the cluster", name)
	}
	if !sn.up {
		s.tracef("%s: down, ignored", id)
		return nil
	}
	g := s.inputGroup(sn)
	for _, nm := range s.names {
		if name == "" || nm.Name == name {
			_ = g.With(nm.Name, func(n *core.Node) error { fn(n); return nil })
		}
	}
	s.flush(sn)
	return nil
}

// Leads returns, per member in ring order, the number of names it is
// coordinator of now (0 for a crashed member).
func (s *Sim) Leads() []int {
	out := make([]int, len(s.nodes))
	for i, sn := range s.nodes {
		if !sn.up || !s.named() {
			continue
		}
		for ni := range s.names {
			if s.statusOf(sn, ni).State == core.StateCoordinator {
				out[i]++
			}
		}
	}
	return out
}

// forgedAs is member id as a forged frame of election ni presents it: its
// own rating, or its rating for the name.
func (s *Sim) forgedAs(id string, ni int) core.Peer {
	p := s.current(id)
	if !s.named() {
		return p
	}
	try := func(sn *simNode) bool {
		if !sn.up {
			return false
		}
		q, ok := s.nodeOf(sn, ni).Roster().Get(id)
		if ok {
			p.Rating = q.Rating
		}
		return ok
	}
	if try(s.member(id)) {
		return p
	}
	for _, sn := range s.nodes {
		if try(sn) {
			break
		}
	}
	return p
}

// forgeBatch is Forge for a batch (names): it arrives after the usual
// delay whatever the partitions, is never lost, duplicated or counted as
// sent.
func (s *Sim) forgeBatch(to *simNode, b group.Batch, trace bool) {
	s.Forged++
	if trace {
		for _, p := range b.Pairs {
			m := p.Msg
			s.tracef("%s: forged %s -> %s %s term=%s coordinator=%s", p.Name, orNone(m.From), m.To, m.Type, m.Term, orNone(m.Coordinator))
		}
	}
	d := s.cfg.DelayMin
	if span := s.cfg.DelayMax - s.cfg.DelayMin; span > 0 {
		d += s.rng.Int64N(span + 1)
	}
	s.scheduleBatch(s.now+d, to, b, true)
}

// candidates counts the members that stand for name ni, alive or not.
func (s *Sim) candidates(ni int) int {
	n := 0
	for _, sn := range s.nodes {
		if s.candidate(ni, sn.id) {
			n++
		}
	}
	return n
}

// NameRecordBytes is what the simulator itself keeps per name per member
// (its record of the name's last status and the checker's term): the
// part of a simulated cluster's heap per name and member that is not the
// group's (coordbench elections subtracts it).
const NameRecordBytes = int(unsafe.Sizeof(nameNode{}))
