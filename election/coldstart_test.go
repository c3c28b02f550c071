package election_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
)

// coldTally counts, over a whole cluster, what a cold start did: the terms
// any member won (an OnStartedLeading each: leader work that ran) and every
// coordinator and term any member reported.
type coldTally struct {
	mu      sync.Mutex
	started []string // "name@term" per OnStartedLeading
	seen    map[uint64]string
	won     atomic.Int64 // ElectionWon, summed over members
}

func (t *coldTally) callbacks(name string) election.Callbacks {
	return election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term uint64) {
			t.mu.Lock()
			t.started = append(t.started, fmt.Sprintf("%s@%d", name, term>>32))
			t.mu.Unlock()
		},
		OnNewLeader: func(l election.Leadership) {
			t.mu.Lock()
			t.seen[l.Term] = l.Coordinator
			t.mu.Unlock()
		},
	}
}

func (t *coldTally) snapshot() (started []string, terms int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.started...), len(t.seen)
}

type wonRecorder struct {
	election.NopRecorder
	won *atomic.Int64
}

func (r wonRecorder) Elections(e election.ElectionEvent, n uint64) {
	if e == election.ElectionWon {
		r.won.Add(int64(n))
	}
}

// coldStart starts n members on real memberlist within spread, in an order
// drawn from seed, every one given the first `seeds` members as its seeds,
// as a Deployment's pods find each other through a headless service. A
// seed that has not started yet refuses joins, as a port nobody listens on
// would. It returns once every member agrees on the highest-rated, and
// still does half a second later (a late preemption would show).
func coldStart(t *testing.T, n, seeds int, spread time.Duration, seed uint64, mut func(*election.Config)) (*coldTally, time.Duration) {
	t.Helper()
	c := newRealCluster(t, nil)
	tally := &coldTally{seen: map[uint64]string{}}
	trs := make([]*membership.FaultTransport, n)
	var seedAddrs []string
	for i := range trs {
		tr, err := c.net.Listen(fmt.Sprintf("n%d", i+1), "127.0.0.1", 0)
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		if i < seeds {
			seedAddrs = append(seedAddrs, tr.Addr())
		}
	}
	for i := range n {
		for s := range seeds {
			c.net.Block(trs[i].Name(), trs[s].Name())
		}
	}
	order := rand.New(rand.NewPCG(seed, 0)).Perm(n)
	nodes := make([]*realNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for k, i := range order {
		wg.Add(1)
		at := spread * time.Duration(k) / time.Duration(max(n-1, 1))
		time.AfterFunc(at, func() {
			defer wg.Done()
			if i < seeds { // listening from now on
				for j := range n {
					c.net.Unblock(trs[j].Name(), trs[i].Name())
				}
			}
			nodes[i], errs[i] = startCold(fmt.Sprintf("n%d", i+1), int64(i+1), trs[i], seedAddrs, tally, mut)
		})
	}
	wg.Wait()
	for i, nd := range nodes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		c.nodes[nd.name] = nd
	}
	all := names("n", 1, n)
	c.await(all, fmt.Sprintf("n%d", n), 0, 20*time.Second)
	took := time.Since(begin)
	quiet := time.NewTimer(500 * time.Millisecond)
	<-quiet.C
	c.await(all, fmt.Sprintf("n%d", n), 0, time.Second)
	return tally, took
}

func startCold(name string, rating int64, tr *membership.FaultTransport, seeds []string, tally *coldTally, mut func(*election.Config)) (*realNode, error) {
	mcfg := membership.DefaultConfig()
	mcfg.NodeName, mcfg.Rating = name, rating
	mcfg.BindAddr, mcfg.Profile, mcfg.Transport = "127.0.0.1", membership.ProfileLocal, tr
	mcfg.Seeds, mcfg.RejoinInterval = seeds, time.Second
	mem, err := membership.New(mcfg)
	if err != nil {
		return nil, err
	}
	cfg := election.DefaultConfig()
	cfg.Transport, cfg.Rating = mem, rating
	cfg.Callbacks, cfg.Recorder = tally.callbacks(name), wonRecorder{won: &tally.won}
	if mut != nil {
		mut(&cfg)
	}
	el, err := election.New(cfg)
	if err != nil {
		_ = mem.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	nd := &realNode{name: name, rating: rating, mem: mem, el: el, cancel: cancel, done: make(chan error, 1)}
	go func() { nd.done <- el.Run(ctx) }()
	return nd, nil
}

// A cold start, every member started within 50 ms (a Deployment's pods),
// in several orders: exactly one term is won, by the highest-rated member,
// and no other member ever ran leader work.
func TestMemberlistColdStart(t *testing.T) {
	for _, n := range []int{5, 20} {
		orders := map[int]uint64{5: 6, 20: 3}[n]
		for seed := range orders {
			t.Run(fmt.Sprintf("n=%d/order=%d", n, seed), func(t *testing.T) {
				tally, took := coldStart(t, n, 3, 50*time.Millisecond, seed, nil)
				started, terms := tally.snapshot()
				t.Logf("n=%d: all agreed %v after the first start; terms won %d, terms seen %d, OnStartedLeading %v",
					n, took, tally.won.Load(), terms, started)
				if len(started) != 1 || tally.won.Load() != 1 || terms != 1 {
					t.Errorf("cold start of %d: %d terms won, %d terms seen, leader work started %v; want exactly one",
						n, tally.won.Load(), terms, started)
				}
			})
		}
	}
}
