package election_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// TestHandlerStatusShape: /status has exactly the keys `demo node` serves
// (StatusDocument), with the
// members from the members function when one is given, else the elector's.
func TestHandlerStatusShape(t *testing.T) {
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "a", Rating: 3, Algorithm: core.Ring})
	e, err := election.New(election.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler) map[string]any {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
		}
		var doc map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
	doc := get(election.NewHandler(e, nil))
	if got, want := keys(doc), []string{"algorithm", "coordinator", "members", "name", "rating", "startup", "state", "term", "term_text"}; !slices.Equal(got, want) {
		t.Errorf("/status keys %q, want %q", got, want)
	}
	if doc["name"] != "a" || doc["state"] != "sleep" || doc["rating"] != 3.0 || doc["algorithm"] != "ring" {
		t.Errorf("/status = %v", doc)
	}
	if got, want := keys(doc["startup"].(map[string]any)), []string{"expect", "holding", "short", "voters"}; !slices.Equal(got, want) {
		t.Errorf("startup keys %q, want %q", got, want)
	}
	if su := doc["startup"].(map[string]any); su["holding"] != true || su["voters"] != 1.0 {
		t.Errorf("startup before Run = %v, want holding with 1 voter", su)
	}
	members := doc["members"].([]any)
	if len(members) != 1 {
		t.Fatalf("members = %v, want the node itself", members)
	}
	if got, want := keys(members[0].(map[string]any)), []string{"addr", "alive", "name", "rating"}; !slices.Equal(got, want) {
		t.Errorf("member keys %q, want %q", got, want)
	}
	listed := func() []election.StatusMember {
		return []election.StatusMember{{Name: "a", Addr: "127.0.0.1:7946", Rating: 3, Alive: true}, {Name: "b", Addr: "127.0.0.1:7947"}}
	}
	doc = get(election.NewHandler(e, listed))
	if m := doc["members"].([]any); len(m) != 2 || m[1].(map[string]any)["addr"] != "127.0.0.1:7947" {
		t.Errorf("members = %v, want the listed ones", m)
	}
}

// getDoc serves path from h and decodes its JSON body into v; it returns
// the status code.
func getDoc(t *testing.T, h http.Handler, path string, v any) int {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("%s: %v: %q", path, err, w.Body)
	}
	return w.Code
}

// TestHandlerOneSnapshot: a coordinator whose process stalls past its
// lease, while the others elect a successor, answers /status and /leader
// from one snapshot each: it does not name itself coordinator once its
// lease has run out, even before its loop has noticed, and every document
// agrees with Check.
func TestHandlerOneSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), withQuorum(3))
		term, _ := c.waitAgreed(guardedStart, "c", 0)
		old := c.members["c"].e
		h := election.NewHandler(old, nil)
		var st election.StatusDocument
		if getDoc(t, h, "/status", &st); st.Coordinator != "c" || st.State != "coordinator" || st.Term != term {
			t.Fatalf("/status of the coordinator: %+v", st)
		}

		release := election.StallLoop(old)
		c.waitAgreed(2*time.Second, "b", term, "a", "b")
		if err := old.Check(term); err == nil {
			t.Fatal("the stalled coordinator's lease is still valid while b leads")
		}
		if getDoc(t, h, "/status", &st); st.Coordinator == "c" || st.State == "coordinator" {
			t.Errorf("/status of the stalled coordinator names it: %+v", st)
		}
		var ld election.LeaderDocument
		if code := getDoc(t, h, "/leader", &ld); code != http.StatusServiceUnavailable || ld.IsSelf || ld.Coordinator != "" {
			t.Errorf("/leader of the stalled coordinator: %d %+v; want 503, no coordinator", code, ld)
		}
		var rd election.Readiness
		if code := getDoc(t, h, "/readyz", &rd); code != http.StatusServiceUnavailable || rd.Ready || rd.Coordinator != "" {
			t.Errorf("/readyz of the stalled coordinator: %d %+v; want 503", code, rd)
		}
		release()
		c.waitAgreed(2*time.Second, "b", term)
		if getDoc(t, h, "/status", &st); st.Coordinator != "b" || st.State == "coordinator" || st.TermText != core.Term(st.Term).String() {
			t.Errorf("/status of the old coordinator once it has resumed: %+v", st)
		}
	})
}

