package election

import (
	"fmt"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// ReadinessTransport is an optional capability of a Transport that can tell
// that this node has not reached the cluster it was told to join
// (membership.Node implements it). Readiness reports it.
type ReadinessTransport interface {
	Transport
	// JoinProblem returns why this node has not reached the members it
	// was told to join, e.g. "alone: no seed reachable (...)"; "" once a
	// join has reached one, or when it was told to join none. It must not
	// block.
	JoinProblem() string
}

// Readiness says whether this node can serve: whether it knows a
// coordinator found together with the members it was told to join, and
// if not, why not. It is the document NewHandler serves at /readyz.
type Readiness struct {
	// Ready: this node's elector runs, it reached the members it was told
	// to join (ReadinessTransport), and it knows a coordinator (itself
	// included).
	Ready bool `json:"ready"`
	// Reasons are why it is not ready, the most fundamental first; empty
	// when it is. Each starts with a short tag: "stopped", "alone",
	// "waiting for expected members", "no quorum", "lone survivor",
	// "sitting out", "starting" or "electing", then the numbers behind it.
	Reasons []string `json:"reasons"`
	// Coordinator, Term and TermText are the coordinator this node
	// reports, from the same snapshot as Ready; "", 0 and "" when none.
	Coordinator string `json:"coordinator"`
	Term        uint64 `json:"term"`
	TermText    string `json:"term_text"`
}

// Readiness reports whether this node is ready to serve, and why not, from
// one snapshot of its status (Status) and what the Transport says of its
// join (ReadinessTransport). A node whose join has reached nobody is not
// ready even if it leads: it would lead a cluster of one.
func (e *Elector) Readiness() Readiness {
	st := e.Status()
	r := Readiness{Reasons: []string{}}
	if st.Coordinator != "" {
		r.Coordinator, r.Term, r.TermText = st.Coordinator, st.Term, TermText(st.Term)
	}
	if !e.running() {
		r.Reasons = append(r.Reasons, "stopped: the elector is not running")
		r.Coordinator, r.Term, r.TermText = "", 0, ""
		return r
	}
	if rt, ok := e.tr.(ReadinessTransport); ok {
		if why := rt.JoinProblem(); why != "" {
			r.Reasons = append(r.Reasons, why)
		}
	}
	if st.Coordinator == "" {
		r.Reasons = append(r.Reasons, e.noCoordinator(st))
	}
	r.Ready = len(r.Reasons) == 0
	return r
}

// noCoordinator says why a running node knows no coordinator: its hold
// (Status.Hold) first, then what the member list shows.
func (e *Elector) noCoordinator(st Status) string {
	su, h, q := st.Startup, st.Hold, e.cfg.QuorumSize
	voters := 0
	for _, m := range st.Members {
		if m.Alive && !m.NonVoter {
			voters++
		}
	}
	switch h.Reason {
	case core.HoldExpect:
		then := fmt.Sprintf("electing with those visible once ExpectWindow (%v) passes", e.cfg.ExpectWindow)
		if h.Found > 0 {
			then = fmt.Sprintf("no election before %d have been visible (Bootstrap is off)", h.Found)
		}
		return fmt.Sprintf("waiting for expected members: %d of %d voters visible (ExpectVoters); %s", h.Voters, h.Need, then)
	case core.HoldQuorum:
		return fmt.Sprintf("no quorum: %d of %d voters visible (QuorumSize), a coordinator needs %d", h.Voters, q, h.Need)
	case core.HoldSolo:
		return fmt.Sprintf("lone survivor: the other voters left at once; leading alone at %s unless one returns (SoloDelay %v)",
			h.Until.UTC().Format(time.RFC3339Nano), e.cfg.SoloDelay)
	case core.HoldPromise:
		return fmt.Sprintf("starting: a restarted voter keeps the promise it may have made until %s (QuorumLeaseMax)",
			h.Until.UTC().Format(time.RFC3339Nano))
	}
	switch {
	case q > 0 && voters < q/2+1:
		return fmt.Sprintf("no quorum: %d of %d voters visible (QuorumSize), a coordinator needs %d", voters, q, q/2+1)
	case st.SittingOut:
		return fmt.Sprintf("sitting out: fewer than %d of the QuorumSize %d answer this member", q/2+1, q)
	case su.Holding:
		return "starting: waiting for the member list to settle before electing"
	}
	return "electing: no coordinator known yet"
}

// running reports whether Run has started and not returned.
func (e *Elector) running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started && !e.closed
}

// TermText formats a term as a person reads it, "epoch.tag" (e.g. "2.4";
// core.Term.String): the form the logs, the demo's page and the JSON
// documents' term_text fields use; their term fields carry the raw
// uint64, the fencing token itself.
func TermText(term uint64) string { return core.Term(term).String() }
