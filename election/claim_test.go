package election_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/fencing"
)

// staleFence is a fencing.Memory that a coordinator of a later term has
// claimed already: above every term of epoch 1, below those of epoch 2.
// claims counts the Claim calls per member and term; started lists the
// terms OnStartedLeading ran in.
type staleFence struct {
	fence   fencing.Memory
	mu      sync.Mutex
	claims  map[string]int
	started []string
	// resign, when set, has a member whose Claim found its term stale
	// step down at once.
	resign   bool
	electors sync.Map // member name -> *election.Elector
}

func newStaleFence(t *testing.T) *staleFence {
	f := &staleFence{claims: map[string]int{}}
	if err := f.fence.Claim(context.Background(), uint64(core.MakeTerm(1, math.MaxUint32))); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *staleFence) callbacks(cfg *election.Config) {
	id := cfg.Transport.Identity().Name
	cfg.Callbacks.Claim = func(ctx context.Context, term uint64) error {
		f.mu.Lock()
		f.claims[id+"@"+core.Term(term).String()]++
		f.mu.Unlock()
		err := f.fence.Claim(ctx, term)
		if e, ok := f.electors.Load(id); ok && f.resign && errors.Is(err, fencing.ErrStale) {
			_ = e.(*election.Elector).Resign(ctx)
		}
		return err
	}
	cfg.Callbacks.OnStartedLeading = func(ctx context.Context, term uint64) {
		f.mu.Lock()
		f.started = append(f.started, id+"@"+core.Term(term).String())
		f.mu.Unlock()
		<-ctx.Done()
	}
}

func (f *staleFence) counts() (map[string]int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	claims := make(map[string]int, len(f.claims))
	for k, v := range f.claims {
		claims[k] = v
	}
	return claims, append([]string(nil), f.started...)
}

// TestClaimStaleNotRetried: a Claim that finds its term stale
// (fencing.ErrStale) is not retried, and the term's OnStartedLeading does
// not run; other errors are retried (TestClaimGatesLeadership).
func TestClaimStaleNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStaleFence(t)
		c := newCluster(t, voters(3), f.callbacks)
		term, _ := c.waitAgreed(time.Second, "c", 0)
		<-time.After(time.Second) // 20 heartbeat intervals: the retry period
		synctest.Wait()
		claims, started := f.counts()
		if key := "c@" + core.Term(term).String(); claims[key] != 1 || len(claims) != 1 || len(started) != 0 {
			t.Errorf("claims %v, started %v; want one Claim by %s and no OnStartedLeading", claims, started, key)
		}
	})
}

// TestClaimStaleResign: a coordinator whose Claim finds its term stale
// and resigns from Claim hands the role on; the successor, in a later
// term, claims the fence and starts leading.
func TestClaimStaleResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStaleFence(t)
		f.resign = true
		c := newCluster(t, voters(3), f.callbacks)
		for id, m := range c.members {
			f.electors.Store(id, m.e)
		}
		term, _ := c.waitAgreed(2*time.Second, "b", 0)
		if core.Term(term).Epoch() < 2 {
			t.Fatalf("b leads in %s, want epoch 2 or later", core.Term(term))
		}
		electiontest.Eventually(t, time.Second, func() bool { _, started := f.counts(); return len(started) > 0 }, c.describe)
		if claims, started := f.counts(); len(started) != 1 || started[0] != "b@"+core.Term(term).String() {
			t.Errorf("started %v, want [b@%s]; claims %v", started, core.Term(term), claims)
		}
		if held, _ := f.fence.Term(); held != term {
			t.Errorf("the fence holds %s, want b's term %s", core.Term(held), core.Term(term))
		}
	})
}
