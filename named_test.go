package coordelect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordelect/coordelect"
	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// TestNamedElections: three replicas run four spread names besides the
// unnamed election; every name agrees on a leader, each with its own
// term; the leader's work gets the name's Election from its context; a
// name's Resign moves that name alone, and Close of the handle hands the
// names on.
func TestNamedElections(t *testing.T) {
	ctx := context.Background()
	var hs []*coordelect.Handle
	started := make(chan string, 64)
	for i, name := range []string{"a", "b", "c"} {
		var seeds []string
		if i > 0 {
			seeds = []string{hs[0].Addr()}
		}
		h, err := coordelect.Start(ctx, replica(name, 1, seeds...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(ctx) })
		hs = append(hs, h)
	}
	jobs := []string{"scheduler", "compactor", "billing", "shard-7"}
	els := map[string][]*coordelect.Election{}
	for _, h := range hs {
		for _, job := range jobs {
			x, err := h.Election(job, election.ElectionOptions{Placement: election.PlaceSpread,
				Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, term uint64) {
					if x := coordelect.ElectionFromContext(ctx); x != nil && coordelect.FromContext(ctx) == h {
						started <- x.Name()
					}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			els[job] = append(els[job], x)
		}
	}
	agree := func(job string) (string, uint64) {
		var l election.Leadership
		for i, x := range els[job] {
			m := x.Leader()
			if !m.Known() || i > 0 && (m.Coordinator != l.Coordinator || m.Term != l.Term) {
				return "", 0
			}
			l = m.Leadership
		}
		return l.Coordinator, l.Term
	}
	wait := func(job string, ok func(string, uint64) bool) (string, uint64) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for time.Now().Before(deadline) {
			if l, term := agree(job); l != "" && ok(l, term) {
				return l, term
			}
			time.Sleep(5 * time.Millisecond)
		}
		for _, x := range els[job] {
			st := x.Status()
			t.Logf("%s: %s state %v coordinator %q term %v hold %+v members %+v", job, st.ID, st.State, st.Coordinator, core.Term(st.Term), st.Hold, st.Members)
		}
		t.Fatalf("%s: no agreement", job)
		return "", 0
	}
	leaders, terms := map[string]string{}, map[string]uint64{}
	for _, job := range jobs {
		leaders[job], terms[job] = wait(job, func(string, uint64) bool { return true })
	}
	t.Logf("leaders: %v", leaders)
	seen := map[string]bool{}
	for len(seen) < len(jobs) {
		select {
		case job := <-started:
			seen[job] = true
		case <-time.After(waitTimeout):
			t.Fatalf("OnStartedLeading with the name's Election in its context for %v only", seen)
		}
	}
	// Resign one name: it moves, in a higher term; the others stay.
	job := jobs[0]
	var lead *coordelect.Election
	for _, x := range els[job] {
		if x.IsLeader() {
			lead = x
		}
	}
	if lead == nil {
		t.Fatalf("nobody leads %s", job)
	}
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l, term := wait(job, func(l string, term uint64) bool { return term > terms[job] })
	t.Logf("%s: %s@%v after %s resigned", job, l, core.Term(term), leaders[job])
	for _, other := range jobs[1:] {
		if l, term := agree(other); l != leaders[other] || term != terms[other] {
			t.Errorf("%s: %s@%v after %s resigned, was %s@%v", other, l, core.Term(term), job,
				leaders[other], core.Term(terms[other]))
		}
	}
	if err := lead.Check(term); err == nil {
		t.Errorf("%s: the resigned leader's Check passes in its successor's term", job)
	}
}

// Named elections: one replica runs two jobs; it leads both, each with
// its own Election, and each name's leader work learns its name from its
// context.
func ExampleHandle_Election() {
	ctx := context.Background()
	h, err := coordelect.Start(ctx, coordelect.Config{Identity: election.Identity{Name: "replica-1"}, BindAddr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)
	leading := make(chan string, 2)
	for _, job := range []string{"compactor", "scheduler"} {
		_, err := h.Election(job, election.ElectionOptions{
			Placement: election.PlaceSpread, // leaders spread over the replicas
			Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, term uint64) {
				x := coordelect.ElectionFromContext(ctx)
				leading <- x.Name() // do the job under ctx; check x.Check(term) before each write
			}},
		})
		if err != nil {
			panic(err)
		}
	}
	got := map[string]bool{<-leading: true, <-leading: true}
	fmt.Println("leads compactor:", got["compactor"], "scheduler:", got["scheduler"])
	// Output:
	// leads compactor: true scheduler: true
}
