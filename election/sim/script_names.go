package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// The scenario language's named elections (docs/scenarios.md, "Named
// elections").

// name NAME [placement=rating|spread] [abstain=(ID,...)] [quorum=S]:
// before "cluster", a name the cluster is built with; after it, a name
// every live member adds now (AddName).
func (sc *Script) name(a args) error {
	n, err := a.pos(0)
	if err != nil {
		return fmt.Errorf("want: name NAME [placement=rating|spread] [abstain=(ID,...)] [quorum=S]")
	}
	nm, err := nameArgs(n, a)
	if err != nil {
		return err
	}
	return sc.declare([]Name{nm})
}

// names count=K [prefix=P] [placement=rating|spread] [abstain=(ID,...)]
// [quorum=S]: K names P-0 .. P-(K-1) (prefix job), each as "name" would
// declare it.
func (sc *Script) namesCmd(a args) error {
	k, err := a.int("count", 0)
	if err != nil {
		return err
	}
	if k < 1 || k > maxNames {
		return fmt.Errorf("count=%d: want 1 to %d", k, maxNames)
	}
	prefix := a.str("prefix", "job")
	var nms []Name
	for i := range k {
		nm, err := nameArgs(prefix+"-"+strconv.Itoa(i), a)
		if err != nil {
			return err
		}
		nms = append(nms, nm)
	}
	return sc.declare(nms)
}

// maxNames bounds one names command.
const maxNames = 100_000

// nameArgs reads a name's options.
func nameArgs(name string, a args) (Name, error) {
	nm := Name{Name: name, Abstain: a.kv["abstain"]}
	switch p := a.str("placement", "rating"); p {
	case "rating":
		nm.Placement = group.PlaceRating
	case "spread":
		nm.Placement = group.PlaceSpread
	default:
		return nm, fmt.Errorf("placement=%s: want rating or spread", p)
	}
	q, err := a.int("quorum", 0)
	if err != nil {
		return nm, err
	}
	if q < 0 {
		return nm, fmt.Errorf("quorum=%d: want 0 (the cluster's) or more", q)
	}
	nm.QuorumSize = q
	return nm, group.ValidateName(name)
}

// declare keeps names for the next cluster, or adds them to this one.
func (sc *Script) declare(nms []Name) error {
	if sc.sim == nil {
		for _, nm := range nms {
			for _, o := range sc.names {
				if o.Name == nm.Name {
					return fmt.Errorf("name %q: declared twice", nm.Name)
				}
			}
			sc.names = append(sc.names, nm)
		}
		return nil
	}
	for _, nm := range nms {
		if err := sc.sim.AddName(nm); err != nil {
			return err
		}
	}
	return nil
}

// statusNames: per name, one line when every live member agrees on a
// live coordinator ("NAME: coordinator=C term=T (all K live members
// agree)"), else one line per member ("NAME: ID: STATE coordinator=C
// term=T"); then how many names each member leads ("leaders: ID=K ...",
// "ID=down" for a crashed one). name=NAME: that name only.
func (sc *Script) statusNames(a args) error {
	s := sc.sim
	want := a.str("name", "")
	if want != "" && s.nameIndex(want) < 0 {
		return fmt.Errorf("name=%s: not a name of the cluster", want)
	}
	for ni, nm := range s.names {
		if want != "" && nm.Name != want {
			continue
		}
		sts, up := s.statuses(ni)
		if st, ok := s.agreement(ni); ok && s.statusOf(s.member(st.Coordinator), ni).State == core.StateCoordinator {
			sc.trace(fmt.Sprintf("%s: coordinator=%s term=%s (all %d live members agree)", nm.Name, st.Coordinator, st.Term, s.live()))
			continue
		}
		for i, st := range sts {
			if !up[i] {
				sc.trace(fmt.Sprintf("%s: %s: down", nm.Name, st.ID))
				continue
			}
			sc.trace(fmt.Sprintf("%s: %s: %s coordinator=%s term=%s", nm.Name, st.ID, st.State, orNone(st.Coordinator), st.Term))
		}
	}
	var b strings.Builder
	b.WriteString("leaders:")
	for i, k := range s.Leads() {
		if !s.nodes[i].up {
			fmt.Fprintf(&b, " %s=down", s.nodes[i].id)
			continue
		}
		fmt.Fprintf(&b, " %s=%d", s.nodes[i].id, k)
	}
	sc.trace(b.String())
	return nil
}

// okNames is "check"'s output with names and no violation: per name, the
// coordinator agreed on, or why none is required.
func (sc *Script) okNames() {
	s := sc.sim
	for ni, nm := range s.names {
		switch st, ok := s.agreement(ni); {
		case ok:
			sc.trace(fmt.Sprintf("%s: ok coordinator=%s term=%s", nm.Name, st.Coordinator, st.Term))
		case s.highestLiveVoter(ni) == "":
			sc.trace(fmt.Sprintf("%s: ok, no candidate alive", nm.Name))
		default:
			sc.trace(fmt.Sprintf("%s: ok, no coordinator (%d of %d candidates alive, quorum %d)", nm.Name, s.liveVoters(ni), s.candidates(ni), s.nodeQuorum(ni)))
		}
	}
}

// pickCoordNames is @coord with names: the live member that is
// coordinator of the most names (the first in ring order on a tie), else
// the coordinator most live members report over every name, else the
// first name's highest-ranked live candidate.
func (sc *Script) pickCoordNames() string {
	s := sc.sim
	best, most := "", 0
	for i, k := range s.Leads() {
		if k > most {
			best, most = s.nodes[i].id, k
		}
	}
	if best != "" {
		return best
	}
	votes := map[string]int{}
	top := ""
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		for ni := range s.names {
			if c := s.statusOf(sn, ni).Coordinator; c != "" && s.Up(c) {
				if votes[c]++; top == "" || votes[c] > votes[top] {
					top = c
				}
			}
		}
	}
	switch {
	case top != "":
		return top
	case s.highestLiveVoter(0) != "":
		return s.highestLiveVoter(0)
	}
	return s.nodes[0].id
}
