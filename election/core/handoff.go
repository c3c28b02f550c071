package core

import (
	"errors"
	"fmt"
)

// Hand-off (docs/design.md, "Hand-off"): a coordinator that gives up the
// role (Resign, TransferTo, a preemption request, a lapsed lease) stops
// leading at once, then waits for its driver to say that the work it
// guarded has stopped (CompleteHandoff) or StopTimeout, whichever comes
// first. Only then does it release its followers (a last heartbeat with
// Released set, which frees them of the promise their acknowledgements
// made) and pass the role on, so the successor never starts leading while
// the old coordinator's work still runs.

// Errors of Resign and TransferTo.
var (
	ErrNotLeader   = errors.New("not the coordinator")
	ErrHandingOff  = errors.New("core: a hand-off is already under way")
	ErrNoSuccessor = errors.New("core: no live voter to hand off to")
)

// Resign hands the coordinator role on to the next voter by rating (each
// algorithm decides how), without waiting for failure detection. The node
// does not displace its successor afterwards.
func (n *Node) Resign() error {
	n.input()
	if err := n.canHandOff(); err != nil {
		return err
	}
	if !n.otherVoterAlive() {
		return ErrNoSuccessor
	}
	n.beginHandoff("", false, true)
	return nil
}

// TransferTo hands the role to the member id, which declares at once. With
// PreemptAlways a voter ranked above id may then displace it, as the bully
// rule says.
func (n *Node) TransferTo(id string) error {
	n.input()
	if err := n.canHandOff(); err != nil {
		return err
	}
	p, ok := n.view.r.Get(id)
	switch {
	case id == n.self.ID:
		return fmt.Errorf("core: TransferTo(%q): already the coordinator", id)
	case !ok:
		return fmt.Errorf("core: TransferTo(%q): not a member", id)
	case p.NonVoter:
		return fmt.Errorf("core: TransferTo(%q): a non-voter never leads", id)
	case !n.view.alive(id):
		return fmt.Errorf("core: TransferTo(%q): not alive in this member's view", id)
	}
	n.beginHandoff(id, true, true)
	return nil
}

func (n *Node) canHandOff() error {
	switch {
	case n.hand.handingOff:
		return ErrHandingOff
	case n.coordinator != n.self.ID:
		return ErrNotLeader
	}
	return nil
}

// beginHandoff stops leading now; the role passes on in CompleteHandoff
// (pass false: nobody is named, the followers elect).
func (n *Node) beginHandoff(to string, direct, pass bool) {
	n.hand.yielded = true
	n.hand.setYieldTo("")
	n.hand.handingOff, n.hand.handoffDirect, n.hand.handoffPass = true, direct, pass
	n.hand.setHandoffTo(to)
	n.hand.setHandoffEnd(n.now + n.cfg.StopTimeout)
	n.unfollow()
	n.setState(StateLost)
	if n.cfg.StopTimeout == 0 {
		n.CompleteHandoff()
	}
}

// HandoffPending reports a hand-off that waits for CompleteHandoff: the
// node has stopped leading and will pass the role on once its driver says
// that the leader's work has stopped.
func (n *Node) HandoffPending() bool { return n.hand.handingOff }

// CompleteHandoff passes the role on: it releases the followers and hands
// over as Resign or TransferTo asked. Called by the driver once the work
// the old leadership guarded has stopped; the node calls it itself after
// StopTimeout.
func (n *Node) CompleteHandoff() {
	n.input()
	if !n.hand.handingOff {
		return
	}
	n.hand.handingOff = false
	// The releases carry the term the followers follow: the rings' resign
	// below moves this node to the successor's election term (the
	// active/relay ring's has no tag, and a heartbeat whose term does not
	// name its sender is dropped, so its followers never heard the
	// release and waited out their detectors instead).
	released := n.term
	if n.hand.handoffPass {
		// The successor first: it declares at once, and its announcement
		// then travels beside the releases below instead of after them. A
		// node sends its messages one after another (a TCP connection
		// each in the runtime); behind n releases, the successor's RESIGN
		// waited so long in a large cluster that the released followers,
		// knowing no coordinator, would elect meanwhile (a storm at
		// every preemption).
		n.enter().resign()
	}
	for k := n.view.r.Len() - 1; k >= 0; k-- { // the watchers first, as bully.win
		if p := n.view.r.ByRank(k); p.ID != n.self.ID && n.view.alive(p.ID) {
			n.send(Message{Type: MsgHeartbeat, To: p.ID, Term: released, Coordinator: n.self.ID, Released: true,
				Abdicated: !n.hand.handoffPass, Seq: n.det.hbSeq})
		}
	}
}

