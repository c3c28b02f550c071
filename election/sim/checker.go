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
type Checker struct {
	s         *Sim
	holders   map[core.Term]string
	splitAt   int64 // virtual time of the last partition change
	confirmed map[string]core.Term
	seen      map[string]bool // kind + node: reported once per run
	// askEnd (guard): per live node, the latest end (virtual ms) of a
	// lease it asked its voters for (now + core.Node.LeaseAsk, seen after
	// each of its steps); splitEnd is askEnd at the last partition change.
	// A lease stretched by slow round trips (up to QuorumLeaseMax) may keep
	// a coordinator on a minority side that long after the change.
	askEnd, splitEnd map[string]int64
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
	// text"; Kinds[i] is the property Violations[i] breaks.
	Violations []string
	Kinds      []string
}

func newChecker(s *Sim) *Checker {
	return &Checker{s: s, holders: map[core.Term]string{},
		confirmed: map[string]core.Term{}, seen: map[string]bool{}, askEnd: map[string]int64{}}
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
	c.splitAt = c.s.now
	if len(c.askEnd) == 0 {
		c.splitEnd = nil
		return
	}
	c.splitEnd = make(map[string]int64, len(c.askEnd))
	for id, e := range c.askEnd {
		if e < c.s.now {
			delete(c.askEnd, id) // run out: no round asked for it can hold
			continue
		}
		c.splitEnd[id] = e
	}
}

// gone forgets a node that crashed.
func (c *Checker) gone(sn *simNode) {
	delete(c.confirmed, sn.id)
	delete(c.askEnd, sn.id)
}

// stalled forgets the confirmation of a node whose process stopped
// (Sim.Stall): it cannot act on it while it does not run, and when it
// resumes its lease is checked before it does anything else
// (core.Node.Advance); its next step says whether it still leads.
func (c *Checker) stalled(sn *simNode) { delete(c.confirmed, sn.id) }

// noteLease records the lease a guarded coordinator asks for now (the
// lease of the round it sent in this step, or of its next one).
func (c *Checker) noteLease(sn *simNode) {
	ask := sn.node.LeaseAsk()
	if ask == 0 {
		return
	}
	if end := c.s.now + int64(ask)*c.s.cfg.TickMs; end > c.askEnd[sn.id] {
		c.askEnd[sn.id] = end
	}
	c.LeaseHigh = max(c.LeaseHigh, ask)
	c.LeaseStretched = c.LeaseStretched || ask > sn.node.Config().QuorumLease
}

// after runs the safety checks for the node that just took a step.
func (c *Checker) after(sn *simNode) {
	if !sn.up {
		return
	}
	c.noteLease(sn)
	st := sn.node.Status()
	if sn.checkInc != sn.inc {
		sn.checkInc, sn.checkTerm = sn.inc, 0
	}
	if st.Term < sn.checkTerm {
		c.violate(KindTermDecrease, "node %s went back from term %s to %s", sn.id, sn.checkTerm, st.Term)
	}
	sn.checkTerm = st.Term
	if st.State != core.StateCoordinator {
		delete(c.confirmed, sn.id)
		return
	}
	if st.Term.Tag() != core.Tag(sn.id) {
		c.violate(KindTermTag, "node %s is coordinator in term %s, which names tag %d", sn.id, st.Term, st.Term.Tag())
	}
	if h, ok := c.holders[st.Term]; ok && h != sn.id {
		c.violate(KindTwoCoordinators, "two coordinators in term %s: %s and %s", st.Term, h, sn.id)
	}
	c.holders[st.Term] = sn.id
	if sn.node.Config().QuorumSize > 0 {
		c.checkOverlap(sn.id, st.Term)
		c.checkQuorum(sn)
	}
}

