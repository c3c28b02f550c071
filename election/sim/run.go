package sim

import "github.com/coordelect/coordelect/election/core"

// CrashBefore takes nodes down before the run starts: they are down, and in
// View mode every live view already holds them dead, without anyone having
// noticed a failure yet. Call it before Bootstrap.
func (s *Sim) CrashBefore(ids ...string) error {
	for _, id := range ids {
		sn, ok := s.find(id)
		if !ok {
			return errUnknown("crash", id)
		}
		s.takeQuiet(sn)
		sn.up = false
		sn.last, sn.leads = core.Status{ID: id}, false
		if s.named() {
			for i := range s.groups[sn.idx].names {
				s.groups[sn.idx].names[i].last, s.groups[sn.idx].names[i].leads = core.Status{ID: id}, false
			}
		}
	}
	if s.cfg.Mode != core.View {
		return nil
	}
	for _, o := range s.nodes {
		if o.up {
			for _, id := range ids {
				if s.named() {
					s.inputGroup(o).PeerDown(id)
				} else {
					s.input(o).PeerDown(id)
				}
			}
			s.flush(o)
		}
	}
	return nil
}

// RunFor runs events for ms virtual milliseconds.
func (s *Sim) RunFor(ms int64) {
	end := s.now + ms
	for s.queue.Len() > 0 && s.queue.peekAt() <= end {
		s.Step()
	}
	s.now = end
}

// Settle runs until the cluster is settled (every live node reports the
// same coordinator, nobody is electing and no election message is in
// flight) or until maxMs virtual milliseconds have passed. It reports
// whether the cluster settled. With names (whose agreement costs a look
// at every name of every member) it looks once per virtual millisecond,
// after the events of the one before.
func (s *Sim) Settle(maxMs int64) bool {
	end := s.now + maxMs
	looked := int64(-1)
	for {
		if s.names == nil || (s.now != looked && (s.queue.Len() == 0 || s.queue.peekAt() != s.now)) {
			looked = s.now
			if s.Settled() {
				return true
			}
		}
		if s.queue.Len() == 0 || s.queue.peekAt() > end {
			s.now = max(s.now, end)
			return false
		}
		s.Step()
	}
}

// Settled reports whether every live node agrees on one coordinator, none
// is electing and no election message is in flight (with names: on each
// name).
func (s *Sim) Settled() bool {
	if s.InFlight() > 0 {
		return false
	}
	_, ok := s.Agreement()
	return ok
}

// Agreement returns the coordinator every live node reports, and whether
// they all report the same, non-empty one (and it is up and not electing).
// With names it reports whether every name is agreed so, and returns the
// status of a node on the first name that is not (AgreementOf says which
// coordinator each name agreed on).
func (s *Sim) Agreement() (core.Status, bool) {
	if s.named() {
		for ni := range s.names {
			if st, ok := s.agreement(ni); !ok {
				return st, false
			}
		}
		return s.agreement(0)
	}
	return s.agreement(0)
}

// AgreementOf is Agreement for one name; an unknown name is never agreed.
func (s *Sim) AgreementOf(name string) (core.Status, bool) {
	ni := s.nameIndex(name)
	if ni < 0 {
		return core.Status{}, false
	}
	return s.agreement(ni)
}

// agreement is Agreement for election ni.
func (s *Sim) agreement(ni int) (core.Status, bool) {
	var agreed core.Status
	first := true
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		n := s.nodeOf(sn, ni)
		st := n.Status()
		if st.Coordinator == "" || n.Electing() {
			return st, false
		}
		if first {
			agreed, first = st, false
		} else if st.Coordinator != agreed.Coordinator || st.Term != agreed.Term {
			return st, false
		}
	}
	if first {
		return agreed, false
	}
	c, ok := s.find(agreed.Coordinator)
	return agreed, ok && c.up
}

// Statuses returns every node's status in ring order (a crashed node's
// State is sleep with no coordinator) and whether it is up; with names,
// in the first name (StatusesOf gives any).
func (s *Sim) Statuses() ([]core.Status, []bool) { return s.statuses(0) }

// StatusesOf is Statuses for one name (nil for an unknown name).
func (s *Sim) StatusesOf(name string) ([]core.Status, []bool) {
	ni := s.nameIndex(name)
	if ni < 0 {
		return nil, nil
	}
	return s.statuses(ni)
}

func (s *Sim) statuses(ni int) ([]core.Status, []bool) {
	sts := make([]core.Status, len(s.nodes))
	up := make([]bool, len(s.nodes))
	for i, sn := range s.nodes {
		up[i] = sn.up
		sts[i] = s.statusOf(sn, ni)
	}
	return sts, up
}

// ElectionMessages totals the election traffic sent (every type but
// heartbeats and their acks).
func (s *Sim) ElectionMessages() uint64 {
	var n uint64
	for t, c := range s.Sent {
		if core.MsgType(t).ElectionTraffic() {
			n += c
		}
	}
	return n
}

// ResetCounts zeroes the message counts (e.g. after a bootstrap).
func (s *Sim) ResetCounts() {
	s.Sent = [core.NumMsgTypes]uint64{}
	s.Lost = 0
}

type simError struct{ op, id string }

func (e simError) Error() string { return "sim: " + e.op + ": unknown node \"" + e.id + "\"" }

func errUnknown(op, id string) error { return simError{op, id} }
