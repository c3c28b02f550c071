package election_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/membership"
)

// realNamed runs names on the members of a realCluster.
type realNamed struct {
	*realCluster
	els map[string]map[string]*election.Election // member -> name -> election
}

func (c *realNamed) add(id string, opts election.ElectionOptions, names []string) {
	c.t.Helper()
	if c.els[id] == nil {
		c.els[id] = map[string]*election.Election{}
	}
	for _, name := range names {
		el, err := c.nodes[id].el.Election(name, opts)
		if err != nil {
			c.t.Fatalf("%s: %v", id, err)
		}
		c.els[id][name] = el
	}
}

// agree reports the leader and term every member in ids that runs name
// reports, "" while they differ, the leader does not say it leads, or
// some member's view ranks another first (the spread placement settles
// as the members learn of each other).
func (c *realNamed) agree(name string, ids []string) (string, uint64) {
	leader, term, first := "", uint64(0), true
	for _, id := range ids {
		el := c.els[id][name]
		if el == nil {
			continue
		}
		l, tm, ok := el.Leader()
		if !ok || !first && (l != leader || tm != term) {
			return "", 0
		}
		leader, term, first = l, tm, false
	}
	if el := c.els[leader][name]; el == nil || !el.IsLeader() {
		return "", 0
	}
	for _, id := range ids {
		if el := c.els[id][name]; el != nil && topRanked(el.Status().Members) != leader {
			return "", 0 // the placement has not settled: the leader will move
		}
	}
	return leader, term
}

// topRanked returns the live voter of highest rank (rating, then ID) of
// a name's member list: the one its placement elects.
func topRanked(ms []election.Member) string {
	var top core.Peer
	for _, m := range ms {
		p := core.Peer{ID: m.ID, Rating: m.Rating}
		if m.Alive && !m.NonVoter && (top.ID == "" || p.Rank().Compare(top.Rank()) > 0) {
			top = p
		}
	}
	return top.ID
}

func (c *realNamed) waitAll(within time.Duration, names, ids []string) (map[string]string, map[string]uint64) {
	c.t.Helper()
	leaders, terms := map[string]string{}, map[string]uint64{}
	electiontest.Eventually(c.t, within, func() bool {
		for _, name := range names {
			l, tm := c.agree(name, ids)
			if l == "" {
				return false
			}
			leaders[name], terms[name] = l, tm
		}
		return true
	}, func() string {
		s := ""
		for _, name := range names {
			if l, _ := c.agree(name, ids); l == "" {
				s += "\n  " + name + ":"
				for _, id := range ids {
					if el := c.els[id][name]; el != nil {
						st := el.Status()
						s += fmt.Sprintf(" %s=%s/%q@%v(top %s)", id, st.State, st.Coordinator, core.Term(st.Term), topRanked(st.Members))
					}
				}
			}
		}
		return s
	})
	return leaders, terms
}

// TestMemberlistNamedElections: four real members (memberlist over
// loopback) and one of an older build that runs the unnamed election
// alone (membership.Config.UnnamedOnly: it announces no named elections,
// and gets frames, not batches) run 20 spread names: every name elects
// among the four, the older member leads the unnamed election (its
// rating is the highest); a member killed without leaving (its elector
// and its node stop at once) hands its names to the survivors, which
// agree on each in a higher term, and the other names do not move.
func TestMemberlistNamedElections(t *testing.T) {
	if testing.Short() {
		t.Skip("real memberlist cluster")
	}
	c := &realNamed{realCluster: newRealCluster(t, nil), els: map[string]map[string]*election.Election{}}
	c.memb = func(mc *membership.Config) {
		if mc.Name == "old" {
			mc.UnnamedOnly = true
		}
	}
	ids := []string{"m1", "m2", "m3", "m4"}
	for _, id := range ids {
		c.start(id, 1, false)
	}
	c.start("old", 10, false)
	names := jobs(20)
	for _, id := range ids {
		c.add(id, election.ElectionOptions{Placement: election.PlaceSpread}, names)
	}
	if _, err := c.nodes["old"].el.Election("x", election.ElectionOptions{}); err == nil {
		t.Error("a member with UnnamedOnly started a named election")
	}
	leaders, terms := c.waitAll(60*time.Second, names, ids)
	load := perMember(leaders)
	t.Logf("leaders per member: %v", load)
	if load["old"] > 0 {
		t.Errorf("the older member leads %d names", load["old"])
	}
	electiontest.Eventually(t, 10*time.Second, func() bool {
		l, _, ok := electiontest.Agree(c.ec.Electors()...)
		return ok && l == "old"
	}, func() string { return electiontest.Describe(c.ec.Electors()...) })

	victim := ""
	for _, id := range ids {
		if load[id] > 0 && (victim == "" || load[id] > load[victim]) {
			victim = id
		}
	}
	t.Logf("killing %s, which leads %d names", victim, load[victim])
	start := time.Now()
	if err := c.ec.Crash(victim); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, victim)
	var rest []string
	for _, id := range ids {
		if id != victim {
			rest = append(rest, id)
		}
	}
	after, terms2 := c.waitAll(60*time.Second, names, rest)
	t.Logf("every name agreed again, the killed member dead in every view, %v after the kill: %v", time.Since(start).Round(time.Millisecond), perMember(after))
	spurious := 0
	for _, name := range names {
		switch {
		case leaders[name] == victim && terms2[name] <= terms[name]:
			t.Errorf("%s moved from %s to %s in term %v, not above %v", name, victim, after[name],
				core.Term(terms2[name]), core.Term(terms[name]))
		case leaders[name] != victim && after[name] != leaders[name]:
			t.Errorf("%s: %s@%v after the kill, was %s@%v", name, after[name], core.Term(terms2[name]),
				leaders[name], core.Term(terms[name]))
		case leaders[name] != victim && terms2[name] != terms[name]:
			// A heartbeat late on a loaded host (real time, the race
			// detector): the same leader is elected again.
			spurious++
		}
	}
	t.Logf("names the killed member did not lead that elected again (their leader kept): %d", spurious)
	if got := maps.Collect(func(yield func(string, int) bool) {
		for id, k := range perMember(after) {
			if !yield(id, k) {
				return
			}
		}
	}); got[victim] > 0 || got["old"] > 0 {
		t.Errorf("after the kill: %v", got)
	}
	for _, id := range rest {
		st := c.nodes[id].mem.Stats()
		t.Logf("%s: %d frames sent, %d received", id, st.Sent, st.Received)
	}
}
