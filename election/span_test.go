package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/fencing"
)

// ackDrops are the acknowledgement outages of the lapse tests: 50 ms to
// 300 ms in steps of 25. Against the default 150-ms lease renewed every
// 50 ms, the shortest keep the lease, those of about 100-150 ms let it
// lapse and come back in the same term (a second span), the longest make
// the coordinator abdicate (a new term).
func ackDrops() []time.Duration {
	var out []time.Duration
	for d := 50 * time.Millisecond; d <= 300*time.Millisecond; d += 25 * time.Millisecond {
		out = append(out, d)
	}
	return out
}

// dropAcks loses every heartbeat acknowledgement: the coordinator hears
// no one confirm its lease, while the followers still hear it.
func dropAcks(m core.Message) bool { return m.Type == core.MsgHeartbeatAck }

// spanLog is what the callbacks of a cluster's members saw of their spans.
type spanLog struct {
	mu      sync.Mutex
	running map[string]election.Span // the span whose OnStartedLeading runs, per member
	started map[string][]election.Span
	stopped map[string]int
	errs    []string
}

func newSpanLog() *spanLog {
	return &spanLog{running: map[string]election.Span{}, started: map[string][]election.Span{}, stopped: map[string]int{}}
}

func (s *spanLog) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// callbacks are member id's Callbacks: Claim advances fence (a claim of
// the term it holds already passes, so every span of a term claims it
// again), OnStartedLeading runs until its context ends. Each checks what
// the contract says: Claim never runs while the member's previous span
// still works, the context carries the span of the term, and once the
// context has ended the span's Check fails.
func (s *spanLog) callbacks(id string, fence *fencing.Memory) election.Callbacks {
	return election.Callbacks{
		Claim: func(ctx context.Context, term uint64) error {
			s.mu.Lock()
			if r, ok := s.running[id]; ok {
				s.errs = append(s.errs, fmt.Sprintf("%s: Claim of term %s while span %v still works", id, core.Term(term), r))
			}
			s.mu.Unlock()
			err := fence.Claim(ctx, term)
			if err != nil && ctx.Err() == nil {
				s.fail("%s: Claim(%s) = %v", id, core.Term(term), err)
			}
			return err
		},
		OnStartedLeading: func(ctx context.Context, term uint64) {
			sp, ok := election.SpanFromContext(ctx)
			if !ok || sp.Term != term || sp.Number < 1 {
				s.fail("%s: OnStartedLeading(%s) context carries span %+v (ok %v)", id, core.Term(term), sp, ok)
			}
			s.mu.Lock()
			s.running[id] = sp
			s.started[id] = append(s.started[id], sp)
			s.mu.Unlock()
			<-ctx.Done()
			if err := sp.Check(); err == nil {
				s.fail("%s: span %s/%d: Check passes after its context ended", id, core.Term(term), sp.Number)
			}
			if _, ok := sp.Deadline(); ok {
				s.fail("%s: span %s/%d: a lease deadline after its context ended", id, core.Term(term), sp.Number)
			}
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
		},
		OnStoppedLeading: func(uint64) {
			s.mu.Lock()
			s.stopped[id]++
			s.mu.Unlock()
		},
	}
}

// check asserts that each member's spans were numbered 1, 2, ... within
// each term, each started once, and that every one that ended was
// reported stopped.
func (s *spanLog) check(t *testing.T) (spans, again int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errs {
		t.Error(e)
	}
	for id, started := range s.started {
		next := map[uint64]int{}
		for _, sp := range started {
			if next[sp.Term]++; sp.Number != next[sp.Term] {
				t.Errorf("%s: OnStartedLeading for span %s/%d, want number %d", id, core.Term(sp.Term), sp.Number, next[sp.Term])
			}
			if sp.Number > 1 {
				again++
			}
		}
		ended := len(started)
		if _, ok := s.running[id]; ok {
			ended--
		}
		if s.stopped[id] != ended {
			t.Errorf("%s: %d spans ended, %d OnStoppedLeading", id, ended, s.stopped[id])
		}
		spans += len(started)
	}
	return spans, again
}

