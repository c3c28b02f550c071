package sim

import (
	"fmt"

	"github.com/coordelect/coordelect/election/core"
)

// Trigger crashes a node at a protocol moment instead of a time: when Node
// is about to send its Nth message of type Type (N counts from 1). The
// crash happens before any of that step's messages leave.
type Trigger struct {
	Node string
	Type core.MsgType
	Nth  int
	seen int
}

// CrashOn arms a trigger.
func (s *Sim) CrashOn(t Trigger) error {
	if _, ok := s.find(t.Node); !ok {
		return fmt.Errorf("sim: trigger on unknown node %q", t.Node)
	}
	if t.Nth < 1 {
		t.Nth = 1
	}
	s.triggers = append(s.triggers, t)
	return nil
}

// fire checks the armed triggers against a node's outgoing batch and
// crashes it if one matches. It reports whether the node crashed.
func (s *Sim) fire(sn *simNode, msgs []core.Message) bool {
	return s.fireCounting(sn, func(t core.MsgType) int {
		k := 0
		for _, m := range msgs {
			if m.Type == t {
				k++
			}
		}
		return k
	})
}

// fireCounting is fire for what count says a node is about to send: how
// many messages of each type.
func (s *Sim) fireCounting(sn *simNode, count func(core.MsgType) int) bool {
	for i := range s.triggers {
		t := &s.triggers[i]
		if t.Node != sn.id || t.seen >= t.Nth {
			continue
		}
		t.seen += count(t.Type)
		if t.seen >= t.Nth {
			s.tracef("%s: trigger (about to send %s #%d): crash", sn.id, t.Type, t.Nth)
			s.crash(sn)
			return true
		}
	}
	return false
}

// Crash stops a node at once: it sends nothing more and messages to it
// are lost.
func (s *Sim) Crash(id string) error {
	sn, ok := s.find(id)
	if !ok {
		return fmt.Errorf("sim: crash: unknown node %q", id)
	}
	if sn.up {
		s.crash(sn)
		s.check.after(sn)
	}
	return nil
}

func (s *Sim) crash(sn *simNode) {
	s.takeQuiet(sn)
	sn.up, sn.stalled = false, false
	sn.last, sn.leads = core.Status{ID: sn.id}, false
	if s.named() {
		for i := range s.groups[sn.idx].names {
			s.groups[sn.idx].names[i].last, s.groups[sn.idx].names[i].leads = core.Status{ID: sn.id}, false
		}
	}
	s.tracef("%s: crashed", sn.id)
	s.check.partitioned() // a crash shrinks majorities too
	s.check.gone(sn)
	// Memberlist's dead-node news reaches every member connected to anyone
	// who knows, and every live member probes the dead node itself: a cut
	// between the two does not keep it alive in anyone's view.
	s.gossip(sn.id, evDown, core.Peer{ID: sn.id}, true)
}

// Stall stops a node's process for ms virtual milliseconds, as SIGSTOP
// or a long GC pause does: it neither ticks nor sends, the messages and
// view changes that reach it wait (in order) until it resumes, and the
// membership views of the others do not change. When it resumes, its
// clock catches up as the runtime's loop does after a late wake
// (election/wake.go): the ticks before its next deadline count as on
// time (core.Node.Skip), the rest as one late step (core.Node.Advance);
// then it takes what waited.
func (s *Sim) Stall(id string, ms int64) error {
	sn, ok := s.find(id)
	if !ok {
		return fmt.Errorf("sim: stall: unknown node %q", id)
	}
	if ms <= 0 || ms > maxMs {
		return fmt.Errorf("sim: stall %s: ms = %d: want 1 to %d", id, ms, maxMs)
	}
	if !sn.up {
		return nil
	}
	if !sn.stalled {
		s.input(sn)
		s.flush(sn)
	}
	if s.stallEnd == nil {
		s.stallEnd = map[int32]int64{}
	}
	end := max(s.now+ms, s.stallEnd[sn.idx])
	s.stallEnd[sn.idx], sn.stalled = end, true
	s.check.stalled(sn)
	s.schedule(event{at: end, kind: evResume, node: sn.idx})
	s.tracef("%s: stalled until %dms", sn.id, end)
	return nil
}

// hold defers an input of a stalled node to the moment it resumes (after
// its evResume, which was scheduled first).
func (s *Sim) hold(sn *simNode, e event) {
	e.at = s.stallEnd[sn.idx]
	s.schedule(e)
}

