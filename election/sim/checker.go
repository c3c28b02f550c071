package sim

import (
	"fmt"
	"strings"

	"github.com/coordelect/coordelect/election/core"
)

// The properties the checker asserts; each violation is filed under one.
const (
	// Safety, after every event.
	KindTwoCoordinators    = "two-coordinators"      // two coordinators in one term
	KindTermTag            = "term-tag"              // a coordinator's term names another node
	KindTermDecrease       = "term-decrease"         // a process went back to a lower term (one incarnation)
	KindMinority           = "minority"              // guard: a coordinator on a minority side past its lease
	KindConfirmedOverlap   = "confirmed-overlap"     // guard: two confirmed coordinators at one instant
	KindRunaway            = "runaway"               // a message storm that feeds itself
	KindNoAgreement        = "no-agreement"          // liveness: no agreement within the bound
	KindNotHighest         = "not-highest"           // bully liveness: agreed on someone else
	KindCoordinatorNoQuor  = "coordinator-no-quorum" // guard: a coordinator with no majority alive
	KindMajorityLeaderless = "majority-leaderless"   // guard: a connected majority elects nobody
)

// Kinds lists every property, in the order above.
var Kinds = []string{KindTwoCoordinators, KindTermTag, KindTermDecrease, KindMinority, KindConfirmedOverlap,
	KindRunaway, KindNoAgreement, KindNotHighest, KindCoordinatorNoQuor, KindMajorityLeaderless}

// Checker asserts the safety properties after every event:
//   - at most one coordinator per term, and a term names its winner (its
//     tag is the coordinator's tag);
//   - a node never goes back to a lower term (within one incarnation: a
//     restarted process starts again from term 0);
//   - with the quorum guard, no node acts as coordinator on a side with
//     fewer than a majority of the configured size (counting the nodes it
//     reaches both ways) for longer than its lease after the last change
//     that can shrink a side (partition, block, crash): QuorumLease, or
//     the stretched lease it asked for before the change
//     (core.Node.LeaseAsk; slow round trips);
//   - with the quorum guard, no two nodes are confirmed coordinators at the
//     same virtual instant.
//
// Forged frames (Sim.Forge) are faults, not members: only a node's own
// state makes it a coordinator, never a term some frame carried.
//
// Liveness (agreement within a bound once faults stop and membership has
// converged; with the guard, a connected majority electing within a bound)
// is checked by CheckLiveness and CheckMajority, since only the caller
// knows when faults have stopped; they disarm crash triggers that have not
// fired.
//
// With names (Config.Names) every property but runaway is asserted per
// name, on the name's own terms, coordinators, candidates, ratings and
// quorum size (a side's majority counts the name's candidates it
// reaches), and a violation's text begins with the name; runaway counts
// the messages of every name (the pairs of all batches) in flight.
type Checker struct {
	s *Sim
	// elCheck is the state of the unnamed election, or of the first
	// name; els holds every election's, by name index (els[0] is
	// &elCheck).
	elCheck
	els  []*elCheck
	seen map[string]bool // kind + name + node: reported once per run
	// LeaseHigh is the longest lease, in ticks, that any coordinator asked
	// for in this run (guard; 0 without): above QuorumLease, a lease
	// stretched (core.Node.LeaseAsk).
	LeaseHigh int
	// LeaseStretched reports whether a coordinator asked for a lease
	// longer than its QuorumLease in this run.
	LeaseStretched bool
	// Skip lists properties not asserted in this run (the script's
	// "cluster skip=(...)"): a known defect waiting for its fix.
	Skip map[string]bool
	// Violations are the findings in the order found, each "t=...ms:
	// text" (with names, the text begins "NAME: " when the property is
	// the name's); Kinds[i] is the property Violations[i] breaks.
	Violations []string
	Kinds      []string
}

