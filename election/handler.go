package election

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// StatusDocument is the JSON document NewHandler serves at /status: the
// shape `demo node` serves at its /status.
type StatusDocument struct {
	// Name is this node's ID.
	Name string `json:"name"`
	// State is the node's state: sleep, cand, lost, coordinator, active or
	// relay (core.State).
	State string `json:"state"`
	// Coordinator is the coordinator this node reports, "" when none.
	Coordinator string `json:"coordinator"`
	// Term is the coordinator's term (epoch<<32 | the winner's tag) when
	// there is one, else the highest term seen; TermText is the same term
	// as a person reads it, "epoch.tag" (TermText).
	Term     uint64 `json:"term"`
	TermText string `json:"term_text"`
	// Rating is this node's rating.
	Rating int64 `json:"rating"`
	// Algorithm is the election algorithm's name.
	Algorithm string `json:"algorithm"`
	// Startup is the start-up hold (Status.Startup), which a readiness
	// probe or an operator wants while no coordinator is known yet.
	Startup StatusStartup `json:"startup"`
	// Hold is what holds this node's election back (Status.Hold); absent
	// when nothing does.
	Hold *StatusHold `json:"hold,omitempty"`
	// Members lists this node and the members it knows.
	Members []StatusMember `json:"members"`
	// Elections lists the elections this node runs, the unnamed one
	// (DefaultName) first, when it runs named ones (Elector.Election);
	// absent otherwise. The fields above are the unnamed election's.
	Elections []StatusElection `json:"elections,omitempty"`
}

// StatusElection is one election in a StatusDocument.
type StatusElection struct {
	// Name is the election's name.
	Name string `json:"name"`
	// State is this node's state in it.
	State string `json:"state"`
	// Coordinator is the coordinator this node reports for it, "" when
	// none; Term and TermText its term (else the highest seen).
	Coordinator string `json:"coordinator"`
	Term        uint64 `json:"term"`
	TermText    string `json:"term_text"`
	// IsSelf reports that this node leads it.
	IsSelf bool `json:"is_self"`
	// Candidate reports that this node stands for it.
	Candidate bool `json:"candidate"`
}

// StatusHold is a hold in a StatusDocument (Status.Hold).
type StatusHold struct {
	// Reason is "expect", "quorum", "solo" or "promise" (core.HoldReason).
	Reason string `json:"reason"`
	// Voters is the live voters this node sees, itself included; Need is
	// how many the hold waits for (expect, quorum).
	Voters int `json:"voters"`
	Need   int `json:"need,omitempty"`
	// Until is when the hold ends by itself (solo, promise), RFC 3339.
	Until string `json:"until,omitempty"`
	// Why says it in words, as the log and /readyz do.
	Why string `json:"why"`
}

// StatusStartup is the start-up hold in a StatusDocument (core.Startup).
type StatusStartup struct {
	// Holding reports that the node still holds its first election back
	// (Config.ExpectVoters, Config.StartupDelay).
	Holding bool `json:"holding"`
	// Voters is the number of live voters it sees, itself included.
	Voters int `json:"voters"`
	// Expect is the number of voters it waits for (Config.ExpectVoters).
	Expect int `json:"expect"`
	// Short reports that Config.ExpectWindow passed with fewer than
	// Expect voters visible, and the node elected with those it saw.
	Short bool `json:"short"`
}

// StatusMember is one member in a StatusDocument.
type StatusMember struct {
	// Name is the member's ID.
	Name string `json:"name"`
	// Addr is the member's address, "" when the Transport does not say.
	Addr string `json:"addr"`
	// Rating is the member's rating.
	Rating int64 `json:"rating"`
	// Alive is false once the member left or was declared dead.
	Alive bool `json:"alive"`
}

// LeaderDocument is the JSON document NewHandler serves at /leader.
type LeaderDocument struct {
	// Coordinator is the coordinator this node reports, "" when none.
	Coordinator string `json:"coordinator"`
	// Term is its term, the fencing token; 0 when none. TermText is the
	// same term as "epoch.tag", "" when none.
	Term     uint64 `json:"term"`
	TermText string `json:"term_text"`
	// IsSelf reports that this node is the coordinator.
	IsSelf bool `json:"is_self"`
	// Payload is what the coordinator publishes (see
	// Elector.LeaderPayload), e.g. its service address.
	Payload string `json:"payload"`
}

