package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/fencing"
)

// Three replicas on an in-memory network elect the highest-rated one; a
// follower watches the leadership through Observe.
func ExampleElector_Observe() {
	net := electiontest.NewNetwork()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var wg sync.WaitGroup
	var electors []*election.Elector
	for i, id := range []string{"alpha", "beta", "gamma"} {
		tr := net.MustJoin(election.Identity{Name: id, Rating: int64(i)})
		e, err := election.New(election.Config{Transport: tr})
		if err != nil {
			panic(err)
		}
		electors = append(electors, e)
		wg.Go(func() { e.Run(ctx) })
	}
	for l := range electors[0].Observe() {
		if l.Coordinator == "gamma" {
			fmt.Println("alpha follows", l.Coordinator)
			break
		}
	}
	cancel() // every node stops; gamma hands off first
	wg.Wait()
	// Output: alpha follows gamma
}

// The term fences the leader's writes (package fencing): Claim advances
// the store's fence to the term before the leader's work starts, and the
// store refuses every write of an older term from then on, so a deposed
// leader that has not noticed yet cannot write once its successor has
// claimed, even before the successor writes.
func Example_fencing() {
	fence := &fencing.Memory{}
	var stored string
	set := func(ctx context.Context, term uint64, v string) error {
		return fence.Write(ctx, term, func() error { stored = v; return nil })
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "solo"})
	e, _ := election.New(election.Config{
		Transport: tr,
		Callbacks: election.Callbacks{
			Claim: fence.Claim,
			OnStartedLeading: func(ctx context.Context, term uint64) {
				fmt.Println("write as leader:", set(ctx, term, "config v2"))
				err := set(ctx, term-1, "config v1")
				fmt.Println("write with an older term refused:", errors.Is(err, fencing.ErrStale))
				cancel()
			},
		},
	})
	e.Run(ctx)
	fmt.Println("stored:", stored)
	// Output:
	// write as leader: <nil>
	// write with an older term refused: true
	// stored: config v2
}