// joinProblemTransport is a Transport that reports a join problem
// (election.ReadinessTransport), as membership.Node does when its seeds are
// unreachable.
type joinProblemTransport struct {
	*electiontest.Transport
	mu      sync.Mutex
	problem string
}

func (t *joinProblemTransport) JoinProblem() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.problem
}

func (t *joinProblemTransport) set(p string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.problem = p
}

// probe serves /healthz and /readyz from h: their codes, and the reasons
// /readyz gives.
func probe(t *testing.T, h http.Handler) (health, ready int, r election.Readiness) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	health = w.Code
	ready = getDoc(t, h, "/readyz", &r)
	if (ready == http.StatusOK) != r.Ready || r.Ready != (len(r.Reasons) == 0) {
		t.Errorf("/readyz: %d %+v: the code, ready and the reasons disagree", ready, r)
	}
	return health, ready, r
}

// TestHandlerHealthReady: /healthz is 200 exactly while the elector runs;
// /readyz is 200 once it knows a coordinator and the transport has no
// join problem, else 503 with the reasons: stopped, the transport's join
// problem (even while the node leads alone), waiting for the expected
// voters (here with Bootstrap, so that it leads alone once the window
// passes), no quorum.
func TestHandlerHealthReady(t *testing.T) {
	hasReason := func(r election.Readiness, prefix string) bool {
		return slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	synctest.Test(t, func(t *testing.T) {
		tr := &joinProblemTransport{Transport: electiontest.NewNetwork().MustJoin(election.Identity{Name: "a"}),
			problem: "alone: no seed reachable (connection refused)"}
		e, err := election.New(election.Config{Transport: tr, ExpectVoters: 2, ExpectWindow: time.Second, Bootstrap: true})
		if err != nil {
			t.Fatal(err)
		}
		h := election.NewHandler(e, nil)
		if health, ready, r := probe(t, h); health != http.StatusServiceUnavailable || ready != http.StatusServiceUnavailable || !hasReason(r, "stopped") {
			t.Errorf("before Run: healthz %d, readyz %d %v; want 503, 503 stopped", health, ready, r.Reasons)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		health, ready, r := probe(t, h)
		if health != http.StatusOK || ready != http.StatusServiceUnavailable ||
			!hasReason(r, "alone: no seed reachable") || !hasReason(r, "waiting for expected members: 1 of 2 voters visible") {
			t.Errorf("running, holding: healthz %d, readyz %d %q; want 200, 503 alone and waiting", health, ready, r.Reasons)
		}
		<-time.After(2 * time.Second) // the window passes: it leads alone
		synctest.Wait()
		if _, ready, r := probe(t, h); ready != http.StatusServiceUnavailable || r.Coordinator != "a" || !slices.Equal(r.Reasons, []string{tr.JoinProblem()}) {
			t.Errorf("leading alone with a join problem: readyz %d %+v; want 503 alone, coordinator a", ready, r)
		}
		tr.set("")
		if _, ready, r := probe(t, h); ready != http.StatusOK || r.Coordinator != "a" || r.TermText != core.Term(r.Term).String() {
			t.Errorf("leading, joined: readyz %d %+v; want 200, coordinator a", ready, r)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if health, ready, r := probe(t, h); health != http.StatusServiceUnavailable || ready != http.StatusServiceUnavailable ||
			!slices.Equal(r.Reasons, []string{"stopped: the elector is not running"}) || r.Coordinator != "" {
			t.Errorf("stopped: healthz %d, readyz %d %+v; want 503, 503 stopped", health, ready, r)
		}
	})
}

// TestHandlerReadyNoQuorum: a guarded node that sees fewer voters than a
// majority of QuorumSize says so in /readyz, with the numbers.
func TestHandlerReadyNoQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "a"})
		e, err := election.New(election.Config{Transport: tr, QuorumSize: 3, ExpectVoters: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		<-time.After(time.Second)
		synctest.Wait()
		_, ready, r := probe(t, election.NewHandler(e, nil))
		if want := []string{"no quorum: 1 of 3 voters visible (QuorumSize), a coordinator needs 2"}; ready != http.StatusServiceUnavailable || !slices.Equal(r.Reasons, want) {
			t.Errorf("readyz %d %q; want 503 %q", ready, r.Reasons, want)
		}
		cancel()
		<-done
	})
}