// resume ends the stall of sn that ends at at (an earlier evResume of a
// stall that was extended, or of a node that crashed since, does
// nothing) and brings its clock to the present. It reports whether sn
// resumed; its Ready is to be flushed then.
func (s *Sim) resume(sn *simNode, at int64) bool {
	if !sn.stalled || s.stallEnd[sn.idx] != at {
		return false
	}
	sn.stalled = false
	delete(s.stallEnd, sn.idx)
	s.tracef("%s: resumed", sn.id)
	if k := s.phases[sn.phase].ticks - sn.synced; k > 0 {
		onTime := min(k, s.untilDue(sn)-1)
		if s.named() {
			g := s.groups[sn.idx]
			g.g.Skip(onTime)
			g.g.Advance(k - onTime)
		} else {
			sn.node.Skip(onTime)
			s.takeQuiet(sn)
			sn.node.Advance(k - onTime)
		}
		sn.synced += k
	}
	return true
}

// Restart brings a crashed node back with no state: it starts asleep and
// elects after its start-up window (docs/algorithms.md, "Start-up").
func (s *Sim) Restart(id string) error {
	sn, ok := s.find(id)
	if !ok {
		return fmt.Errorf("sim: restart: unknown node %q", id)
	}
	if sn.up {
		return nil
	}
	sn.inc++
	if err := s.boot(sn); err != nil {
		return err
	}
	s.tracef("%s: restarted", sn.id)
	if s.cfg.Mode == core.View {
		for _, o := range s.nodes {
			if !o.up || s.viewCut(sn.id, o.id) {
				if s.named() {
					s.inputGroup(sn).PeerDown(o.id)
				} else {
					s.input(sn).PeerDown(o.id)
				}
			}
		}
	}
	s.gossip(id, evUp, s.current(id), false)
	s.flush(sn)
	return nil
}

// current is a member as its own node knows itself now (its rating may have
// changed since the cluster was built).
func (s *Sim) current(id string) core.Peer {
	if sn := s.member(id); sn.up && s.named() {
		p, _ := s.roster.Get(id)
		p.Rating = s.groups[sn.idx].g.Rating()
		return p
	} else if sn.up {
		if p, ok := sn.node.Roster().Get(id); ok {
			return p
		}
	}
	p, _ := s.roster.Get(id)
	return p
}

// gossip delivers a view change about id to every other live node after
// the view delay (View mode only): to all of them when everyone can find
// it out for itself (a crash), else to those whose view can reach id.
func (s *Sim) gossip(id string, kind evKind, p core.Peer, everyone bool) {
	if s.cfg.Mode != core.View || s.cfg.ViewDelayMs < 0 {
		return
	}
	for _, o := range s.nodes {
		if o.id != id && o.up && (everyone || !s.viewCut(id, o.id)) {
			s.scheduleView(o, kind, p)
		}
	}
}

// scheduleView schedules one view change at one observer after the view
// delay (drawn per observer when ViewDelayMaxMs asks for uneven delays).
func (s *Sim) scheduleView(o *simNode, kind evKind, p core.Peer) {
	d := s.cfg.ViewDelayMs
	if span := s.cfg.ViewDelayMaxMs - s.cfg.ViewDelayMs; span > 0 {
		d += s.rng.Int64N(span + 1)
	}
	at := s.now + d
	s.viewUntil = max(s.viewUntil, at)
	s.schedule(viewEvent(at, kind, int(o.idx), p))
}

// SetViewDelay changes how long membership takes to report a change, from
// now on: min..max virtual ms (max <= min: always min).
func (s *Sim) SetViewDelay(minMs, maxMs int64) {
	s.cfg.ViewDelayMs, s.cfg.ViewDelayMaxMs = minMs, maxMs
}

// Partition splits the cluster: nodes in different groups cannot exchange
// messages. Nodes not named form one more group. In View mode each side's
// views drop the other side after ViewDelayMs.
func (s *Sim) Partition(groups ...[]string) error {
	s.group, s.ring = map[string]int{}, nil
	for g, ids := range groups {
		for _, id := range ids {
			if _, ok := s.find(id); !ok {
				return fmt.Errorf("sim: partition: unknown node %q", id)
			}
			s.group[id] = g + 1
		}
	}
	s.tracef("partition %v", groups)
	s.check.partitioned()
	s.viewSweep()
	return nil
}

