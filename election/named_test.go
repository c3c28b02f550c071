package election_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// jobs returns k job names.
func jobs(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("job-%02d", i)
	}
	return out
}

// named is a cluster whose members run named elections.
type named struct {
	*cluster
	els map[string]map[string]*election.Election // member -> name -> election
	cbs map[string]map[string]*callbackLog       // member -> name -> its callbacks
}

func newNamed(t *testing.T, specs []spec, tune func(*election.Config)) *named {
	t.Helper()
	return &named{cluster: newCluster(t, specs, tune), els: map[string]map[string]*election.Election{},
		cbs: map[string]map[string]*callbackLog{}}
}

// add starts names on the members ids (default every member) with opts,
// each with its own callback log.
func (c *named) add(opts election.ElectionOptions, names []string, ids ...string) {
	c.t.Helper()
	if len(ids) == 0 {
		ids = c.ids()
	}
	for _, id := range ids {
		if c.els[id] == nil {
			c.els[id], c.cbs[id] = map[string]*election.Election{}, map[string]*callbackLog{}
		}
		for _, name := range names {
			cb := &callbackLog{}
			o := opts
			o.Callbacks = cb.callbacks()
			el, err := c.members[id].e.Election(name, o)
			if err != nil {
				c.t.Fatal(err)
			}
			c.els[id][name], c.cbs[id][name] = el, cb
		}
	}
}

// addPlain starts names on every member with opts and no callbacks.
func (c *named) addPlain(opts election.ElectionOptions, names []string) {
	c.t.Helper()
	for id, m := range c.members {
		if c.els[id] == nil {
			c.els[id] = map[string]*election.Election{}
		}
		for _, name := range names {
			el, err := m.e.Election(name, opts)
			if err != nil {
				c.t.Fatal(err)
			}
			c.els[id][name] = el
		}
	}
}

// agree reports the coordinator and term every live member that runs
// name reports, "" if they differ or the coordinator does not say it
// leads.
func (c *named) agree(name string) (string, uint64) {
	leader, term := "", uint64(0)
	first := true
	for id := range c.members {
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
	if el := c.els[leader][name]; c.members[leader] == nil || el == nil || !el.IsLeader() {
		return "", 0
	}
	return leader, term
}

// waitAll waits until every name agrees, and returns each one's leader
// and term.
func (c *named) waitAll(within time.Duration, names []string) (map[string]string, map[string]uint64) {
	c.t.Helper()
	leaders, terms := map[string]string{}, map[string]uint64{}
	electiontest.Eventually(c.t, within, func() bool {
		for _, name := range names {
			l, tm := c.agree(name)
			if l == "" {
				return false
			}
			leaders[name], terms[name] = l, tm
		}
		return true
	}, func() string { return c.describeNames(names) })
	return leaders, terms
}

func (c *named) describeNames(names []string) string {
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "\n  %s:", name)
		for _, id := range slices.Sorted(func(yield func(string) bool) {
			for id := range c.members {
				if !yield(id) {
					return
				}
			}
		}) {
			if el := c.els[id][name]; el != nil {
				st := el.Status()
				fmt.Fprintf(&b, " %s=%s/%q@%v", id, st.State, st.Coordinator, core.Term(st.Term))
			}
		}
	}
	return b.String()
}

// peers returns n voters "a", "b", ... of rating 1: under PlaceSpread
// each leads an equal share of the names.
func peers(n int) []spec {
	out := voters(n)
	for i := range out {
		out[i].rating = 1
	}
	return out
}

// perMember counts the names each member leads.
func perMember(leaders map[string]string) map[string]int {
	out := map[string]int{}
	for _, l := range leaders {
		out[l]++
	}
	return out
}

// TestNamedElectionsElect: every name elects its own coordinator, with
// its own term; under PlaceSpread the leaders spread over the members
// (the load bound: at most ceil(1.15 x the mean)); the unnamed election
// goes on as before.
func TestNamedElectionsElect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, peers(5), nil)
		c.waitAgreed(time.Second, "e", 0)
		names := jobs(20)
		c.add(election.ElectionOptions{Placement: election.PlaceSpread}, names)
		leaders, terms := c.waitAll(2*time.Second, names)
		load := perMember(leaders)
		t.Logf("leaders per member: %v", load)
		for id := range c.members {
			if load[id] > 5 { // ceil(1.15 * 20/5)
				t.Errorf("%s leads %d names, want at most 5: %v", id, load[id], load)
			}
		}
		for name, term := range terms {
			if core.Term(term).Tag() != core.Tag(leaders[name]) {
				t.Errorf("%s: term %v does not name its leader %s", name, core.Term(term), leaders[name])
			}
		}
		if l, _ := c.agreed(); l != "e" {
			t.Errorf("the unnamed election's leader is %q, want e", l)
		}
		// A name's Status lists the name and the members.
		st := c.els["a"][names[0]].Status()
		if st.Name != names[0] || len(st.Members) != 5 {
			t.Errorf("Status: name %q, %d members", st.Name, len(st.Members))
		}
		if got := len(c.members["a"].e.Elections()); got != 21 {
			t.Errorf("Elections lists %d, want 21 (the unnamed one and 20)", got)
		}
	})
}

