package main

import (
	"context"
	"database/sql"
	"fmt"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"

	"github.com/coordelect/coordelect/fencing"
)

// openStore opens the SQLite database at path, shared by every replica on
// the host, and creates the fence and the ledger if they are missing.
// Transactions begin IMMEDIATE (they take SQLite's write lock at BEGIN)
// and wait up to 10 s for a lock another process holds.
func openStore(ctx context.Context, path string) (*sql.DB, *fencing.SQL, error) {
	dsn := "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, err
	}
	fence := &fencing.SQL{DB: db}
	err = fence.Init(ctx)
	if err == nil {
		_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ledger (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			term INTEGER NOT NULL,
			seq INTEGER NOT NULL,
			node TEXT NOT NULL)`)
	}
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("database %s: %w", path, err)
	}
	return db, fence, nil
}

// Row is one ledger line: the term and sequence number of the write, and
// the replica that made it, in commit order (ID).
type Row struct {
	ID   int64
	Term uint64
	Seq  int64
	Node string
}

// ReadLedger returns the ledger in commit order.
func ReadLedger(ctx context.Context, db *sql.DB) ([]Row, error) {
	rows, err := db.QueryContext(ctx, "SELECT id, term, seq, node FROM ledger ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var term int64
		if err := rows.Scan(&r.ID, &term, &r.Seq, &r.Node); err != nil {
			return nil, err
		}
		r.Term = uint64(term)
		out = append(out, r)
	}
	return out, rows.Err()
}

// CheckLedger returns an error naming the first row whose term is below an
// earlier row's (a write the fence should have refused), or whose seq does
// not follow the last one of its term (a row written twice or lost in the
// order of one leader's writes).
func CheckLedger(rows []Row) error {
	var top Row
	for _, r := range rows {
		switch {
		case r.Term < top.Term:
			return fmt.Errorf("stale write accepted: row %d (term %d seq %d by %s) after row %d (term %d seq %d by %s)",
				r.ID, r.Term, r.Seq, r.Node, top.ID, top.Term, top.Seq, top.Node)
		case r.Term == top.Term && r.Seq <= top.Seq:
			return fmt.Errorf("seq out of order: row %d (term %d seq %d by %s) after row %d (term %d seq %d by %s)",
				r.ID, r.Term, r.Seq, r.Node, top.ID, top.Term, top.Seq, top.Node)
		}
		top = r
	}
	return nil
}

// LedgerReport is what `fencedledger -check` prints: the rows, the terms
// that wrote, and the rows whose term is below an earlier row's (stale
// writes the fence should have refused), with the first of them.
type LedgerReport struct {
	Rows       int    `json:"rows"`
	Terms      int    `json:"terms"`
	Stale      int    `json:"stale"`
	FirstStale string `json:"first_stale,omitempty"`
}

// Report checks the ledger rows, in commit order.
func Report(rows []Row) LedgerReport {
	var rep LedgerReport
	var top Row
	for _, r := range rows {
		rep.Rows++
		switch {
		case r.Term < top.Term:
			if rep.Stale++; rep.Stale == 1 {
				rep.FirstStale = CheckLedger([]Row{top, r}).Error()
			}
		case r.Term > top.Term:
			rep.Terms++
			top = r
		}
	}
	return rep
}
