package coordelect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

// Handle is a running member, returned by Start, and everything a service
// needs of it: who leads the unnamed election (Leader, IsLeader,
// Subscribe), the checks before a leader's side effects (Check, Valid,
// LeaseDeadline, LeaseContext, VerifyLeader), handing the role on (Resign,
// TransferTo), an HTTP handler with status, leader, health and readiness
// (Handler), and the shutdown (Close). The leader's work gets it from its
// context (FromContext). Its methods are safe for concurrent use.
type Handle struct {
	leadership // the shared methods, delegating to el

	node         *membership.Node
	el           *election.Elector
	rec          *metrics.Recorder // nil without a Registerer
	log          hclog.Logger
	leaveTimeout time.Duration
	cancel       context.CancelFunc // ends Run's context: the hand-off

	done   chan struct{} // closed when Run has returned
	runErr error         // Run's result, set before done is closed

	closeOnce sync.Once
	closeErr  error
}

// Leader is the coordinator as this member sees it, with what it
// publishes.
type Leader struct {
	election.Leadership
	// Payload is what the coordinator publishes (its Config.Payload), ""
	// when no coordinator is known.
	Payload string
}

// Elector returns the elector, for what Handle does not wrap (Status,
// SetRating, ...). Do not call its Run or Close: Close the Handle.
func (h *Handle) Elector() *election.Elector { return h.el }

// Node returns the membership node (Members, Stats, SetPayload, ...). Do
// not Leave or Close it: Close the Handle.
func (h *Handle) Node() *membership.Node { return h.node }

// Addr is the "host:port" other members reach this member at: give it to
// the others as a seed.
func (h *Handle) Addr() string { return h.node.Addr() }

// Handler returns an http.Handler serving this member's state
// (election.NewHandler): GET /status, the JSON document `demo node`
// serves, with the members the membership layer knows and their
// addresses; GET /leader, the coordinator, its term and payload (503 while
// none is known); GET /healthz, 200 while the elector runs, 503 once it
// has stopped; GET /readyz, 200 once this member knows a coordinator found
// with the members it was told to join, else 503 with the reasons as JSON
// (election.Readiness: no seed reachable, waiting for the expected voters,
// no quorum, electing, stopped). Mount it with http.StripPrefix under a
// prefix of your choice.
func (h *Handle) Handler() http.Handler {
	return election.NewHandler(h.el, h.node.StatusMembers)
}

// Done is closed when the elector has stopped: after Close, when Start's
// context ended, or when the membership layer failed for good (see Err).
// Close must still be called.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Err returns why the elector stopped, once Done is closed: nil after
// Close or the end of Start's context; an error wrapping
// election.ErrTransportClosed when the membership layer failed (e.g. a
// *membership.NameTakenError: another member holds this Name).
func (h *Handle) Err() error {
	select {
	case <-h.done:
		return h.runErr
	default:
		return nil
	}
}

// Close shuts the member down in order: a coordinator hands off to the
// next voter by rating and waits for it to announce itself (up to
// election.Config.HandoffTimeout); the member leaves the cluster, waiting
// up to Config.LeaveTimeout for the news to go out (a leave not confirmed
// in time, as when every member stops at once, is logged at Warn, not
// returned); memberlist shuts down
// and every goroutine has ended; the metrics are unregistered. If ctx
// ends first, the hand-off or the leave is cut short (the others then see
// a crash) and Close returns ctx's error with the rest. It returns every
// error met, joined. Close is idempotent; later calls return the first
// call's result. Do not call it from a Callback: it waits for them.
func (h *Handle) Close(ctx context.Context) error {
	h.closeOnce.Do(func() { h.closeErr = h.close(ctx) })
	return h.closeErr
}

func (h *Handle) close(ctx context.Context) error {
	var errs []error
	h.cancel()
	select {
	case <-h.done:
	case <-ctx.Done():
		_ = h.el.Close() // stop at once; waits for Run
		<-h.done
		errs = append(errs, fmt.Errorf("coordelect: hand-off cut short: %w", ctx.Err()))
	}
	if h.runErr != nil {
		errs = append(errs, fmt.Errorf("coordelect: elector: %w", h.runErr))
	}
	if err := h.leave(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := h.node.Close(); err != nil {
		errs = append(errs, fmt.Errorf("coordelect: closing the membership node: %w", err))
	}
	h.unregister()
	return errors.Join(errs...)
}

// leave tells the cluster this member leaves, within LeaveTimeout and
// ctx's deadline; a node that failed for good (Err) cannot, and it has
// been reported already.
func (h *Handle) leave(ctx context.Context) error {
	if h.node.Err() != nil {
		return nil
	}
	timeout := h.leaveTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("coordelect: no time left to leave the cluster: %w", err)
	}
	if timeout <= 0 {
		return fmt.Errorf("coordelect: no time left to leave the cluster: %w", context.DeadlineExceeded)
	}
	err := h.node.Leave(timeout)
	if errors.Is(err, membership.ErrLeaveUnconfirmed) {
		// The leave went out, or the others are leaving too (a whole
		// cluster stopping): either way they will see this member gone.
		h.log.Warn("the leave was not confirmed in time; the others may detect a failure instead", "timeout", timeout)
		return nil
	}
	if err != nil {
		return fmt.Errorf("coordelect: leaving the cluster: %w", err)
	}
	return nil
}

func (h *Handle) unregister() {
	if h.rec != nil {
		h.rec.Unregister()
	}
}