// TestNamedElectionErrors: bad names, the unnamed one, duplicates and bad
// options are refused, naming the field and the value; a Transport that
// carries no batches runs the unnamed election alone.
func TestNamedElectionErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(1), nil)
		c.waitAgreed(time.Second, "a", 0)
		e := c.members["a"].e
		if _, err := e.Election("x", election.ElectionOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts election.ElectionOptions
			want string
		}{
			{"", election.ElectionOptions{}, "must not be empty"},
			{strings.Repeat("n", 65), election.ElectionOptions{}, "at most 64"},
			{"a\x01b", election.ElectionOptions{}, "control character"},
			{election.DefaultName, election.ElectionOptions{}, "the unnamed election"},
			{"x", election.ElectionOptions{}, `Election("x"): already running`},
			{"y", election.ElectionOptions{Placement: 7}, "ElectionOptions.Placement = placement(7)"},
			{"y", election.ElectionOptions{QuorumSize: -1}, "ElectionOptions.QuorumSize = -1"},
		} {
			_, err := e.Election(tc.name, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Election(%q, %+v) = %v, want %q", tc.name, tc.opts, err, tc.want)
			}
		}
		tr, err := c.net.JoinUnnamed(election.Identity{Name: "old"})
		if err != nil {
			t.Fatal(err)
		}
		old, err := election.New(election.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Election("x", election.ElectionOptions{}); err == nil || !strings.Contains(err.Error(), "BatchTransport") {
			t.Errorf("Election over a Transport without batches = %v", err)
		}
		if err := c.members["a"].e.Default().Close(); err == nil {
			t.Error("closing the unnamed election succeeded")
		}
	})
}

// TestNamedCrashMovesItsNames: a crash moves the names the crashed member
// led, spread over the survivors, in one failure detection; the other
// names keep their coordinator and term.
func TestNamedCrashMovesItsNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, peers(5), nil)
		c.waitAgreed(time.Second, "e", 0)
		names := jobs(20)
		c.add(election.ElectionOptions{Placement: election.PlaceSpread}, names)
		leaders, terms := c.waitAll(2*time.Second, names)
		victim := "c"
		var moved []string
		for name, l := range leaders {
			if l == victim {
				moved = append(moved, name)
			}
		}
		if len(moved) == 0 {
			t.Fatalf("%s leads no name: %v", victim, leaders)
		}
		c.crash(victim)
		c.net.AnnounceDown(victim)
		after, terms2 := c.waitAll(2*time.Second, names)
		got := map[string]bool{}
		for name, l := range after {
			switch {
			case leaders[name] == victim:
				got[l] = true
				if terms2[name] <= terms[name] {
					t.Errorf("%s: moved to %s in term %v, not above %v", name, l, core.Term(terms2[name]), core.Term(terms[name]))
				}
			case l != leaders[name] || terms2[name] != terms[name]:
				t.Errorf("%s: %s@%v after the crash, was %s@%v: a name %s did not lead moved",
					name, l, core.Term(terms2[name]), leaders[name], core.Term(terms[name]), victim)
			}
		}
		t.Logf("%s led %d names; they went to %d survivors: %v", victim, len(moved), len(got), perMember(after))
		if len(moved) >= 3 && len(got) < 2 {
			t.Errorf("the %d names of %s all went to one member", len(moved), victim)
		}
	})
}

