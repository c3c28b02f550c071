package fencing

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// The table name is spliced into SQL: only plain identifiers pass, and a
// term that does not fit a signed 64-bit column is refused before any I/O.
func TestSQLChecksBeforeIO(t *testing.T) {
	db := &sql.DB{} // never used: every case fails before it
	for _, tc := range []struct {
		table string
		term  uint64
		want  string
	}{
		{"fence; DROP TABLE x", 1, "SQL.Table"},
		{"1fence", 1, "SQL.Table"},
		{"fence-x", 1, "SQL.Table"},
		{"", 0, "out of range"},
		{"my_fence2", 1 << 63, "out of range"},
	} {
		f := &SQL{DB: db, Table: tc.table}
		err := f.Claim(context.Background(), tc.term)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Table %q, term %d: Claim = %v, want an error naming %q", tc.table, tc.term, err, tc.want)
		}
		err = f.Write(context.Background(), tc.term, func(*sql.Tx) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Table %q, term %d: Write = %v, want an error naming %q", tc.table, tc.term, err, tc.want)
		}
	}
	if _, err := (&SQL{}).Term(context.Background()); err == nil || !strings.Contains(err.Error(), "DB is nil") {
		t.Errorf("nil DB: %v", err)
	}
	if got := Dollar(2); got != "$2" {
		t.Errorf("Dollar(2) = %q", got)
	}
}