// spanMonitor checks, every millisecond of bubble time once the bubble is
// quiescent (synctest.Wait), that every member that IsLeader has a live
// leadership context: the span its loop last started, of the term it
// leads in, not cancelled, its Check passing, and its OnStartedLeading
// running. It also measures the opposite, harmless lag: a span whose
// context still lives while Check already fails (the lease ran out on the
// clock and the loop has not ended the span yet).
type spanMonitor struct {
	c       *cluster
	log     *spanLog
	bad     int           // instants with IsLeader and no live context
	lag     time.Duration // the longest run of a live context without IsLeader
	since   map[string]time.Time
	lapses  int // spans ended that the monitor saw live
	current map[string]election.Span
}

func newSpanMonitor(c *cluster, log *spanLog) *spanMonitor {
	return &spanMonitor{c: c, log: log, since: map[string]time.Time{}, current: map[string]election.Span{}}
}

// run checks every millisecond for d, or until done returns true; it
// reports whether done did.
func (m *spanMonitor) run(d time.Duration, done func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-time.After(time.Millisecond)
		synctest.Wait()
		m.check()
		if done != nil && done() {
			return true
		}
	}
	return false
}

func (m *spanMonitor) check() {
	for id, mb := range m.c.members {
		sp, ctx, live := election.LeadingSpan(mb.e)
		if prev, ok := m.current[id]; ok && (!live || sp != prev) {
			m.lapses++
		}
		delete(m.current, id)
		if live {
			m.current[id] = sp
		}
		leading := mb.e.IsLeader()
		if leading {
			_, term, _ := mb.e.Leader()
			m.log.mu.Lock()
			running, working := m.log.running[id]
			m.log.mu.Unlock()
			if !live || ctx.Err() != nil || sp.Term != term || !sp.Valid() || !working || running != sp {
				if m.bad++; m.bad <= 5 {
					m.c.t.Errorf("%s leads in %s with no live span: loop's span %v (live %v), callbacks' %v (running %v)%s",
						id, core.Term(term), sp, live, running, working, m.c.describe())
				}
			}
		}
		if live && !leading {
			if _, ok := m.since[id]; !ok {
				m.since[id] = time.Now()
			}
			m.lag = max(m.lag, time.Since(m.since[id]))
		} else {
			delete(m.since, id)
		}
	}
}

// TestSpansThroughLapses: a guarded coordinator loses its acknowledgements
// again and again, for 50 to 300 ms; every millisecond, every member that
// IsLeader has a live leadership context whose OnStartedLeading runs, each
// span gets its own Claim and OnStartedLeading with the next Number of its
// term, and a lease that lapses and comes back in the same term starts a
// new span instead of leaving the leader without work.
func TestSpansThroughLapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fence := &fencing.Memory{}
		log := newSpanLog()
		c := newCluster(t, voters(5), func(cfg *election.Config) {
			cfg.QuorumSize = 5
			cfg.Callbacks = log.callbacks(cfg.Transport.Identity().Name, fence)
		})
		mon := newSpanMonitor(c, log)
		agreed := func() bool { l, _ := c.agreed(); return l != "" }
		if !mon.run(guardedStart, agreed) {
			t.Fatalf("no agreement:%s", c.describe())
		}
		// An outage, then the cluster agrees again, and the lease holds
		// a while.
		outage := func(what string, until func() bool) {
			c.net.SetDrop(dropAcks)
			mon.run(time.Second, until)
			c.net.SetDrop(nil)
			if !mon.run(5*time.Second, agreed) {
				t.Fatalf("acks lost %s: no agreement after:%s", what, c.describe())
			}
		}
		// Each round starts its outages at another phase of the
		// heartbeat rounds: 0, 17 and 34 ms after a round. An outage of
		// a set length that makes the lease lapse mostly ends after the
		// coordinator abdicated: it renews only with the round a
		// heartbeat interval after the lapse, by when it has given up.
		// So each is followed by one that ends as soon as the lease has
		// lapsed, which the coordinator survives in the same term.
		for round := range 3 {
			for _, d := range ackDrops() {
				end := time.Now().Add(d)
				outage(fmt.Sprintf("for %v in round %d", d, round), func() bool { return !time.Now().Before(end) })
				mon.run(2*lease+time.Duration(round)*17*time.Millisecond, nil)
				if !mon.run(5*time.Second, agreed) { // a preemption may be under way
					t.Fatalf("no agreement:%s", c.describe())
				}
				l, term := c.agreed()
				lapsed := func() bool { return c.members[l].e.Check(term) != nil }
				outage(fmt.Sprintf("until the lease lapsed in round %d", round), lapsed)
				mon.run(2*lease, nil)
			}
		}
		spans, again := log.check(t)
		t.Logf("%d spans (%d again in a term already led), %d ended under the monitor; "+
			"the longest live context after Check failed: %v; instants led with no live span: %d",
			spans, again, mon.lapses, mon.lag, mon.bad)
		if again == 0 {
			t.Error("no lease lapsed and came back in the same term: the test did not exercise a second span")
		}
		if mon.lapses < 10 {
			t.Errorf("%d spans ended, want at least 10 lapses", mon.lapses)
		}
		if mon.lag > election.DefaultTick {
			t.Errorf("a span's context outlived its Check by %v, more than a tick", mon.lag)
		}
	})
}