// TestNamedRequestsAreLocal: Resign, TransferTo and Close of one name
// leave the others alone; each name's term moves on its own.
func TestNamedRequestsAreLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(3), nil)
		c.waitAgreed(time.Second, "c", 0)
		names := []string{"x", "y", "z"}
		c.add(election.ElectionOptions{}, names)
		leaders, terms := c.waitAll(2*time.Second, names)
		for _, name := range names {
			if leaders[name] != "c" {
				t.Fatalf("%s led by %s, want c (the highest rating)", name, leaders[name])
			}
		}
		ctx := context.Background()
		if err := c.els["c"]["x"].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.els["c"]["y"].TransferTo(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		now, terms2 := c.waitAll(2*time.Second, names)
		if now["x"] == "c" || terms2["x"] <= terms["x"] {
			t.Errorf("x: %s@%v after c resigned", now["x"], core.Term(terms2["x"]))
		}
		if now["y"] != "b" || terms2["y"] <= terms["y"] {
			t.Errorf("y: %s@%v after a transfer to b", now["y"], core.Term(terms2["y"]))
		}
		if now["z"] != "c" || terms2["z"] != terms["z"] {
			t.Errorf("z: %s@%v, was c@%v: a request to other names moved it", now["z"], core.Term(terms2["z"]), core.Term(terms["z"]))
		}
		if l, _ := c.agreed(); l != "c" {
			t.Errorf("the unnamed election's leader is %q after requests to named ones, want c", l)
		}
		// c closes z: its observers end, the others follow someone else,
		// x and y do not move.
		obs := c.els["c"]["z"].Observe()
		if err := c.els["c"]["z"].Close(); err != nil {
			t.Fatal(err)
		}
		for l := range obs {
			if l.Known() {
				continue // the last value before the end
			}
		}
		delete(c.els["c"], "z")
		if err := c.els["c"]["z"]; err != nil {
			t.Fatal("still listed")
		}
		final, terms3 := c.waitAll(2*time.Second, names)
		if final["z"] == "c" {
			t.Errorf("z still led by c after c closed it")
		}
		for _, name := range []string{"x", "y"} {
			if final[name] != now[name] || terms3[name] != terms2[name] {
				t.Errorf("%s: %s@%v after c closed z, was %s@%v", name, final[name], core.Term(terms3[name]), now[name], core.Term(terms2[name]))
			}
		}
		if err := c.els["a"]["x"].Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.els["a"]["x"].Close(); err != nil {
			t.Errorf("a second Close = %v", err)
		}
		if _, err := c.members["a"].e.Election("x", election.ElectionOptions{}); err != nil {
			t.Errorf("a closed name cannot be started again: %v", err)
		}
	})
}

// TestNamedCallbacksAndLease: each name's callbacks hear its own
// leadership, its span's context carries the name's Span, and a name's
// Check answers for its own term only while it leads.
func TestNamedCallbacksAndLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(3), withQuorum(3))
		c.waitAgreed(guardedStart, "c", 0)
		c.add(election.ElectionOptions{}, []string{"x"})
		c.add(election.ElectionOptions{}, []string{"y"}, "a", "b") // c does not run y
		// y has two voters, fewer than ExpectVoters (QuorumSize): it
		// elects once ExpectWindow has passed.
		leaders, terms := c.waitAll(election.DefaultExpectWindow+time.Second, []string{"x", "y"})
		if leaders["x"] != "c" || leaders["y"] != "b" {
			t.Fatalf("x led by %s, y by %s; want c and b", leaders["x"], leaders["y"])
		}
		x := c.els["c"]["x"]
		if err := x.Check(terms["x"]); err != nil {
			t.Errorf("x.Check(its term) = %v", err)
		}
		if _, ok := x.LeaseDeadline(terms["x"]); !ok {
			t.Error("x: no lease deadline with the quorum guard")
		}
		if err := x.VerifyLeader(context.Background()); err != nil {
			t.Errorf("x.VerifyLeader = %v", err)
		}
		if err := c.els["b"]["x"].Check(terms["x"]); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("a follower's x.Check = %v, want ErrNotLeader", err)
		}
		ev, ctxs := c.cbs["c"]["x"].snapshot()
		if len(ctxs) != 1 || !slices.Contains(ev, "started "+core.Term(terms["x"]).String()) {
			t.Fatalf("c's x callbacks: %v", ev)
		}
		sp, ok := election.SpanFromContext(ctxs[0])
		if !ok || sp.Term != terms["x"] || sp.Check() != nil {
			t.Errorf("x's span %+v (ok %v): Check %v", sp, ok, sp.Check())
		}
		if ev, _ := c.cbs["b"]["y"].snapshot(); !slices.Contains(ev, "started "+core.Term(terms["y"]).String()) {
			t.Errorf("b's y callbacks: %v", ev)
		}
		if ev, _ := c.cbs["a"]["y"].snapshot(); !slices.Contains(ev, "leader b@"+core.Term(terms["y"]).String()) {
			t.Errorf("a's y callbacks: %v", ev)
		}
		// x ends on c: its span ends, OnStoppedLeading runs, Check fails.
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if sp.Check() == nil || ctxs[0].Err() == nil {
			t.Error("x's span outlived Close")
		}
		if ev, _ := c.cbs["c"]["x"].snapshot(); ev[len(ev)-1] != "stopped" {
			t.Errorf("c's x callbacks after Close: %v", ev)
		}
	})
}

