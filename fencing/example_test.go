package fencing_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/fencing"
)

// A coordinator claims the fence before its work starts (Callbacks.Claim)
// and makes every write through it. Once a successor has claimed a later
// term, the deposed coordinator's writes are refused, even though the
// successor has not written anything yet.
func Example() {
	fence := &fencing.Memory{}
	var ledger []string
	ctx, cancel := context.WithCancel(context.Background())
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "solo"})
	e, err := election.New(election.Config{
		Transport: tr,
		Callbacks: election.Callbacks{
			Claim: fence.Claim,
			OnStartedLeading: func(ctx context.Context, term uint64) {
				defer cancel()
				write := func(line string) error {
					return fence.Write(ctx, term, func() error {
						ledger = append(ledger, line)
						return nil
					})
				}
				fmt.Println("write as coordinator:", write("a"))
				_ = fence.Claim(ctx, term+1) // a successor claims the next term
				err := write("b")
				fmt.Println("write once deposed refused:", errors.Is(err, fencing.ErrStale))
			},
		},
	})
	if err != nil {
		panic(err)
	}
	_ = e.Run(ctx)
	fmt.Println("ledger:", ledger)
	// Output:
	// write as coordinator: <nil>
	// write once deposed refused: true
	// ledger: [a]
}