// elCheck is what the checker keeps of one election (the unnamed one, or
// one name): every property but runaway is asserted per election.
type elCheck struct {
	ni        int    // the election's index (the name's, with names)
	label     string // "" or "NAME: ", the prefix of its violations
	holders   map[core.Term]string
	splitAt   int64 // virtual time of the last partition change (shared by every election)
	confirmed map[string]core.Term
	// askEnd (guard): per live node, the latest end (virtual ms) of a
	// lease it asked its voters for (now + core.Node.LeaseAsk, seen after
	// each of its steps); splitEnd is askEnd at the last partition change.
	// A lease stretched by slow round trips (up to QuorumLeaseMax) may keep
	// a coordinator on a minority side that long after the change.
	askEnd, splitEnd map[string]int64
}

func newElCheck(ni int, label string) elCheck {
	return elCheck{ni: ni, label: label, holders: map[core.Term]string{}, confirmed: map[string]core.Term{}, askEnd: map[string]int64{}}
}

func newChecker(s *Sim) *Checker {
	c := &Checker{s: s, elCheck: newElCheck(0, ""), seen: map[string]bool{}}
	c.els = []*elCheck{&c.elCheck}
	return c
}

// addElection adds the checker's state of the next name (the first name
// takes over the unnamed election's, which has seen nothing yet).
func (c *Checker) addElection(name string) {
	if c.elCheck.label == "" {
		c.elCheck.label = name + ": "
		return
	}
	e := newElCheck(len(c.els), name+": ")
	e.splitAt = c.splitAt
	c.els = append(c.els, &e)
}

func (c *Checker) violate(kind, format string, args ...any) {
	v := fmt.Sprintf("t=%dms: ", c.s.now) + fmt.Sprintf(format, args...)
	if c.Skip[kind] {
		c.s.tracef("skipped (%s): %s", kind, v)
		return
	}
	c.Violations = append(c.Violations, v)
	c.Kinds = append(c.Kinds, kind)
	c.s.tracef("VIOLATION %s", v)
}

// violateOnce files a violation the first time key is seen: a coordinator
// stuck on a minority would otherwise be reported at every heartbeat.
func (c *Checker) violateOnce(kind, key, format string, args ...any) {
	if c.seen[kind+"/"+key] {
		return
	}
	c.seen[kind+"/"+key] = true
	c.violate(kind, format, args...)
}

// partitioned records a change that can shrink a coordinator's majority (a
// partition, a block or a crash): its lease may legitimately outlive it,
// by as much as the leases it asked for before the change.
func (c *Checker) partitioned() {
	for _, e := range c.els {
		e.partitioned(c.s.now)
	}
}

func (e *elCheck) partitioned(now int64) {
	e.splitAt = now
	if len(e.askEnd) == 0 {
		e.splitEnd = nil
		return
	}
	e.splitEnd = make(map[string]int64, len(e.askEnd))
	for id, end := range e.askEnd {
		if end < now {
			delete(e.askEnd, id) // run out: no round asked for it can hold
			continue
		}
		e.splitEnd[id] = end
	}
}

// gone forgets a node that crashed.
func (c *Checker) gone(sn *simNode) {
	for _, e := range c.els {
		delete(e.confirmed, sn.id)
		delete(e.askEnd, sn.id)
	}
}

// stalled forgets the confirmation of a node whose process stopped
// (Sim.Stall): it cannot act on it while it does not run, and when it
// resumes its lease is checked before it does anything else
// (core.Node.Advance); its next step says whether it still leads.
func (c *Checker) stalled(sn *simNode) {
	for _, e := range c.els {
		delete(e.confirmed, sn.id)
	}
}

// noteLease records the lease a guarded coordinator asks for now (the
// lease of the round it sent in this step, or of its next one).
func (c *Checker) noteLease(e *elCheck, sn *simNode, n *core.Node) {
	ask := n.LeaseAsk()
	if ask == 0 {
		return
	}
	if end := c.s.now + int64(ask)*c.s.cfg.TickMs; end > e.askEnd[sn.id] {
		e.askEnd[sn.id] = end
	}
	c.LeaseHigh = max(c.LeaseHigh, ask)
	c.LeaseStretched = c.LeaseStretched || ask > n.Config().QuorumLease
}