// Heal reconnects every node; in View mode views see everyone live again.
func (s *Sim) Heal() {
	s.group, s.ring, s.blocked = map[string]int{}, nil, nil
	s.tracef("heal")
	s.check.partitioned()
	s.viewSweep()
}

// viewSweep tells every live node, after the view delay, which of the
// others it can and cannot reach.
func (s *Sim) viewSweep() {
	if s.cfg.Mode != core.View || s.cfg.ViewDelayMs < 0 {
		return
	}
	for _, a := range s.nodes {
		for _, b := range s.nodes {
			if a == b || !a.up || !b.up {
				continue
			}
			kind := evUp
			if s.viewCut(a.id, b.id) {
				kind = evDown
			}
			s.scheduleView(a, kind, s.current(b.id))
		}
	}
}

// cut reports whether a partition or a block drops messages from a to b.
func (s *Sim) cut(a, b string) bool {
	if _, ok := s.blocked[[2]string{a, b}]; ok {
		return true
	}
	return s.split(a, b)
}

// split reports whether a partition (groups or a majorities ring)
// separates a and b; it is symmetric.
func (s *Sim) split(a, b string) bool {
	if s.ring != nil {
		d := s.ring[a] - s.ring[b]
		if d < 0 {
			d = -d
		}
		return min(d, len(s.ring)-d) > s.reach
	}
	return s.group[a] != s.group[b]
}

// viewCut reports whether a's membership view holds b unreachable: a
// partition separates them, or a block either way that shows in views
// (memberlist's probe needs the round trip).
func (s *Sim) viewCut(a, b string) bool {
	return s.split(a, b) || s.blocked[[2]string{a, b}] || s.blocked[[2]string{b, a}]
}

// connected reports whether messages go both ways between a and b.
func (s *Sim) connected(a, b string) bool { return !s.cut(a, b) && !s.cut(b, a) }

// Block drops every message from one node to another, one way, until
// Heal: a node that stops hearing the coordinator while everyone else
// does (a starved process, a one-way loss). In View mode both nodes'
// views drop each other after the view delay, as memberlist's failed
// probes do; BlockQuiet leaves the views alone (memberlist's indirect
// probes through a third member can keep both alive).
func (s *Sim) Block(from, to string) error { return s.block(from, to, true) }

// BlockQuiet is Block without the view change.
func (s *Sim) BlockQuiet(from, to string) error { return s.block(from, to, false) }

func (s *Sim) block(from, to string, inView bool) error {
	for _, id := range []string{from, to} {
		if _, ok := s.find(id); !ok {
			return fmt.Errorf("sim: block: unknown node %q", id)
		}
	}
	if from == to {
		return nil
	}
	if s.blocked == nil {
		s.blocked = map[[2]string]bool{}
	}
	k := [2]string{from, to}
	s.blocked[k] = s.blocked[k] || inView
	if inView {
		s.tracef("block %s -> %s", from, to)
	} else {
		s.tracef("block %s -> %s (views unchanged)", from, to)
	}
	s.check.partitioned() // a block can shrink a coordinator's majority
	if inView && s.cfg.Mode == core.View && s.cfg.ViewDelayMs >= 0 {
		for _, p := range [][2]*simNode{{s.member(from), s.member(to)}, {s.member(to), s.member(from)}} {
			if p[0].up && p[1].up {
				s.scheduleView(p[0], evDown, core.Peer{ID: p[1].id})
			}
		}
	}
	return nil
}

// Forge puts a frame on the network that no member sent: m.From is only
// what the frame claims. It arrives after the usual delay whatever the
// partitions (the forger has its own path), is never lost, duplicated or
// counted as sent, and is not a protocol member's act for the checker.
func (s *Sim) Forge(m core.Message) error { return s.forge(m, true) }