// tickHandoff completes a hand-off the driver did not complete in time,
// and forgets the ticks that have passed (the release, the preemption
// wait: every reader reads a past tick as it reads 0; the hand-off's end
// once it is over), so that the rest of a node's handoff goes once none
// is ahead.
func (n *Node) tickHandoff() {
	if n.hand.handingOff && n.now >= n.hand.handoffEnd() {
		n.CompleteHandoff()
	}
	n.hand.forget(n.now)
}

// forget drops the ticks of h's rest that have passed at now (skip does
// it too, so that Skip(k) leaves what k Ticks leave).
func (h *handoff) forget(now int) {
	r := h.rest
	if r == nil {
		return
	}
	if r.releaseDue != 0 && now >= r.releaseDue {
		h.setReleaseDue(0)
	}
	if r.preemptAfter != 0 && now >= r.preemptAfter {
		h.setPreemptAfter(0)
	}
	if r.handoffEnd != 0 && !h.handingOff {
		h.setHandoffEnd(0)
	}
}

// onReleased: the coordinator this node followed stepped down. When it
// named no successor (Abdicated), the followers elect at
// once, as if their detectors had given up on it.
func (n *Node) onReleased(m Message) {
	n.guard.forgetPromise(m.Term)
	if n.cfg.Algorithm != Bully && !m.Abdicated && n.term == m.Term &&
		(n.coordinator == m.From || n.coordinator == "") {
		// The old coordinator opened its successor's lap as it released
		// us (CompleteHandoff; a node that heard the lap's newer term
		// first follows nobody already): wait for that lap to come this
		// far, as a member doubting a COORDINATOR lap does.
		n.unfollow()
		n.awaitSuccessor(m.From)
		return
	}
	if n.coordinator != m.From || n.term != m.Term {
		return
	}
	if m.Abdicated {
		n.coordinatorFailed(CauseHandoff)
		return
	}
	n.unfollow()
	if n.cfg.Algorithm == Bully {
		n.awaitSuccessor(m.From)
	}
}

// awaitSuccessor: this follower was released by from's hand-off; it
// elects only once the successor's word can have reached it (releaseDue):
// as many hops as lie between them at the measured round trip, plus K
// heartbeat intervals, at most a lap's timeout (doubtTicks).
//
// In the rings the hops are those of the lap the old coordinator opened
// from its own place as it released us. In bully they are this node's
// rank distance from the top: the successor announces itself highest-rated
// first (bully.win), one message after another (a TCP connection each in
// the runtime), while the releases are heartbeats (UDP), which arrive
// first. After only K heartbeat intervals every ring member that the lap
// had not reached yet would start a lap of its own, hundreds at once at
// n = 1,000, and the bully members low in the ranking would elect while
// the announcement was still on its way down. The successor's watchers,
// just below it, still elect after about K intervals if it fails.
func (n *Node) awaitSuccessor(from string) {
	r := n.view.r
	self := r.Index(n.self.ID)
	var hops int
	if n.cfg.Algorithm == Bully {
		hops = r.Len() - 1 - r.RankOf(self)
	} else {
		f := r.Index(from)
		hops = lapHops(f, f, self, r.Len())
	}
	n.hand.setReleaseDue(n.now + doubtTicks(n, hops))
}

