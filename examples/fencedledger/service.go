package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/fencing"
	"github.com/coordelect/coordelect/membership"
)

// Config configures one replica of the fenced ledger.
type Config struct {
	// Membership is the member's configuration: its identity (Name,
	// Rating: the live replica with the highest rating leads), BindAddr,
	// BindPort, Seeds, Profile, ... (the election settings are copied in).
	Membership membership.Config
	// Quorum is the election's quorum guard, the cluster size; 0 turns it
	// off (the fence alone then keeps a deposed leader out of the ledger).
	Quorum int
	// DB is the SQLite database file every replica shares.
	DB string
	// Interval is the time between two ledger writes of the leader.
	// Default 10ms.
	Interval time.Duration
	// Events, when set, receives the replica's event log (see Event).
	Events io.Writer
	// Logger is the parent logger; nil discards.
	Logger hclog.Logger
}

// Service is one replica: a member, an elector on it, and the leader work
// that appends `term seq` rows to the shared ledger through the fence.
type Service struct {
	cfg    Config
	mem    *membership.Node
	el     *election.Elector
	db     *sql.DB
	fence  *fencing.SQL
	events eventLog
	cancel context.CancelFunc
	done   chan struct{}
	runErr error
	// seqTerm and seq are the last row this replica wrote: a term's rows
	// are numbered 1, 2, ... across all its spans (a lease that lapses and
	// comes back in the same term continues the count). Only lead touches
	// them, and the elector runs one span's leader work at a time.
	seqTerm uint64
	seq     int64
}

// Start opens the store, joins the cluster and starts the elector.
func Start(cfg Config) (*Service, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Millisecond
	}
	s := &Service{cfg: cfg, events: eventLog{w: cfg.Events}, done: make(chan struct{})}
	var err error
	if s.db, s.fence, err = openStore(context.Background(), cfg.DB); err != nil {
		return nil, err
	}
	ec := election.Config{
		QuorumSize: cfg.Quorum,
		Logger:     cfg.Logger,
		Callbacks: election.Callbacks{
			Claim:            s.claim,
			OnStartedLeading: s.lead,
		},
	}
	mc := cfg.Membership
	mc.Logger = cfg.Logger
	mc.SetElection(ec)
	if s.mem, err = membership.New(mc); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	ec.Transport = s.mem
	if s.el, err = election.New(ec); err != nil {
		_ = s.mem.Close()
		_ = s.db.Close()
		return nil, err
	}
	s.events.log(Event{Ev: "start", Name: mc.Name, PID: os.Getpid(), Rating: mc.Rating, Quorum: cfg.Quorum})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.runErr = s.el.Run(ctx)
	}()
	return s, nil
}

// Addr is the member's gossip address, for the others' Seeds.
func (s *Service) Addr() string { return s.mem.Addr() }

// Elector is the replica's elector.
func (s *Service) Elector() *election.Elector { return s.el }

// claim advances the fence to term before the leader work starts
// (Callbacks.Claim): from then on the ledger refuses older terms.
func (s *Service) claim(ctx context.Context, term uint64) error {
	t0 := Mono()
	err := s.fence.Claim(ctx, term)
	ev := Event{Ev: "claim", Term: term, T0: t0, OK: err == nil}
	if err != nil {
		ev.Err = err.Error()
	}
	s.events.log(ev)
	return err
}

// lead is the leader work of term: a ledger write every Interval, each
// checked against the lease first and fenced by the term, until ctx ends.
func (s *Service) lead(ctx context.Context, term uint64) {
	end, _ := s.el.LeaseDeadline(term)
	s.events.log(Event{Ev: "lead", Term: term, LeaseEnd: monoAt(end)})
	defer s.events.log(Event{Ev: "stop", Term: term})
	// "end" stamps the instant the elector ends the leadership, even while
	// a write is in flight and "stop" must wait for it.
	ended := context.AfterFunc(ctx, func() { s.events.log(Event{Ev: "end", Term: term}) })
	defer ended()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	if s.seqTerm != term {
		s.seqTerm, s.seq = term, 0
	}
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// The lease is watched every millisecond, so that the event log
		// bounds this replica's valid leadership closely.
		if d, ok := s.el.LeaseDeadline(term); ok && !d.Equal(end) {
			end = d
			s.events.log(Event{Ev: "lease", Term: term, LeaseEnd: monoAt(end)})
		}
		if time.Now().Before(next) {
			continue
		}
		next = time.Now().Add(s.cfg.Interval)
		s.seq++
		s.write(ctx, term, s.seq)
	}
}

// write appends one ledger row in term, if the lease still holds (Check,
// a local clock check) and the fence still holds term (in the database).
func (s *Service) write(ctx context.Context, term uint64, seq int64) {
	ev := Event{Ev: "write", Term: term, Seq: seq, T0: Mono()}
	if err := s.el.Check(term); err != nil {
		ev.Err = "guard"
		s.events.log(ev)
		return
	}
	d, _ := s.el.LeaseDeadline(term)
	ev.LeaseEnd = monoAt(d)
	err := s.fence.Write(ctx, term, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO ledger (term, seq, node) VALUES (?, ?, ?)",
			int64(term), seq, s.mem.LocalID())
		return err
	})
	switch {
	case err == nil:
		ev.OK = true
	case errors.Is(err, fencing.ErrStale):
		ev.Err = "stale"
	default:
		ev.Err = err.Error()
	}
	s.events.log(ev)
}

// RaiseRating sets this replica's rating above every rating it knows of,
// so that it takes the lead by a hand-off from the incumbent.
func (s *Service) RaiseRating() (int64, error) {
	top := s.mem.Identity().Rating
	for _, m := range s.mem.Members() {
		top = max(top, m.Rating)
	}
	r := top + 1
	if err := s.el.SetRating(r); err != nil {
		return 0, err
	}
	s.events.log(Event{Ev: "rating", Rating: r})
	return r, nil
}

// Stop stops the replica gracefully: a leader hands off and waits for its
// successor, then the member leaves the cluster.
func (s *Service) Stop(leaveTimeout time.Duration) error {
	s.cancel()
	<-s.done
	errs := []error{s.runErr}
	if err := s.mem.Leave(leaveTimeout); err != nil {
		errs = append(errs, fmt.Errorf("leaving the cluster: %w", err))
	}
	errs = append(errs, s.mem.Close(), s.db.Close())
	return errors.Join(errs...)
}

// Crash stops the replica the way a crash looks to the others: no
// hand-off, no leave.
func (s *Service) Crash() error {
	_ = s.el.Close()
	s.cancel()
	<-s.done
	return errors.Join(s.mem.Close(), s.db.Close())
}
