package election_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// TransferTo hands the coordinator role to a named member (as
// hashicorp/raft's LeadershipTransferToServer): here the highest-rated
// replica, gamma, gives it to the lowest-rated one, alpha, for maintenance
// say. With PreemptNever nobody ranked above alpha takes the role back. It
// refuses an unknown member and a call on a node that does not lead.
func ExampleElector_TransferTo() {
	net := electiontest.NewNetwork()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	electors := map[string]*election.Elector{}
	names := []string{"alpha", "beta", "gamma"}
	for i, name := range names {
		tr := net.MustJoin(election.Identity{Name: name, Rating: int64(i)})
		e, err := election.New(election.Config{Transport: tr, Preemption: core.PreemptNever})
		if err != nil {
			panic(err)
		}
		electors[name] = e
		wg.Go(func() { e.Run(ctx) })
	}
	// agree waits until every replica follows want, and returns its term.
	agree := func(want string) (term uint64) {
		for _, name := range names {
			sub := electors[name].Subscribe()
			for l := range sub.C {
				if l.Coordinator == want {
					term = l.Term
					break
				}
			}
			sub.Close()
		}
		return term
	}
	before := agree("gamma")
	fmt.Println("unknown member:", electors["gamma"].TransferTo(ctx, "delta"))
	fmt.Println("not the leader:", electors["beta"].TransferTo(ctx, "alpha"))
	fmt.Println("to alpha:", electors["gamma"].TransferTo(ctx, "alpha"))
	after := agree("alpha")
	fmt.Println("every replica follows alpha, in a later term:", after > before)
	cancel()
	wg.Wait()
	// Output:
	// unknown member: core: TransferTo("delta"): not a member
	// not the leader: not the coordinator
	// to alpha: <nil>
	// every replica follows alpha, in a later term: true
}