// NewHandler returns an http.Handler that serves e's state:
//
//	GET /status   StatusDocument, 200
//	GET /leader   LeaderDocument: 200 while a coordinator is known, else 503
//	              (with coordinator ""); /leader?election=NAME for the
//	              named election NAME (404 when this node does not run it)
//	GET /healthz  200 "ok" while e runs (Run has started and not returned),
//	              else 503: a liveness probe
//	GET /readyz   Readiness as JSON: 200 when ready, else 503 with the
//	              reasons: a readiness probe
//
// Each document is built from one snapshot of e (Status, or the
// Leadership for /leader), so its fields agree with each other and with
// Check: a coordinator whose lease has run out is not reported as
// coordinator, even before its loop has noticed. Mount it under a prefix
// with http.StripPrefix. members, when not nil, lists the members for
// /status (membership.Node.StatusMembers: the membership layer's list,
// with addresses and the members that left recently; coordelect's Handle
// passes it); nil lists the members e knows, without addresses.
func NewHandler(e *Elector, members func() []StatusMember) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		doc := statusDocument(e.Status(), members)
		doc.Elections = statusElections(e)
		writeJSON(w, http.StatusOK, doc)
	})
	mux.HandleFunc("GET /leader", func(w http.ResponseWriter, r *http.Request) {
		el := e.def
		if name := r.URL.Query().Get("election"); name != "" {
			if el = e.lookup(name); el == nil || el.removed {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no election %q on this node", name)})
				return
			}
		}
		doc := leaderDocument(el)
		code := http.StatusOK
		if doc.Coordinator == "" {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, doc)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !e.running() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("stopped: the elector is not running\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := e.Readiness()
		code := http.StatusOK
		if !r.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, r)
	})
	return mux
}

// leaderDocument builds /leader from one Leadership; a leadership of this
// node whose lease has run out (Check) is reported as none, as Status and
// IsLeader do.
func leaderDocument(e *Election) LeaderDocument {
	l, payload := e.LeaderPayload()
	if l.IsSelf && e.Check(l.Term) != nil {
		l, payload = Leadership{}, ""
	}
	doc := LeaderDocument{Coordinator: l.Coordinator, Term: l.Term, IsSelf: l.IsSelf, Payload: payload}
	if l.Known() {
		doc.TermText = TermText(l.Term)
	}
	return doc
}

// statusElections lists the elections of e for /status, each from one
// snapshot of it; nil while e runs the unnamed election alone.
func statusElections(e *Elector) []StatusElection {
	els := e.Elections()
	if len(els) < 2 {
		return nil
	}
	out := make([]StatusElection, 0, len(els))
	for _, el := range els {
		st := el.published()
		if st.Coordinator == e.id && el.Check(st.Term) != nil {
			st.Coordinator = ""
		}
		out = append(out, StatusElection{Name: el.name, State: st.State.String(), Coordinator: st.Coordinator,
			Term: st.Term, TermText: TermText(st.Term), IsSelf: st.Coordinator == e.id, Candidate: !st.NonVoter})
	}
	return out
}

// statusDocument builds /status from the snapshot st and members.
func statusDocument(st Status, members func() []StatusMember) StatusDocument {
	doc := StatusDocument{
		Name: st.ID, State: st.State.String(), Coordinator: st.Coordinator,
		Term: st.Term, TermText: TermText(st.Term),
		Rating: st.Rating, Algorithm: st.Algorithm.String(), Members: []StatusMember{},
		Startup: StatusStartup{Holding: st.Startup.Holding, Voters: st.Startup.Voters,
			Expect: st.Startup.Expect, Short: st.Startup.Short},
	}
	if h := st.Hold; h.Held() {
		doc.Hold = &StatusHold{Reason: h.Reason.String(), Voters: h.Voters, Need: h.Need, Why: h.String()}
		if !h.Until.IsZero() {
			doc.Hold.Until = h.Until.UTC().Format(time.RFC3339Nano)
		}
	}
	if members != nil {
		doc.Members = append(doc.Members, members()...)
		return doc
	}
	for _, m := range st.Members {
		doc.Members = append(doc.Members, StatusMember{Name: m.ID, Rating: m.Rating, Alive: m.Alive})
	}
	return doc
}

// writeJSON writes v as indented JSON with the given status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
