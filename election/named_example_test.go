package election_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
)

// Three replicas on an in-memory network run two named elections beside
// the unnamed one: "billing", which only alpha and beta stand for (gamma
// runs it to follow its leader), and "compactor", which every replica
// stands for. Each name elects its own leader, by rating here
// (PlaceRating, the default).
func ExampleElector_Election() {
	net := electiontest.NewNetwork()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var wg sync.WaitGroup
	var billing []*election.Election
	for i, id := range []string{"alpha", "beta", "gamma"} {
		e, err := election.New(election.Config{Transport: net.MustJoin(election.Identity{Name: id, Rating: int64(i)})})
		if err != nil {
			panic(err)
		}
		b, err := e.Election("billing", election.ElectionOptions{Abstain: id == "gamma"})
		if err != nil {
			panic(err)
		}
		if _, err := e.Election("compactor", election.ElectionOptions{}); err != nil {
			panic(err)
		}
		billing = append(billing, b)
		wg.Go(func() { e.Run(ctx) })
	}
	for l := range billing[2].Observe() { // gamma follows billing's leader
		if l.Known() {
			fmt.Println("gamma: billing led by", l.Coordinator)
			break
		}
	}
	cancel()
	wg.Wait()
	// Output: gamma: billing led by beta
}
