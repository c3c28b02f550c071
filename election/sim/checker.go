package sim

import (
	"fmt"

	"github.com/coordelect/coordelect/election/core"
)

// Checker asserts the safety properties after every event:
//   - at most one coordinator per term, and a term names its winner (its
//     tag is the coordinator's tag);
//   - a node never goes back to a lower term (within one incarnation);
//   - with the quorum guard, no node acts as coordinator on a minority side
//     of a partition for longer than its lease.
//
// Liveness (agreement within a bound once faults stop) is checked by
// CheckLiveness, since only the caller knows when faults have stopped; it
// disarms crash triggers that have not fired.
type Checker struct {
	s          *Sim
	holders    map[core.Term]string
	lastTerm   map[string]core.Term
	lastInc    map[string]int64
	splitAt    int64 // virtual time of the last partition change
	Violations []string
}

func newChecker(s *Sim) *Checker {
	return &Checker{s: s, holders: map[core.Term]string{}, lastTerm: map[string]core.Term{}, lastInc: map[string]int64{}}
}

func (c *Checker) violate(format string, args ...any) {
	v := fmt.Sprintf("t=%dms: ", c.s.now) + fmt.Sprintf(format, args...)
	c.Violations = append(c.Violations, v)
	c.s.tracef("VIOLATION %s", v)
}

// partitioned records a change that can shrink a coordinator's majority (a
// partition or a crash): its lease may legitimately outlive it.
func (c *Checker) partitioned() { c.splitAt = c.s.now }

// after runs the safety checks for the node that just took a step.
func (c *Checker) after(sn *simNode) {
	if !sn.up {
		return
	}
	st := sn.node.Status()
	if c.lastInc[sn.id] != sn.inc {
		c.lastInc[sn.id], c.lastTerm[sn.id] = sn.inc, 0
	}
	if st.Term < c.lastTerm[sn.id] {
		c.violate("node %s went back from term %s to %s", sn.id, c.lastTerm[sn.id], st.Term)
	}
	c.lastTerm[sn.id] = st.Term
	if st.State != core.StateCoordinator {
		return
	}
	if st.Term.Tag() != core.Tag(sn.id) {
		c.violate("node %s is coordinator in term %s, which names tag %d", sn.id, st.Term, st.Term.Tag())
	}
	if h, ok := c.holders[st.Term]; ok && h != sn.id {
		c.violate("two coordinators in term %s: %s and %s", st.Term, h, sn.id)
	}
	c.holders[st.Term] = sn.id
	c.checkQuorum(sn)
}

func (c *Checker) checkQuorum(sn *simNode) {
	cfg := sn.node.Config()
	if cfg.QuorumSize == 0 || c.s.now-c.splitAt <= int64(cfg.LeaseTicks+1)*c.s.cfg.TickMs {
		return
	}
	reach := 0
	for _, o := range c.s.nodes {
		if o.up && !c.s.cut(sn.id, o.id) {
			reach++
		}
	}
	if reach < cfg.QuorumSize/2+1 {
		c.violate("node %s is coordinator on a side of %d nodes, below a majority of %d", sn.id, reach, cfg.QuorumSize)
	}
}

// CheckLiveness runs the cluster for at most boundMs and records a
// violation unless every live node then agrees on one live coordinator.
// With wantHighest it must also be the highest-ranked live voter (the bully
// guarantee under the default preemption policy).
//
// With the quorum guard on and fewer than a majority of QuorumSize alive,
// no coordinator is the right outcome: it then runs the whole bound and
// requires that no node reports one.
func (c *Checker) CheckLiveness(boundMs int64, wantHighest bool) bool {
	c.s.triggers = nil // faults have stopped: disarm what never fired
	if c.s.live() == 0 {
		return true // nobody is left to agree
	}
	if q := c.s.cfg.Core.QuorumSize; q > 0 && c.s.live() < q/2+1 {
		c.s.RunFor(boundMs)
		sts, up := c.s.Statuses()
		for i, st := range sts {
			if up[i] && st.Coordinator != "" {
				c.violate("node %s reports coordinator %s with %d of %d nodes alive", st.ID, st.Coordinator, c.s.live(), q)
				return false
			}
		}
		return true
	}
	end := c.s.now + boundMs
	for {
		if !c.s.Settle(end - c.s.now) {
			st, _ := c.s.Agreement()
			c.violate("no agreement within %dms after faults stopped (e.g. node %s: state %s coordinator %s)",
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
			c.violate("agreed on %s but the highest-rated live voter is %s", agreed.Coordinator, best)
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

func (s *Sim) live() int {
	n := 0
	for _, sn := range s.nodes {
		if sn.up {
			n++
		}
	}
	return n
}