// maybePreempt: this voter outranks the coordinator by the preemption
// policy (the bully rule, docs/algorithms.md, bully step 5). In Textbook mode
// without the guard it starts an election, as the text says. Otherwise it
// asks the coordinator to hand the role over (MsgPreempt), so that the old
// coordinator has stopped before the new one starts; with the guard (and
// in the rings) only after a preemption check has shown that it reaches a
// majority.
func (n *Node) maybePreempt() {
	if n.self.NonVoter || n.hand.yielded || n.electing || n.pv.active || n.hand.handingOff || n.guard.backingOff(n.now) ||
		n.coordinator == "" || n.coordinator == n.self.ID || n.now < n.hand.preemptAfter() {
		return
	}
	c, ok := n.view.r.Get(n.coordinator)
	if !ok || !n.outranks(n.self, c) {
		return
	}
	rings := n.cfg.Algorithm != Bully
	switch {
	case n.guard.on() || rings:
		// The rings check in every mode, with the guard or without, and
		// bully with the guard in both modes: a member that reaches only
		// a minority would otherwise take the role, lose the others'
		// heartbeats (or, with the guard, never gather its lease) and be
		// replaced, over and over. The check passed, the
		// member asks the coordinator to hand over, in Textbook mode too.
		n.beginPreVote(preVotePreempt, "")
	case n.cfg.Mode != View:
		n.startElection(CausePreempt)
	default:
		n.sendPreempt()
	}
}

// onPreempt: a voter that outranks this coordinator asks for the role.
func (n *Node) onPreempt(m Message) {
	p, ok := n.view.r.Get(m.From)
	switch {
	case n.coordinator != n.self.ID || n.hand.handingOff:
		n.drop(DropUnexpected)
	case !ok || p.NonVoter || !n.outranks(p, n.self):
		n.drop(DropOrder)
	default:
		n.beginHandoff(m.From, true, true)
		n.hand.yielded = false // displaced, not resigned: it may displace in turn
	}
}

// outranks reports whether a displaces coordinator c by the policy.
func (n *Node) outranks(a, c Peer) bool {
	switch n.cfg.Preemption {
	case PreemptNever:
		return false
	case PreemptMargin:
		return a.Rating > c.Rating+n.cfg.PreemptMargin
	}
	return a.Rank().Compare(c.Rank()) > 0
}

// The readers and setters of handoff's rest: zero without it; a setter
// makes it for a value other than zero and lets it go once all is zero.

func (h *handoff) handoffTo() string {
	if h.rest == nil {
		return ""
	}
	return h.rest.handoffTo
}

func (h *handoff) handoffEnd() int {
	if h.rest == nil {
		return 0
	}
	return h.rest.handoffEnd
}

func (h *handoff) yieldTo() string {
	if h.rest == nil {
		return ""
	}
	return h.rest.yieldTo
}

func (h *handoff) releaseDue() int {
	if h.rest == nil {
		return 0
	}
	return h.rest.releaseDue
}

func (h *handoff) preemptAfter() int {
	if h.rest == nil {
		return 0
	}
	return h.rest.preemptAfter
}

// times returns the rest for a write of something other than zero.
func (h *handoff) times() *handoffTimes {
	if h.rest == nil {
		h.rest = new(handoffTimes)
	}
	return h.rest
}

// tidy lets the rest go once all of it is zero.
func (h *handoff) tidy() {
	if h.rest != nil && *h.rest == (handoffTimes{}) {
		h.rest = nil
	}
}

func (h *handoff) setHandoffTo(v string) {
	if v != "" || h.rest != nil {
		h.times().handoffTo = v
		h.tidy()
	}
}

func (h *handoff) setHandoffEnd(v int) {
	if v != 0 || h.rest != nil {
		h.times().handoffEnd = v
		h.tidy()
	}
}

func (h *handoff) setYieldTo(v string) {
	if v != "" || h.rest != nil {
		h.times().yieldTo = v
		h.tidy()
	}
}

func (h *handoff) setReleaseDue(v int) {
	if v != 0 || h.rest != nil {
		h.times().releaseDue = v
		h.tidy()
	}
}

func (h *handoff) setPreemptAfter(v int) {
	if v != 0 || h.rest != nil {
		h.times().preemptAfter = v
		h.tidy()
	}
}