// after runs the safety checks for the node that just took a step (with
// names, flushGroup runs afterName for each name that reported).
func (c *Checker) after(sn *simNode) {
	if !sn.up || c.s.named() {
		return
	}
	c.check(&c.elCheck, sn, sn.node, &sn.termCheck)
}

// afterName runs the safety checks of name ni for member sn, which just
// took a step that the name reported.
func (c *Checker) afterName(sn *simNode, ni int) {
	if !sn.up {
		return
	}
	c.check(c.els[ni], sn, c.s.nodeOf(sn, ni), &c.s.groups[sn.idx].names[ni].termCheck)
}

// check runs the safety checks of election e for node n of member sn.
func (c *Checker) check(e *elCheck, sn *simNode, n *core.Node, tc *termCheck) {
	c.noteLease(e, sn, n)
	st := n.Status()
	if tc.checkInc != sn.inc {
		tc.checkInc, tc.checkTerm = sn.inc, 0
	}
	if st.Term < tc.checkTerm {
		c.violate(KindTermDecrease, "%snode %s went back from term %s to %s", e.label, sn.id, tc.checkTerm, st.Term)
	}
	tc.checkTerm = st.Term
	if st.State != core.StateCoordinator {
		delete(e.confirmed, sn.id)
		return
	}
	if st.Term.Tag() != core.Tag(sn.id) {
		c.violate(KindTermTag, "%snode %s is coordinator in term %s, which names tag %d", e.label, sn.id, st.Term, st.Term.Tag())
	}
	if h, ok := e.holders[st.Term]; ok && h != sn.id {
		c.violate(KindTwoCoordinators, "%stwo coordinators in term %s: %s and %s", e.label, st.Term, h, sn.id)
	}
	e.holders[st.Term] = sn.id
	if n.Config().QuorumSize > 0 {
		c.checkOverlap(e, sn.id, st.Term)
		c.checkQuorum(e, sn, n)
	}
}

// checkOverlap: with the guard, state coordinator means a confirmed lease
// (core.Node.Status); two at once is what the guard exists to prevent.
func (c *Checker) checkOverlap(e *elCheck, id string, t core.Term) {
	if _, was := e.confirmed[id]; !was {
		for o, ot := range e.confirmed {
			if o != id {
				c.violateOnce(KindConfirmedOverlap, e.label+minMax(o, id)+"/"+t.String(),
					"%stwo confirmed coordinators at once: %s (term %s) and %s (term %s)", e.label, o, ot, id, t)
				break
			}
		}
	}
	e.confirmed[id] = t
}

func minMax(a, b string) string {
	if core.CompareID(a, b) > 0 {
		a, b = b, a
	}
	return a + "," + b
}

// checkQuorum: with the guard, no coordinator on a side that reaches
// fewer than a majority of its QuorumSize past its lease. Without names
// the side counts the live nodes it reaches both ways; with names, the
// name's candidates among them (only they acknowledge its rounds).
func (c *Checker) checkQuorum(e *elCheck, sn *simNode, n *core.Node) {
	cfg := n.Config()
	until := e.splitAt + int64(cfg.QuorumLease+1)*c.s.cfg.TickMs
	if end, ok := e.splitEnd[sn.id]; ok {
		// A round sent before the change asked for a lease until end:
		// acknowledged by a majority, it holds until then (one tick for
		// the rounding, as above).
		until = max(until, end+c.s.cfg.TickMs)
	}
	if c.s.now <= until {
		return
	}
	reach := 0
	for _, o := range c.s.nodes {
		if o.up && (o == sn || c.s.connected(sn.id, o.id)) && (!c.s.named() || c.s.candidate(e.ni, o.id)) {
			reach++
		}
	}
	if reach < cfg.QuorumSize/2+1 {
		what := "nodes"
		if c.s.named() {
			what = "candidates"
		}
		c.violateOnce(KindMinority, e.label+sn.id+"/"+fmt.Sprint(e.splitAt),
			"%snode %s is coordinator on a side of %d %s, below a majority of %d", e.label, sn.id, reach, what, cfg.QuorumSize)
	}
}

