// Package fencing keeps a deposed coordinator from damaging shared state:
// a store keeps a fence, the highest leadership term that has claimed it,
// and accepts a write only if it is made in the term the fence holds.
//
// The coordinator of term t claims the fence before its work starts
// (election.Callbacks.Claim: fence.Claim fits it as it is); from the moment
// Claim returns nil, the store refuses every write of an older term, whether
// or not the new coordinator has written yet. A coordinator that was paused,
// starved or cut off and still believes it leads has its writes refused with
// ErrStale instead of interleaving them with its successor's.
//
//	fence := &fencing.SQL{DB: db}
//	if err := fence.Init(ctx); err != nil { ... }
//	e, err := election.New(election.Config{
//		Transport: tr,
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

import "errors"

// Errors of Claim and Write.
var (
	// ErrStale: the fence has moved past the term (a later coordinator
	// claimed it): this coordinator was deposed and its write is refused.
	ErrStale = errors.New("fencing: stale term: a later term holds the fence")
	// ErrUnclaimed: Write with a term the fence has not reached: the
	// coordinator did not Claim the fence first (or its Claim failed).
	ErrUnclaimed = errors.New("fencing: term not claimed: Claim the fence before writing")
)
