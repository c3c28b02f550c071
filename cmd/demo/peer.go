package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

// peer is one live member, as a service embedding coordelect runs it: a
// membership.Node, the election.Elector on top of it, and a Prometheus
// registry of its own for its metrics.
type peer struct {
	name   string
	mem    *membership.Node
	el     *election.Elector
	jobs   []*election.Election // the named elections, in peerConfig.jobs order
	reg    *prometheus.Registry
	rec    *metrics.Recorder
	api    http.Handler       // election.NewHandler: /status, /leader, /healthz, /readyz
	cancel context.CancelFunc // ends Run's context: the graceful hand-off
	done   chan struct{}      // closed when Run has returned
	runErr error              // Run's result, set before done is closed
}

// peerConfig is what startPeer needs.
type peerConfig struct {
	mem membership.Config
	el  election.Config // Transport and Recorder are set by startPeer
	// sink, when not nil, is the process's go-metrics sink: memberlist's
	// own metrics join the node's (coordelect_memberlist_*).
	sink *metrics.MemberlistSink
	// labelNode adds node="name" to every series, for several nodes
	// behind one HTTP server.
	labelNode bool
	// extra, when not nil, receives every Recorder call after the
	// Prometheus recorder.
	extra election.Recorder
	// jobs are the named elections the member runs and stands for, with
	// spread placement.
	jobs []string
}

// startPeer starts a member (it listens and joins its seeds at once), its
// metrics on a registry of its own, and an elector on it with its jobs. On error nothing
// is left running.
func startPeer(pc peerConfig) (*peer, error) {
	name := pc.mem.Name
	if pc.sink != nil {
		pc.mem.Memberlist = chainMemberlist(pc.mem.Memberlist, metrics.ConfigureMemberlist(name))
	}
	mem, err := membership.New(pc.mem)
	if err != nil {
		return nil, err
	}
	p := &peer{name: name, mem: mem, reg: prometheus.NewRegistry(), done: make(chan struct{})}
	opts := []metrics.Option{metrics.WithTransportStats(mem)}
	if pc.sink != nil {
		opts = append(opts, metrics.WithMemberlist(pc.sink, name))
	}
	if pc.labelNode {
		opts = append(opts, metrics.WithNode(name))
	}
	if p.rec, err = metrics.New(p.reg, opts...); err != nil {
		_ = mem.Close()
		return nil, err
	}
	pc.el.Transport, pc.el.Recorder = mem, p.rec
	if pc.extra != nil {
		pc.el.Recorder = fanout{p.rec, pc.extra}
	}
	if p.el, err = election.New(pc.el); err != nil {
		p.rec.Unregister()
		_ = mem.Close()
		return nil, err
	}
	for _, job := range pc.jobs {
		j, err := p.el.Election(job, election.ElectionOptions{Placement: election.PlaceSpread})
		if err != nil {
			_ = p.el.Close()
			p.rec.Unregister()
			_ = mem.Close()
			return nil, err
		}
		p.jobs = append(p.jobs, j)
	}
	p.api = election.NewHandler(p.el, mem.StatusMembers)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		p.runErr = p.el.Run(ctx)
	}()
	return p, nil
}

// crash stops the member the way a crash looks to the others: the elector
// stops without a hand-off and memberlist shuts down without leaving.
func (p *peer) crash() error {
	_ = p.el.Close() // before cancel, which would hand off
	p.cancel()
	<-p.done
	defer p.rec.Unregister()
	return p.mem.Close()
}

// stop stops the member gracefully: a coordinator resigns and waits for its
// successor (election.Config.HandoffTimeout), then the member tells the
// cluster it leaves, waiting up to timeout for the news to go out (a leave
// not confirmed in time, as when every node stops at once, is no error).
func (p *peer) stop(timeout time.Duration) error {
	p.cancel()
	<-p.done
	var errs []error
	if p.runErr != nil {
		errs = append(errs, fmt.Errorf("elector %s: %w", p.name, p.runErr))
	}
	if err := p.mem.Leave(timeout); err != nil && !errors.Is(err, membership.ErrLeaveUnconfirmed) {
		errs = append(errs, fmt.Errorf("leaving the cluster: %w", err))
	}
	if err := p.mem.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing member %s: %w", p.name, err))
	}
	p.rec.Unregister()
	return errors.Join(errs...)
}

// chainMemberlist returns a function that applies f (may be nil), then g.
func chainMemberlist(f, g func(*memberlist.Config)) func(*memberlist.Config) {
	if f == nil {
		return g
	}
	return func(c *memberlist.Config) {
		f(c)
		g(c)
	}
}
