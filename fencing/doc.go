// Package fencing keeps a deposed coordinator from damaging shared state:
// a store keeps a fence, the highest leadership term that has claimed it,
// and accepts a write only if it is made in the term the fence holds.
//
// The contract is the interface Fence: claim a term, then write only under
// the claimed term. The coordinator of term t claims the fence before its
// work starts (election.Callbacks.Claim: a Fence's Claim fits it as it
// is); from the moment Claim returns nil, the store refuses every write of
// an older term, whether or not the new coordinator has written yet. A
// coordinator that was paused, starved or cut off and still believes it
// leads has its writes refused with ErrStale instead of interleaving them
// with its successor's. SQL (any database/sql database) and Memory (one
// process) implement Fence; Example_store shows a store of one's own (an
// HTTP service) that does.
//
//	fence := &fencing.SQL{DB: db}
//	if err := fence.Init(ctx); err != nil { ... }
//	h, err := coordelect.Start(ctx, coordelect.Config{
//		...
//		Callbacks: election.Callbacks{
//			Claim: fence.Claim,
//			OnStartedLeading: func(ctx context.Context, term uint64) {
//				err := fence.Write(ctx, term, func(tx *sql.Tx) error {
//					_, err := tx.ExecContext(ctx, "INSERT INTO ledger ...")
//					return err
//				})
//				...
//			},
//		},
//	})
//
// A store that only refuses terms below the highest that has written
// (UPDATE ... WHERE fence <= $term, with no Claim) is not this recipe: it
// accepts a deposed coordinator's writes until its successor first writes.
//
// # When Claim returns ErrStale
//
// The fence holds a later term than the one claimed: this term is
// superseded, and no retry can succeed, so the elector does not retry it
// (it retries any other error) and OnStartedLeading does not run in this
// term. Usually the coordinator has a successor it has not heard of yet, or will
// learn of the later term shortly. Step down at once (coordelect's
// Handle.Resign, election.Elector.Resign; Claim may call it before it
// returns the error), or do nothing and wait: the node follows the later
// term when it hears of it, and Claim runs again whenever it starts
// leading again. Note that the terms do not outlive the cluster: members
// that all restart together start again at epoch 1, below a fence claimed
// before, and then every Claim is stale until the epochs have caught up.
//
// # What is guaranteed
//
// For a store whose every write goes through Write: once Claim(t) has
// returned nil, no write made with a term below t commits afterwards, and a
// write made with term t commits only if no Claim of a higher term
// committed before it. The writes that commit are therefore in
// non-decreasing term order, and the writes of one term are never
// interleaved with a later term's. This holds with or without the election's
// quorum guard, whatever the pauses and the clocks: the store itself
// decides, not the coordinator's belief. It does not make the work
// exclusive: a deposed coordinator still runs until it notices, and its
// side effects outside the store (a message sent, a file written) are not
// fenced. Check election.Elector.Check(term) before those.
//
// A write whose commit fails with an error other than ErrStale (the
// connection dropped during COMMIT, say) may or may not have committed,
// as with any database transaction.
//
// # What the database must provide (SQL)
//
// Write's first statement updates the fence row under the condition that
// it still holds the writer's term, in the transaction that then carries
// the caller's writes; Claim updates the same row. The database must
// therefore hold a write lock on a row it has updated until the
// transaction ends, and re-check (or abort) an UPDATE's condition when the
// row changed while it waited: SQLite (its database-wide write lock),
// PostgreSQL (row locks; READ COMMITTED re-evaluates the WHERE clause,
// REPEATABLE READ and SERIALIZABLE abort with a serialization error),
// MySQL/InnoDB and SQL Server all do, at every isolation level they offer.
// A store without transactions, or one that lets two transactions update
// the same row concurrently (last writer wins), cannot be fenced this way.
//
// Memory is the same fence for tests and examples, in one process.
package fencing

import (
	"errors"

	"github.com/coordelect/coordelect/internal/fenceerr"
)

// Errors of Claim and Write.
var (
	// ErrStale: the fence has moved past the term (a later coordinator
	// claimed it): this coordinator was deposed and its write is refused.
	// A Claim that returns it (wrapped) is not retried by the elector
	// (election.Callbacks.Claim): see "When Claim returns ErrStale".
	ErrStale = fenceerr.ErrStale
	// ErrUnclaimed: Write with a term the fence has not reached: the
	// coordinator did not Claim the fence first (or its Claim failed).
	ErrUnclaimed = errors.New("fencing: term not claimed: Claim the fence before writing")
)
