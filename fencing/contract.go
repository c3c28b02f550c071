package fencing

import (
	"context"
	"database/sql"
	"fmt"
)

// Fence is the contract of a fenced store, whatever keeps the state:
// claim a term, then write only under the claimed term. SQL and Memory
// implement it; so can a store of your own (a file, an HTTP service, an
// object store with conditional writes: see the package's Examples), as
// long as the store itself, not its client, checks the term in the same
// atomic step as the change it guards.
//
// W is what a write runs, the store's own way to make changes: a
// func(*sql.Tx) error for SQL, a func() error for Memory.
//
// With every write made through Write, a store that keeps this contract
// gives the guarantee the package describes: once Claim(t) has returned
// nil, no write of a term below t takes effect, whatever the pauses,
// clocks and partitions of the coordinators.
type Fence[W any] interface {
	// Claim advances the fence to term: from its successful return on,
	// Write refuses every lower term. It returns nil when the fence
	// already holds term (a retried Claim), and an error wrapping
	// ErrStale when it holds a higher one (a later coordinator claimed
	// it). Its signature is election.Callbacks.Claim's.
	Claim(ctx context.Context, term uint64) error
	// Write makes the change fn describes only if the fence holds
	// exactly term, with no Claim taking effect between the check and
	// the change. It returns an error wrapping ErrStale when a higher
	// term holds the fence and one wrapping ErrUnclaimed when a lower one
	// does (term was never claimed), and then makes no change; otherwise
	// fn's error or the store's.
	Write(ctx context.Context, term uint64, fn W) error
}

var (
	_ Fence[func(*sql.Tx) error] = (*SQL)(nil)
	_ Fence[func() error]        = (*Memory)(nil)
)

// termText formats a term for the errors: as the logs show it (epoch.tag,
// election.TermText) and as the store keeps it.
func termText(t uint64) string { return fmt.Sprintf("%d.%d (%d)", t>>32, uint32(t), t) }