// TestNamedCandidacy: a name elects among the members that stand for it;
// a member that stops standing hands the name on; one that does not run
// the name is never its candidate.
func TestNamedCandidacy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(5), nil)
		c.waitAgreed(time.Second, "e", 0)
		c.add(election.ElectionOptions{}, []string{"x"}, "a", "b", "c")
		c.add(election.ElectionOptions{Abstain: true}, []string{"x"}, "d")
		leaders, _ := c.waitAll(2*time.Second, []string{"x"})
		if leaders["x"] != "c" {
			t.Fatalf("x led by %s, want c: the highest-rated that stands (d abstains, e does not run it)", leaders["x"])
		}
		if err := c.els["c"]["x"].SetCandidate(false); err != nil {
			t.Fatal(err)
		}
		electiontest.Eventually(t, 2*time.Second, func() bool {
			l, _ := c.agree("x")
			return l == "b"
		}, func() string { return c.describeNames([]string{"x"}) })
		if err := c.els["d"]["x"].SetCandidate(true); err != nil {
			t.Fatal(err)
		}
		electiontest.Eventually(t, 2*time.Second, func() bool {
			l, _ := c.agree("x")
			return l == "d" // the default preemption: the highest-rated candidate takes over
		}, func() string { return c.describeNames([]string{"x"}) })
		var stands []string
		for _, m := range c.els["a"]["x"].Status().Members {
			if !m.NonVoter {
				stands = append(stands, m.ID)
			}
		}
		if !slices.Equal(stands, []string{"a", "b", "d"}) {
			t.Errorf("a holds %v standing for x, want [a b d]", stands)
		}
	})
}

// TestCandidacyDigestsQuiet: members that run the unnamed election alone
// send each other no candidacy digests once their statements have come
// (a follower of an idle cluster sends nothing at all); once a member
// runs another name, the others send it digests again. A change lost
// across a partition is found by the digests of the member that made it:
// a member that runs the name later holds it as a candidate.
func TestCandidacyDigestsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(4), nil)
		c.waitAgreed(time.Second, "d", 0)
		<-time.After(time.Second)
		p0 := c.net.SenderPackets()
		<-time.After(35 * time.Second) // three digest periods and more
		p1 := c.net.SenderPackets()
		for _, id := range []string{"a", "b", "c"} {
			if p1[id] != p0[id] {
				t.Errorf("follower %s sent %d packets in an idle window of the unnamed election, want none (no digests)", id, p1[id]-p0[id])
			}
		}
		c.add(election.ElectionOptions{}, []string{"x"}, "b")
		<-time.After(time.Second)
		p2 := c.net.SenderPackets()
		<-time.After(35 * time.Second)
		p3 := c.net.SenderPackets()
		if p3["a"] == p2["a"] {
			t.Errorf("a sent nothing in 35 s after b runs another name, want digests to b")
		}
		c.net.Partition([]string{"c"})
		c.add(election.ElectionOptions{}, []string{"y"}, "c") // its change is lost
		<-time.After(time.Second)
		c.net.Heal()
		<-time.After(15 * time.Second) // c's next digest, a's request, c's statement
		c.add(election.ElectionOptions{}, []string{"y"}, "a")
		var stands []string
		for _, m := range c.els["a"]["y"].Status().Members {
			if !m.NonVoter {
				stands = append(stands, m.ID)
			}
		}
		if !slices.Equal(stands, []string{"a", "c"}) {
			t.Errorf("a holds %v standing for y, want [a c] (c's lost change found by its digest)", stands)
		}
	})
}

