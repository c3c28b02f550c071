package coordelect

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

// Start starts a member: it validates cfg, creates the membership.Node
// (listening at once, joining cfg.Seeds), registers the metrics when
// cfg.Registerer is set, and runs an election.Elector on the node until
// ctx ends or Close is called. When ctx ends, a coordinator hands off to
// the next voter by rating and the elector stops (Done is closed); Close
// must still be called, to leave the cluster and release the node.
//
// Errors name the Config field and value at fault. On error nothing is
// left running.
func Start(ctx context.Context, cfg Config) (*Handle, error) {
	mc, ec, err := cfg.build()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	node, err := membership.New(mc)
	if err != nil {
		return nil, err
	}
	h := &Handle{node: node, leaveTimeout: cfg.LeaveTimeout, done: make(chan struct{}), log: hclog.NewNullLogger()}
	if cfg.Logger != nil {
		h.log = cfg.Logger.Named("coordelect").With("node", cfg.Name)
	}
	if h.leaveTimeout == 0 {
		h.leaveTimeout = DefaultLeaveTimeout
	}
	if cfg.Registerer != nil {
		if h.rec, err = newRecorder(cfg, node); err != nil {
			return nil, errors.Join(err, node.Close())
		}
		ec.Recorder = h.rec
	}
	ec.Transport, ec.Callbacks = node, h.carry(ec.Callbacks)
	if h.el, err = election.New(ec); err != nil {
		h.unregister()
		return nil, errors.Join(err, node.Close())
	}
	h.leadership = leadership{h.el}
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	go h.run(runCtx)
	return h, nil
}

func newRecorder(cfg Config, node *membership.Node) (*metrics.Recorder, error) {
	opts := []metrics.Option{metrics.WithTransportStats(node)}
	if cfg.MemberlistSink != nil {
		opts = append(opts, metrics.WithMemberlist(cfg.MemberlistSink, cfg.Name))
	}
	rec, err := metrics.New(cfg.Registerer, opts...)
	if err != nil {
		return nil, fmt.Errorf("coordelect: metrics: %w", err)
	}
	return rec, nil
}

// handleKey is the context key of FromContext.
type handleKey struct{}

// FromContext returns the Handle of the member whose leadership ctx is:
// the context that Callbacks.Claim and Callbacks.OnStartedLeading receive,
// or one derived from it; nil for any other context. The leader's work
// reaches Check, LeaseContext, VerifyLeader, Resign, ... through it, also
// when it starts before Start has returned the Handle.
func FromContext(ctx context.Context) *Handle {
	h, _ := ctx.Value(handleKey{}).(*Handle)
	return h
}

// carry returns cb with the contexts it gives to Claim and
// OnStartedLeading carrying h (FromContext).
func (h *Handle) carry(cb election.Callbacks) election.Callbacks {
	if claim := cb.Claim; claim != nil {
		cb.Claim = func(ctx context.Context, term uint64) error {
			return claim(context.WithValue(ctx, handleKey{}, h), term)
		}
	}
	if lead := cb.OnStartedLeading; lead != nil {
		cb.OnStartedLeading = func(ctx context.Context, term uint64) {
			lead(context.WithValue(ctx, handleKey{}, h), term)
		}
	}
	return cb
}

// run runs the elector until runCtx ends or it is closed.
func (h *Handle) run(runCtx context.Context) {
	defer close(h.done)
	h.runErr = h.el.Run(runCtx)
}