// convergeViews runs until every view change scheduled so far has arrived:
// liveness bounds count from when membership has converged.
func (c *Checker) convergeViews() {
	if d := c.s.viewUntil - c.s.now; d > 0 {
		c.s.RunFor(d)
	}
}

// CheckLiveness lets membership converge, then runs the cluster for at
// most boundMs and records a violation unless every live node then agrees
// on one live coordinator. With wantHighest it must also be the
// highest-ranked live voter (the bully guarantee under the default
// preemption policy).
//
// With the quorum guard on and fewer than a majority of QuorumSize voters
// alive (non-voters never count toward a majority),
// no coordinator is the right outcome: it then runs the whole bound and
// requires that no node reports one. With no live voter nobody can lead,
// and nothing is required.
//
// With names every name is held to this, each with its own candidates,
// ratings and quorum size, within the one bound.
func (c *Checker) CheckLiveness(boundMs int64, wantHighest bool) bool {
	c.s.triggers = nil // faults have stopped: disarm what never fired
	if c.s.named() {
		return c.checkLivenessNames(boundMs, wantHighest)
	}
	if c.s.live() == 0 || c.s.highestLiveVoter(0) == "" {
		return true // nobody is left to agree, or nobody may lead
	}
	c.convergeViews()
	if q := c.s.cfg.Core.QuorumSize; q > 0 && c.s.liveVoters(0) < q/2+1 {
		c.s.RunFor(boundMs)
		sts, up := c.s.Statuses()
		for i, st := range sts {
			if up[i] && st.Coordinator != "" {
				c.violate(KindCoordinatorNoQuor, "node %s reports coordinator %s with %d of %d nodes alive", st.ID, st.Coordinator, c.s.live(), q)
				return false
			}
		}
		return true
	}
	end := c.s.now + boundMs
	for {
		if !c.s.Settle(end - c.s.now) {
			st, _ := c.s.Agreement()
			c.violate(KindNoAgreement, "no agreement within %dms after faults stopped (e.g. node %s: state %s coordinator %s)",
				boundMs, st.ID, st.State, orNone(st.Coordinator))
			return false
		}
		agreed, _ := c.s.Agreement()
		best := c.s.highestLiveVoter(0)
		if !wantHighest || best == agreed.Coordinator {
			return true
		}
		// Agreement on another node may be the state before news (say, a
		// rating carried by the next heartbeat) arrives: wait for it.
		if c.s.now >= end {
			c.violate(KindNotHighest, "agreed on %s but the highest-rated live voter is %s", agreed.Coordinator, best)
			return false
		}
		c.s.RunFor(min(c.s.cfg.TickMs, end-c.s.now))
	}
}

