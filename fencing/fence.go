package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// DefaultTable is the fence table's name when SQL.Table is empty.
const DefaultTable = "fence"

// SQL is a fence kept in a database/sql database: one row (id = 1) of a
// table of its own holding the fenced term and a count of the fenced
// writes. Its methods may be called concurrently, by any number of
// processes sharing the database. Terms are stored as signed 64-bit
// integers: a term above math.MaxInt64 is refused.
//
// The statements are plain SQL (CREATE TABLE IF NOT EXISTS, INSERT, UPDATE
// and SELECT on integer columns) that SQLite, PostgreSQL, MySQL and others
// accept; set Placeholder for drivers that do not take "?".
type SQL struct {
	// DB is the database. Required.
	DB *sql.DB
	// Table is the fence table's name, letters, digits and underscores.
	// Default DefaultTable.
	Table string
	// Placeholder returns the driver's placeholder for the n-th argument
	// of a statement (from 1). Default: "?" (SQLite, MySQL); use Dollar
	// for PostgreSQL drivers.
	Placeholder func(n int) string
}

// Dollar is the PostgreSQL placeholder style: $1, $2, ...
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// Init creates the fence table and its row (term 0) if they are missing.
// Several processes may call it at once.
func (f *SQL) Init(ctx context.Context) error {
	table, err := f.table()
	if err != nil {
		return err
	}
	create := "CREATE TABLE IF NOT EXISTS " + table +
		" (id INTEGER PRIMARY KEY, term BIGINT NOT NULL, writes BIGINT NOT NULL)"
	if _, err := f.DB.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("fencing: creating table %s: %w", table, err)
	}
	if _, err := f.Term(ctx); err == nil {
		return nil
	}
	insert := "INSERT INTO " + table + " (id, term, writes) VALUES (1, 0, 0)"
	if _, err := f.DB.ExecContext(ctx, insert); err != nil {
		// Another process may have inserted it first: then it is there.
		if _, again := f.Term(ctx); again != nil {
			return fmt.Errorf("fencing: creating the fence row: %w", err)
		}
	}
	return nil
}

// Term returns the term the fence holds (0 before the first Claim).
func (f *SQL) Term(ctx context.Context) (uint64, error) {
	return f.readTerm(ctx, f.DB.QueryRowContext)
}

// Claim advances the fence to term: from its successful return on, Write
// refuses every older term. It returns ErrStale if the fence is already
// past term (a later coordinator claimed it), and nil if it already holds
// term (a retried Claim of the same term). It has the signature of
// election.Callbacks.Claim.
func (f *SQL) Claim(ctx context.Context, term uint64) error {
	table, arg, err := f.prepare(term)
	if err != nil {
		return err
	}
	update := "UPDATE " + table + " SET term = " + f.ph(1) + " WHERE id = 1 AND term < " + f.ph(2)
	res, err := f.DB.ExecContext(ctx, update, arg, arg)
	if err != nil {
		return fmt.Errorf("fencing: claiming term %s: %w", termText(term), err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	held, err := f.Term(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("fencing: claiming term %s: %w", termText(term), err)
	case held == term:
		return nil // this term claimed it already
	case held > term:
		return fmt.Errorf("%w: claiming term %s, the fence holds %s", ErrStale, termText(term), termText(held))
	}
	// The fence is below term yet the UPDATE matched nothing: lost row?
	return fmt.Errorf("fencing: claiming term %s: the fence holds %s but did not move", termText(term), termText(held))
}

// Write runs fn in a transaction that commits only if the fence still holds
// term: it first updates the fence row on that condition (which locks the
// row until the transaction ends, so that no Claim can move the fence in
// between), then runs fn, then commits. It returns ErrStale if a later term
// holds the fence, ErrUnclaimed if term never claimed it, fn's error (the
// transaction rolled back), or the commit's. fn must make its writes
// through tx and must not commit or roll it back.
func (f *SQL) Write(ctx context.Context, term uint64, fn func(tx *sql.Tx) error) (err error) {
	table, arg, err := f.prepare(term)
	if err != nil {
		return err
	}
	tx, err := f.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fencing: write in term %s: %w", termText(term), err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// writes = writes + 1 changes the row, so every database counts it in
	// RowsAffected (MySQL counts only rows whose value changed).
	update := "UPDATE " + table + " SET writes = writes + 1 WHERE id = 1 AND term = " + f.ph(1)
	res, err := tx.ExecContext(ctx, update, arg)
	if err != nil {
		return fmt.Errorf("fencing: write in term %s: %w", termText(term), err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("fencing: write in term %s: %w", termText(term), err)
	} else if n != 1 {
		return f.refusal(ctx, tx, term)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fencing: commit in term %s: %w", termText(term), err)
	}
	return nil
}

// refusal says why the fence row did not hold term.
func (f *SQL) refusal(ctx context.Context, tx *sql.Tx, term uint64) error {
	held, err := f.readTerm(ctx, tx.QueryRowContext)
	switch {
	case err != nil:
		return fmt.Errorf("fencing: write in term %s: %w", termText(term), err)
	case held > term:
		return fmt.Errorf("%w: write in term %s, the fence holds %s", ErrStale, termText(term), termText(held))
	}
	return fmt.Errorf("%w: write in term %s, the fence holds %s", ErrUnclaimed, termText(term), termText(held))
}

// readTerm reads the fence through query (the database's or a
// transaction's QueryRowContext).
func (f *SQL) readTerm(ctx context.Context, query func(context.Context, string, ...any) *sql.Row) (uint64, error) {
	table, err := f.table()
	if err != nil {
		return 0, err
	}
	var term int64
	if err := query(ctx, "SELECT term FROM "+table+" WHERE id = 1").Scan(&term); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("fencing: table %s has no fence row: call Init first", table)
		}
		return 0, fmt.Errorf("fencing: reading the fence: %w", err)
	}
	return uint64(term), nil
}

// prepare checks the table name and term and converts the term for the
// driver.
func (f *SQL) prepare(term uint64) (table string, arg int64, err error) {
	if table, err = f.table(); err != nil {
		return "", 0, err
	}
	if term == 0 || term > math.MaxInt64 {
		return "", 0, fmt.Errorf("fencing: term %d out of range: want 1..%d", term, int64(math.MaxInt64))
	}
	return table, int64(term), nil
}

// table returns the table's name, checked: it is spliced into statements.
func (f *SQL) table() (string, error) {
	if f.DB == nil {
		return "", errors.New("fencing: SQL.DB is nil")
	}
	t := f.Table
	if t == "" {
		return DefaultTable, nil
	}
	for i, c := range t {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return "", fmt.Errorf("fencing: SQL.Table = %q: want letters, digits and underscores, not starting with a digit", t)
		}
	}
	return t, nil
}

// ph returns the placeholder for the n-th argument.
func (f *SQL) ph(n int) string {
	if f.Placeholder == nil {
		return "?"
	}
	return f.Placeholder(n)
}