// checkOverlap: with the guard, state coordinator means a confirmed lease
// (core.Node.Status); two at once is what the guard exists to prevent.
func (c *Checker) checkOverlap(id string, t core.Term) {
	if _, was := c.confirmed[id]; !was {
		for o, ot := range c.confirmed {
			if o != id {
				c.violateOnce(KindConfirmedOverlap, minMax(o, id)+"/"+t.String(),
					"two confirmed coordinators at once: %s (term %s) and %s (term %s)", o, ot, id, t)
				break
			}
		}
	}
	c.confirmed[id] = t
}

func minMax(a, b string) string {
	if core.CompareID(a, b) > 0 {
		a, b = b, a
	}
	return a + "," + b
}

func (c *Checker) checkQuorum(sn *simNode) {
	cfg := sn.node.Config()
	until := c.splitAt + int64(cfg.QuorumLease+1)*c.s.cfg.TickMs
	if e, ok := c.splitEnd[sn.id]; ok {
		// A round sent before the change asked for a lease until e:
		// acknowledged by a majority, it holds until then (one tick for
		// the rounding, as above).
		until = max(until, e+c.s.cfg.TickMs)
	}
	if c.s.now <= until {
		return
	}
	reach := 0
	for _, o := range c.s.nodes {
		if o.up && (o == sn || c.s.connected(sn.id, o.id)) {
			reach++
		}
	}
	if reach < cfg.QuorumSize/2+1 {
		c.violateOnce(KindMinority, sn.id+"/"+fmt.Sprint(c.splitAt),
			"node %s is coordinator on a side of %d nodes, below a majority of %d", sn.id, reach, cfg.QuorumSize)
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
func (c *Checker) CheckLiveness(boundMs int64, wantHighest bool) bool {
	c.s.triggers = nil // faults have stopped: disarm what never fired
	if c.s.live() == 0 || c.s.highestLiveVoter() == "" {
		return true // nobody is left to agree, or nobody may lead
	}
	c.convergeViews()
	if q := c.s.cfg.Core.QuorumSize; q > 0 && c.s.liveVoters() < q/2+1 {
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
		best := c.s.highestLiveVoter()
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
// QuorumSize (non-voters never count toward one), nothing is required.
func (c *Checker) CheckMajority(boundMs int64) bool {
	c.s.triggers = nil
	q := c.s.cfg.Core.QuorumSize
	maj := c.s.ConnectedMajority()
	voters := 0
	for _, id := range maj {
		if p, _ := c.s.member(id).node.Roster().Get(id); !p.NonVoter {
			voters++
		}
	}
	if q == 0 || voters < q/2+1 {
		c.s.tracef("check majority: no connected majority of voters (%v); nothing required", maj)
		return true
	}
	c.convergeViews()
	c.s.tracef("check majority: (%s)", strings.Join(maj, ","))
	in := map[string]bool{}
	for _, id := range maj {
		in[id] = true
	}
	agreed := func() (core.Status, bool) {
		var first core.Status
		for i, id := range maj {
			sn := c.s.member(id)
			if !sn.up { // crashed by a late trigger: judge the rest
				continue
			}
			st := sn.node.Status()
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
		if _, ok := agreed(); ok {
			return true
		}
		if c.s.now >= end || c.s.stopped {
			st, _ := agreed()
			c.violate(KindMajorityLeaderless, "connected majority (%s) without one confirmed coordinator of its own %dms after faults stopped (e.g. node %s: state %s coordinator %s)",
				strings.Join(maj, ","), boundMs, st.ID, st.State, orNone(st.Coordinator))
			return false
		}
		c.s.RunFor(min(c.s.cfg.TickMs, end-c.s.now))
	}
}

func (s *Sim) highestLiveVoter() string {
	var best core.Peer
	found := false
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		r := sn.node.Roster()
		p, _ := r.Get(sn.id)
		if p.NonVoter {
			continue
		}
		if !found || p.Rank().Compare(best.Rank()) > 0 {
			best, found = p, true
		}
	}
	return best.ID
}

// liveVoters counts the live nodes that are voters.
func (s *Sim) liveVoters() int {
	n := 0
	for _, sn := range s.nodes {
		if p, _ := sn.node.Roster().Get(sn.id); sn.up && !p.NonVoter {
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