// checkLivenessNames is CheckLiveness with names: each name whose live
// candidates hold a majority of its quorum size (or that has no guard)
// and that has a live candidate must be agreed on (on its highest-ranked
// live candidate, with wantHighest) within the bound; each name whose
// live candidates fall short of that majority must have no coordinator
// reported at the bound's end.
func (c *Checker) checkLivenessNames(boundMs int64, wantHighest bool) bool {
	s := c.s
	if s.live() == 0 {
		return true
	}
	c.convergeViews()
	var agree, none []int
	for ni := range s.names {
		q := s.nodeQuorum(ni)
		switch {
		case s.highestLiveVoter(ni) == "":
			// nobody may lead it
		case q > 0 && s.liveVoters(ni) < q/2+1:
			none = append(none, ni)
		default:
			agree = append(agree, ni)
		}
	}
	end := s.now + boundMs
	// done reports whether every name of agree is agreed (on its
	// highest live candidate, with wantHighest); otherwise the first
	// that is not, and whether it is agreed on someone else.
	done := func() (ni int, other bool, ok bool) {
		for _, ni := range agree {
			st, ok := s.agreement(ni)
			if !ok {
				return ni, false, false
			}
			if wantHighest && st.Coordinator != s.highestLiveVoter(ni) {
				return ni, true, false
			}
		}
		if len(agree) > 0 && s.InFlight() > 0 {
			return agree[0], false, false // election traffic still in flight
		}
		return 0, false, true
	}
	ok := true
	for {
		ni, other, settled := done()
		if settled {
			break
		}
		if s.stopped || s.queue.Len() == 0 || s.queue.peekAt() > end {
			s.now = max(s.now, end)
			st, _ := s.agreement(ni)
			if other {
				c.violate(KindNotHighest, "%sagreed on %s but the highest-rated live voter is %s", s.nameLabel(ni), st.Coordinator, s.highestLiveVoter(ni))
			} else {
				c.violate(KindNoAgreement, "%sno agreement within %dms after faults stopped (e.g. node %s: state %s coordinator %s)",
					s.nameLabel(ni), boundMs, st.ID, st.State, orNone(st.Coordinator))
			}
			ok = false
			break
		}
		s.Step()
	}
	if len(none) == 0 {
		return ok
	}
	if d := end - s.now; d > 0 {
		s.RunFor(d)
	}
	for _, ni := range none {
		sts, up := s.statuses(ni)
		for i, st := range sts {
			if up[i] && st.Coordinator != "" {
				c.violate(KindCoordinatorNoQuor, "%snode %s reports coordinator %s with %d of %d candidates alive",
					s.nameLabel(ni), st.ID, st.Coordinator, s.liveVoters(ni), s.nodeQuorum(ni))
				ok = false
				break
			}
		}
	}
	return ok
}

// ConnectedMajority returns the live nodes of the largest set it finds in
// which every two nodes exchange messages both ways (greedily: the node
// with the most broken links goes first, ties to the later in ring order).
func (s *Sim) ConnectedMajority() []string {
	var in []*simNode
	for _, sn := range s.nodes {
		if sn.up {
			in = append(in, sn)
		}
	}
	for {
		worst, worstCuts := -1, 0
		for i, a := range in {
			cuts := 0
			for _, b := range in {
				if a != b && !s.connected(a.id, b.id) {
					cuts++
				}
			}
			if cuts > 0 && cuts >= worstCuts {
				worst, worstCuts = i, cuts
			}
		}
		if worst < 0 {
			break
		}
		in = append(in[:worst], in[worst+1:]...)
	}
	out := make([]string, len(in))
	for i, sn := range in {
		out[i] = sn.id
	}
	return out
}

