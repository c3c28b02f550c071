package membership

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// voter is a Node with an elector running on it, for the tests that check
// what membership's refusals and drops mean to a running election.
type voter struct {
	*Node
	el    *election.Elector
	done  chan error // Run's result
	drops *dropCounter
}

// dropCounter counts the messages an elector's node dropped, by reason.
type dropCounter struct {
	mu sync.Mutex
	by [core.NumDropReasons]uint64
}

func (r *dropCounter) Record(u election.Update) {
	r.mu.Lock()
	for reason, n := range u.Dropped {
		r.by[reason] += n
	}
	r.mu.Unlock()
}

func (r *dropCounter) get(reason core.DropReason) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by[reason]
}

// startVoter creates a node from cfg and runs an elector on it (rating
// cfg.Rating), stopping both at the end of the test.
func startVoter(t *testing.T, cfg Config) *voter {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.Name, err)
	}
	return runVoter(t, n, cfg)
}

func runVoter(t *testing.T, n *Node, cfg Config) *voter {
	t.Helper()
	ec := election.DefaultConfig()
	ec.Transport = n
	drops := &dropCounter{}
	ec.Recorder = drops
	el, err := election.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	v := &voter{Node: n, el: el, done: make(chan error, 1), drops: drops}
	go func() { v.done <- el.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = el.Close()
		<-v.done
		_ = n.Close()
	})
	return v
}

// voters starts n1..nk with ratings 10, 20..., each joining n1, and waits
// until all agree on nk; it returns them and the term.
func voters(t *testing.T, k int, change func(*Config)) ([]*voter, uint64) {
	t.Helper()
	var vs []*voter
	for i := range k {
		cfg := testConfig(fmt.Sprintf("n%d", i+1))
		cfg.Rating = int64(10 * (i + 1))
		if i > 0 {
			cfg.Seeds = []string{vs[0].Addr()}
		}
		if change != nil {
			change(&cfg)
		}
		vs = append(vs, startVoter(t, cfg))
	}
	want := vs[k-1].LocalID()
	var term uint64
	if !waitUntil(waitTimeout, func() (ok bool) { term, ok = agreed(vs, want); return ok }) {
		t.Fatalf("no agreement on %s: %s", want, describe(vs))
	}
	return vs, term
}

// agreed reports whether every voter names want, in one term.
func agreed(vs []*voter, want string) (uint64, bool) {
	var term uint64
	for i, v := range vs {
		id, tm, ok := v.el.Leader()
		if !ok || id != want || (i > 0 && tm != term) {
			return 0, false
		}
		term = tm
	}
	return term, true
}

func describe(vs []*voter) string {
	out := ""
	for _, v := range vs {
		id, tm, ok := v.el.Leader()
		out += fmt.Sprintf("%s->%s/%d/%v ", v.LocalID(), id, tm, ok)
	}
	return out
}

// steady watches the voters for d and fails the test if any of them stops
// naming want in term: the running cluster saw no new term.
func steady(t *testing.T, vs []*voter, want string, term uint64, d time.Duration) {
	t.Helper()
	changed := waitUntil(d, func() bool { tm, ok := agreed(vs, want); return !ok || tm != term })
	if changed {
		t.Fatalf("the cluster moved from %s in term %d: %s", want, term, describe(vs))
	}
}
