package election_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
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

// The term handed to OnStartedLeading fences the leader's writes: the
// store keeps the highest term that wrote and refuses older ones, so a
// deposed leader that has not noticed yet cannot overwrite its successor.
func Example_fencing() {
	store := &fencedStore{}
	ctx, cancel := context.WithCancel(context.Background())
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "solo"})
	e, _ := election.New(election.Config{
		Transport: tr,
		Callbacks: election.Callbacks{OnStartedLeading: func(_ context.Context, term uint64) {
			fmt.Println("write as leader:", store.Write(term, "config v2"))
			fmt.Println("write with an older term:", store.Write(term-1, "config v1"))
			cancel()
		}},
	})
	e.Run(ctx)
	fmt.Println("stored:", store.value)
	// Output:
	// write as leader: <nil>
	// write with an older term: stale term
	// stored: config v2
}

// fencedStore is shared state guarded by terms (a fencing token).
type fencedStore struct {
	mu    sync.Mutex
	term  uint64
	value string
}

func (s *fencedStore) Write(term uint64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if term < s.term {
		return fmt.Errorf("stale term")
	}
	s.term, s.value = term, v
	return nil
}