// TestCandidacyAskedWhenNotHeard: a member that runs the unnamed
// election alone and missed another's statement, which has its own, asks
// for it, and then the two send each other no digests.
func TestCandidacyAskedWhenNotHeard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, []spec{{id: "a", rating: 2}, {id: "b", rating: 3}}, nil)
		c.waitAgreed(time.Second, "b", 0)
		var lost atomic.Int32
		c.net.SetDropCandidacy(func(x election.Candidacy) bool {
			return x.From == "a" && x.To == "c" && x.Full && lost.Add(1) == 1 // a's first statement to c
		})
		c.specs["c"] = spec{id: "c", rating: 1}
		c.start("c")
		c.waitAgreed(time.Second, "b", 0)
		<-time.After(30 * time.Second) // a digest period, the request, the statement
		p0 := c.net.SenderPackets()
		<-time.After(35 * time.Second)
		p1 := c.net.SenderPackets()
		if lost.Load() < 1 {
			t.Fatal("a sent c no statement")
		}
		for _, id := range []string{"a", "c"} {
			if p1[id] != p0[id] {
				t.Errorf("follower %s sent %d packets in an idle window, want none (no digests once the statements came)", id, p1[id]-p0[id])
			}
		}
	})
}

// TestNamedWithUnnamedMember: a member that runs the unnamed election
// only (an older build in a rolling restart) takes part in it, and stands
// for no other name: the named elections elect among the others.
func TestNamedWithUnnamedMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(3), nil)
		tr, err := c.net.JoinUnnamed(election.Identity{Name: "z", Rating: 100})
		if err != nil {
			t.Fatal(err)
		}
		old, err := electiontest.Run("z", election.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer old.Halt()
		electiontest.Eventually(t, time.Second, func() bool {
			l, _, ok := electiontest.Agree(append(c.ec.Members(), old)...)
			return ok && l == "z"
		}, c.describe)
		c.add(election.ElectionOptions{}, []string{"x", "y"})
		leaders, _ := c.waitAll(2*time.Second, []string{"x", "y"})
		if leaders["x"] != "c" || leaders["y"] != "c" {
			t.Errorf("x and y led by %s and %s, want c: z runs neither", leaders["x"], leaders["y"])
		}
		if l, _, _ := old.Elector.Leader(); l != "z" {
			t.Errorf("z reports %q for the unnamed election", l)
		}
	})
}

// TestNamedAddedBeforeRun: names added before Run start with it.
func TestNamedAddedBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := electiontest.NewNetwork()
		var ms []*electiontest.Member
		var mu sync.Mutex
		started := map[string]int{}
		for i, id := range []string{"a", "b", "c"} {
			tr := net.MustJoin(election.Identity{Name: id, Rating: int64(i)})
			e, err := election.New(election.Config{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Election("x", election.ElectionOptions{Callbacks: election.Callbacks{
				OnStartedLeading: func(context.Context, uint64) { mu.Lock(); started[id]++; mu.Unlock() },
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			ms = append(ms, &electiontest.Member{Name: id, Elector: e})
		}
		electiontest.Eventually(t, time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return started["c"] == 1
		}, func() string { return electiontest.Describe(ms...) })
		net.Close()
	})
}

// TestNamedHandler: /status lists the elections with their leaders;
// /leader answers for the unnamed election, and for a name with
// ?election=NAME (404 for a name this member does not run).
func TestNamedHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newNamed(t, voters(3), nil)
		c.waitAgreed(time.Second, "c", 0)
		c.add(election.ElectionOptions{}, []string{"x"}, "a", "b")
		_, terms := c.waitAll(2*time.Second, []string{"x"})
		h := election.NewHandler(c.members["a"].e, nil)
		get := func(path string, v any) int {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if v != nil {
				if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
					t.Fatalf("%s: %v: %s", path, err, rec.Body)
				}
			}
			return rec.Code
		}
		var st election.StatusDocument
		get("/status", &st)
		want := []election.StatusElection{
			{Name: "default", State: "lost", Coordinator: "c", Term: st.Term, TermText: election.TermText(st.Term), Candidate: true},
			{Name: "x", State: "lost", Coordinator: "b", Term: terms["x"], TermText: election.TermText(terms["x"]), Candidate: true},
		}
		if !reflect.DeepEqual(st.Elections, want) {
			t.Errorf("/status elections:\n got %+v\nwant %+v", st.Elections, want)
		}
		var l election.LeaderDocument
		if code := get("/leader?election=x", &l); code != http.StatusOK || l.Coordinator != "b" || l.Term != terms["x"] {
			t.Errorf("/leader?election=x: %d %+v", code, l)
		}
		if code := get("/leader", &l); code != http.StatusOK || l.Coordinator != "c" {
			t.Errorf("/leader: %d %+v", code, l)
		}
		if code := get("/leader?election=nope", nil); code != http.StatusNotFound {
			t.Errorf("/leader?election=nope: %d, want 404", code)
		}
	})
}
