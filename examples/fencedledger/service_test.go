package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordelect/coordelect/membership"
)

// syncBuffer is an event log the test can read while replicas write it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// startReplica starts a replica on 127.0.0.1 port 0 sharing the database
// at db.
func startReplica(t *testing.T, name string, rating int64, quorum int, db string, seeds ...string) *Service {
	t.Helper()
	mc := membership.DefaultConfig()
	mc.Name, mc.Rating, mc.BindAddr, mc.BindPort = name, rating, "127.0.0.1", 0
	mc.Profile, mc.Seeds = membership.ProfileLocal, seeds
	s, err := Start(Config{Membership: mc, Quorum: quorum, DB: db, Events: &syncBuffer{}})
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	return s
}

// waitFor polls cond until it holds, failing the test after a generous
// bound (no assertion on speed: the bound only keeps a broken run from
// hanging).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leader returns the replica whose elector leads, and its term.
func leader(ss map[string]*Service) (string, uint64) {
	for name, s := range ss {
		if id, term, ok := s.el.Leader(); ok && id == name {
			return name, term
		}
	}
	return "", 0
}

// TestReplicasHandOverTheLedger runs three replicas over real memberlist
// with one SQLite file, resigns the leader, then crashes the next one, and
// checks that every ledger row's term is at least every earlier row's and
// that the writes resumed under each new term.
func TestReplicasHandOverTheLedger(t *testing.T) {
	for _, quorum := range []int{0, 3} {
		t.Run(fmt.Sprintf("quorum=%d", quorum), func(t *testing.T) {
			testHandOver(t, quorum)
		})
	}
}

func testHandOver(t *testing.T, quorum int) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	ss := map[string]*Service{"a": startReplica(t, "a", 1, quorum, db)}
	ss["b"] = startReplica(t, "b", 2, quorum, db, ss["a"].Addr())
	ss["c"] = startReplica(t, "c", 3, quorum, db, ss["a"].Addr())
	defer func() {
		for name, s := range ss {
			_ = s.Crash()
			if t.Failed() {
				b := s.cfg.Events.(*syncBuffer)
				b.mu.Lock()
				t.Logf("%s's events:\n%s", name, lastLines(b.b.String(), 30))
				b.mu.Unlock()
			}
		}
	}()
	ctx := context.Background()
	reader := ss["a"].db
	// rowsAbove waits for five rows of one term above floor and returns
	// that term. It does not insist on one leader: on a loaded machine a
	// lease may lapse and the leadership move on its own.
	rowsAbove := func(what string, floor uint64) uint64 {
		var found uint64
		waitFor(t, what, func() bool {
			rows, err := ReadLedger(ctx, reader)
			if err != nil {
				t.Fatal(err)
			}
			n := map[uint64]int{}
			for _, r := range rows {
				if n[r.Term]++; r.Term > floor && n[r.Term] >= 5 {
					found = r.Term
					return true
				}
			}
			return false
		})
		return found
	}
	// act calls fn on the current leader until it succeeds and returns the
	// term it led in.
	act := func(what string, fn func(*Service) error) (string, uint64) {
		var name string
		var term uint64
		waitFor(t, what, func() bool {
			if name, term = leader(ss); name == "" {
				return false
			}
			return fn(ss[name]) == nil
		})
		return name, term
	}
	terms := []uint64{rowsAbove("the first leader's rows", 0)}
	_, resigned := act("a leader to resign", func(s *Service) error { return s.el.Resign(ctx) })
	terms = append(terms, rowsAbove("rows after the resign", max(resigned, terms[0])))
	crashed, term := act("a leader to crash", func(s *Service) error {
		if err := s.Crash(); err != nil {
			t.Fatalf("crash: %v", err)
		}
		return nil
	})
	delete(ss, crashed)
	terms = append(terms, rowsAbove("rows after the crash", max(term, terms[1])))

	for _, s := range ss {
		_ = s.el.Close() // stop writing before the ledger is read
	}
	rows, err := ReadLedger(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckLedger(rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows, terms %v", len(rows), terms)
}

// CheckLedger must catch a row whose term is below an earlier row's, and
// a seq that does not grow within its term.
func TestCheckLedger(t *testing.T) {
	good := []Row{{1, 5, 1, "a"}, {2, 5, 2, "a"}, {3, 7, 1, "b"}, {4, 7, 2, "b"}}
	if err := CheckLedger(good); err != nil {
		t.Fatal(err)
	}
	bad := append(good, Row{5, 5, 3, "a"}, Row{6, 7, 3, "b"})
	err := CheckLedger(bad)
	if err == nil || !strings.Contains(err.Error(), "row 5 (term 5 seq 3 by a) after row 4") {
		t.Fatalf("CheckLedger = %v, want the stale row 5 named", err)
	}
	again := append(good, Row{5, 7, 2, "b"})
	err = CheckLedger(again)
	if err == nil || !strings.Contains(err.Error(), "seq out of order: row 5 (term 7 seq 2 by b) after row 4") {
		t.Fatalf("CheckLedger = %v, want the repeated seq of row 5 named", err)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func TestReport(t *testing.T) {
	rows := []Row{{1, 5, 1, "a"}, {2, 5, 2, "a"}, {3, 7, 1, "b"}, {4, 5, 3, "a"}, {5, 6, 1, "c"}, {6, 7, 2, "b"}}
	rep := Report(rows)
	if rep.Rows != 6 || rep.Terms != 2 || rep.Stale != 2 || !strings.Contains(rep.FirstStale, "row 4 (term 5 seq 3 by a)") {
		t.Fatalf("Report = %+v; want 6 rows, 2 terms, 2 stale (rows 4 and 5)", rep)
	}
}
