package main

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/coordelect/coordelect/fencing"
)

// fencing.SQL against SQLite, with two connections pools standing for two
// replicas' processes.
func TestSQLFenceOnSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	db1, f1, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db1.Close()
	db2, f2, err := openStore(ctx, path) // Init again: the row is kept
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	insert := func(term uint64) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO ledger (term, seq, node) VALUES (?, 0, 'x')", int64(term))
			return err
		}
	}
	if err := f1.Write(ctx, 3, insert(3)); !errors.Is(err, fencing.ErrUnclaimed) {
		t.Fatalf("write before the claim: %v, want ErrUnclaimed", err)
	}
	if err := f1.Claim(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := f1.Claim(ctx, 3); err != nil {
		t.Fatalf("re-claim of term 3: %v, want nil", err)
	}
	if err := f1.Write(ctx, 3, insert(3)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := f1.Write(ctx, 3, func(tx *sql.Tx) error { _ = insert(3)(tx); return boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}

	// Term 3 is inside a write when term 4 claims from the other pool: the
	// claim waits for the write's commit, and afterwards term 3 is refused.
	inside, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- f1.Write(ctx, 3, func(tx *sql.Tx) error {
			close(inside)
			<-release
			return insert(3)(tx)
		})
	}()
	<-inside
	claimed := make(chan error, 1)
	go func() { claimed <- f2.Claim(ctx, 4) }()
	select {
	case err := <-claimed:
		t.Fatalf("claim of term 4 returned (%v) while term 3's write held the fence", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("term 3's write: %v", err)
	}
	if err := <-claimed; err != nil {
		t.Fatalf("term 4's claim: %v", err)
	}
	if err := f1.Write(ctx, 3, insert(3)); !errors.Is(err, fencing.ErrStale) {
		t.Fatalf("term 3 after term 4 claimed: %v, want ErrStale", err)
	}
	if err := f1.Claim(ctx, 3); !errors.Is(err, fencing.ErrStale) {
		t.Fatalf("claim of term 3 after term 4: %v, want ErrStale", err)
	}
	if held, err := f1.Term(ctx); err != nil || held != 4 {
		t.Fatalf("Term = %d, %v; want 4", held, err)
	}
	rows, err := ReadLedger(ctx, db2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Term != 3 || rows[1].Term != 3 {
		t.Fatalf("ledger %v: want the two committed writes of term 3 (the failed fn rolled back)", rows)
	}
}