// CheckMajority is the guard's liveness, while a partition still stands:
// once membership has converged, the connected majority (ConnectedMajority)
// must within boundMs agree on one confirmed coordinator among its own
// members, whatever the old coordinator can still reach. Without the
// guard, or when the connected set holds fewer voters than a majority of
// QuorumSize (non-voters never count toward one), nothing is required;
// nor when a live node outside it still reaches, both ways, a majority of
// the voters (itself included): it may hold its lease as long as they
// acknowledge it. With names, each name is held to this with its own
// candidates and quorum size, within the one bound.
func (c *Checker) CheckMajority(boundMs int64) bool {
	c.s.triggers = nil
	maj := c.s.ConnectedMajority()
	inMaj := map[string]bool{}
	for _, id := range maj {
		inMaj[id] = true
	}
	var need []int
	for ni := range c.s.elections() {
		q := c.s.nodeQuorum(ni)
		voters := 0
		for _, id := range maj {
			if c.s.voter(ni, id) {
				voters++
			}
		}
		if q > 0 && voters >= q/2+1 && !c.s.majorityOutside(ni, inMaj, q/2+1) {
			need = append(need, ni)
		}
	}
	if len(need) == 0 {
		c.s.tracef("check majority: no connected majority of voters (%v); nothing required", maj)
		return true
	}
	c.convergeViews()
	c.s.tracef("check majority: (%s)", strings.Join(maj, ","))
	in := map[string]bool{}
	for _, id := range maj {
		in[id] = true
	}
	agreed := func(ni int) (core.Status, bool) {
		var first core.Status
		for i, id := range maj {
			sn := c.s.member(id)
			if !sn.up { // crashed by a late trigger: judge the rest
				continue
			}
			st := c.s.nodeOf(sn, ni).Status()
			if st.Coordinator == "" || !in[st.Coordinator] || (i > 0 && first.ID != "" && (st.Coordinator != first.Coordinator || st.Term != first.Term)) {
				return st, false
			}
			if first.ID == "" {
				first = st
			}
		}
		return first, first.ID != ""
	}
	end := c.s.now + boundMs
	for {
		failed := -1
		for _, ni := range need {
			if _, ok := agreed(ni); !ok {
				failed = ni
				break
			}
		}
		if failed < 0 {
			return true
		}
		if c.s.now >= end || c.s.stopped {
			st, _ := agreed(failed)
			c.violate(KindMajorityLeaderless, "%sconnected majority (%s) without one confirmed coordinator of its own %dms after faults stopped (e.g. node %s: state %s coordinator %s)",
				c.s.nameLabel(failed), strings.Join(maj, ","), boundMs, st.ID, st.State, orNone(st.Coordinator))
			return false
		}
		c.s.RunFor(min(c.s.cfg.TickMs, end-c.s.now))
	}
}

// majorityOutside reports whether a live node not in set reaches, both
// ways, at least maj voters of election ni, itself included.
func (s *Sim) majorityOutside(ni int, set map[string]bool, maj int) bool {
	for _, o := range s.nodes {
		if !o.up || set[o.id] {
			continue
		}
		reach := 0
		for _, p := range s.nodes {
			if p.up && (p == o || s.connected(o.id, p.id)) && s.voter(ni, p.id) {
				reach++
			}
		}
		if reach >= maj {
			return true
		}
	}
	return false
}

// nodeQuorum is the quorum guard size of election ni (0: no guard).
func (s *Sim) nodeQuorum(ni int) int {
	if !s.named() {
		return s.cfg.Core.QuorumSize
	}
	return s.nameQuorum(s.names[ni])
}

// voter reports whether member id stands in election ni: without names,
// it is not a non-voter in its own node's roster; with names, it is a
// candidate of the name.
func (s *Sim) voter(ni int, id string) bool {
	if s.named() {
		return s.candidate(ni, id)
	}
	p, _ := s.member(id).node.Roster().Get(id)
	return !p.NonVoter
}

// highestLiveVoter returns the live voter of election ni ranked highest
// by its own node's roster (its rating for the name, with names); ""
// when no voter is alive.
func (s *Sim) highestLiveVoter(ni int) string {
	var best core.Peer
	found := false
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		p, _ := s.nodeOf(sn, ni).Roster().Get(sn.id)
		if p.NonVoter {
			continue
		}
		if !found || p.Rank().Compare(best.Rank()) > 0 {
			best, found = p, true
		}
	}
	return best.ID
}

// liveVoters counts the live nodes that are voters of election ni.
func (s *Sim) liveVoters(ni int) int {
	n := 0
	for _, sn := range s.nodes {
		if sn.up && s.voter(ni, sn.id) {
			n++
		}
	}
	return n
}

func (s *Sim) live() int {
	n := 0
	for _, sn := range s.nodes {
		if sn.up {
			n++
		}
	}
	return n
}