// TestSpanMethods: after a lease lapses and comes back in the same term,
// the first span's Check, Deadline and Verify fail although the term is
// led again, and the second span's pass; SpanFromContext finds the span
// in a context derived from the leadership context.
func TestSpanMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ctxs []context.Context
		c := newCluster(t, voters(3), func(cfg *election.Config) {
			cfg.QuorumSize = 3
			cfg.Callbacks.OnStartedLeading = func(ctx context.Context, term uint64) {
				mu.Lock()
				ctxs = append(ctxs, ctx)
				mu.Unlock()
				<-ctx.Done()
			}
		})
		term, _ := c.waitAgreed(guardedStart, "c", 0)
		leader := c.members["c"].e
		// Lose the acks until the lease lapses, and not until the
		// coordinator abdicates.
		c.net.SetDrop(dropAcks)
		for leader.Check(term) == nil {
			<-time.After(time.Millisecond)
		}
		c.net.SetDrop(nil)
		c.waitAgreed(time.Second, "c", term-1)
		if _, now, _ := leader.Leader(); now != term {
			t.Fatalf("leader in term %s after the lapse, want the same term %s", core.Term(now), core.Term(term))
		}
		synctest.Wait()
		mu.Lock()
		got := slices.Clone(ctxs)
		mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%d OnStartedLeading calls, want 2 (one per span)", len(got))
		}
		derived, cancel := context.WithCancel(got[1])
		defer cancel()
		first, ok1 := election.SpanFromContext(got[0])
		second, ok2 := election.SpanFromContext(derived)
		if !ok1 || !ok2 || first.Term != term || second.Term != term || first.Number != 1 || second.Number != 2 {
			t.Fatalf("spans %+v (%v), %+v (%v), want %s/1 and %s/2", first, ok1, second, ok2, core.Term(term), core.Term(term))
		}
		if got[0].Err() == nil || got[1].Err() != nil {
			t.Errorf("contexts: first %v, second %v; want the first ended, the second live", got[0].Err(), got[1].Err())
		}
		if err := leader.Check(term); err != nil {
			t.Errorf("Elector.Check(term) = %v", err)
		}
		if err := first.Check(); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("first span's Check = %v, want ErrNotLeader", err)
		}
		if err := second.Check(); err != nil {
			t.Errorf("second span's Check = %v", err)
		}
		if _, ok := first.Deadline(); ok {
			t.Error("the first span has a lease deadline")
		}
		if d, ok := second.Deadline(); !ok || !d.After(time.Now()) {
			t.Errorf("second span's Deadline = %v, %v", d, ok)
		}
		if err := first.Verify(context.Background()); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("first span's Verify = %v, want ErrNotLeader", err)
		}
		if err := second.Verify(context.Background()); err != nil {
			t.Errorf("second span's Verify = %v", err)
		}
		if err := (election.Span{}).Check(); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("zero Span's Check = %v, want ErrNotLeader", err)
		}
	})
}