// forge is Forge, tracing the frame only if trace is set. With names a
// frame is a batch (the script's forge builds one: forgeBatch).
func (s *Sim) forge(m core.Message, trace bool) error {
	if s.named() {
		return fmt.Errorf("sim: forge: the cluster has names: a frame is a batch of (name, message) pairs")
	}
	to, ok := s.find(m.To)
	if !ok {
		return fmt.Errorf("sim: forge: unknown target %q", m.To)
	}
	s.Forged++
	if trace {
		s.tracef("forged %s -> %s %s term=%s coordinator=%s", orNone(m.From), m.To, m.Type, m.Term, orNone(m.Coordinator))
	}
	d := s.cfg.DelayMin
	if span := s.cfg.DelayMax - s.cfg.DelayMin; span > 0 {
		d += s.rng.Int64N(span + 1)
	}
	s.schedule(event{at: s.now + d, kind: evDeliver, node: to.idx, msg: m, inc: to.inc, forged: true})
	return nil
}

// MajoritiesRing is Jepsen's non-transitive partition: the nodes, in the
// given order, form a ring, and each reaches only itself and its nearest
// neighbours on both sides, a majority in all, so that every node sees a
// majority but no two see the same one. Every member must be listed.
func (s *Sim) MajoritiesRing(order []string) error {
	if len(order) != len(s.nodes) {
		return fmt.Errorf("sim: majorities ring: %d nodes listed, want all %d", len(order), len(s.nodes))
	}
	ring := make(map[string]int, len(order))
	for i, id := range order {
		if _, ok := s.find(id); !ok {
			return fmt.Errorf("sim: majorities ring: unknown node %q", id)
		}
		if _, dup := ring[id]; dup {
			return fmt.Errorf("sim: majorities ring: node %q listed twice", id)
		}
		ring[id] = i
	}
	s.group, s.ring = map[string]int{}, ring
	s.reach = (len(order)/2 + 1) / 2 // itself and reach on each side: a majority
	s.tracef("majorities ring %v", order)
	s.check.partitioned()
	s.viewSweep()
	return nil
}

// Detect tells a node that the coordinator is not working.
func (s *Sim) Detect(id string) error { return s.poke(id, (*core.Node).Detect) }

// Resign asks a node to hand off its coordinator role.
func (s *Sim) Resign(id string) error { return s.poke(id, func(n *core.Node) { n.Resign() }) }

// SetRating changes a node's rating; in View mode the others learn it
// after the view delay, as from membership metadata. With names every
// member learns it at once in either mode (group.Group.PeerRating): the
// spread placement needs every member to know every member's weight.
func (s *Sim) SetRating(id string, r int64) error {
	if s.named() {
		sn, ok := s.find(id)
		if !ok {
			return fmt.Errorf("sim: unknown node %q", id)
		}
		if !sn.up {
			s.tracef("%s: down, ignored", id)
			return nil
		}
		s.inputGroup(sn).SetRating(r)
		s.flush(sn)
		for _, o := range s.nodes {
			if o.id != id && o.up {
				s.inputGroup(o).PeerRating(id, r)
				s.flush(o)
			}
		}
		return nil
	}
	if err := s.poke(id, func(n *core.Node) { n.SetRating(r) }); err != nil || !s.member(id).up {
		return err
	}
	for _, o := range s.nodes {
		if o.id != id && o.up && s.cfg.Mode == core.View {
			s.input(o).PeerRating(id, r)
			s.flush(o)
		}
	}
	return nil
}

func (s *Sim) poke(id string, fn func(*core.Node)) error {
	if s.named() {
		return s.pokeNames(id, "", fn)
	}
	sn, ok := s.find(id)
	if !ok {
		return fmt.Errorf("sim: unknown node %q", id)
	}
	if !sn.up {
		s.tracef("%s: down, ignored", id)
		return nil
	}
	fn(s.input(sn))
	s.flush(sn)
	return nil
}

// SetNetwork changes loss, duplication and reordering from now on.
func (s *Sim) SetNetwork(loss, dup, reorder float64) {
	s.cfg.Loss, s.cfg.Dup, s.cfg.Reorder = loss, dup, reorder
}

// SetDelay changes the one-way message delay from now on: lo..hi virtual
// ms, with 0 <= lo <= hi <= an hour (Config.DelayMin and DelayMax).
// Messages in flight keep theirs; on FIFO links a message still arrives
// after the one sent before it on its link.
func (s *Sim) SetDelay(lo, hi int64) error {
	if lo < 0 || hi < lo || hi > maxMs {
		return fmt.Errorf("sim: delay %d-%d: want 0 <= min <= max <= %d", lo, hi, maxMs)
	}
	s.cfg.DelayMin, s.cfg.DelayMax = lo, hi
	return nil
}
