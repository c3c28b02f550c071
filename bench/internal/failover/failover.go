// Package failover is the failover measurement every bench of the module
// runs, whatever the cluster under it (coordelect's electors or
// hashicorp/raft's servers): each round waits a quiet window with the
// leader alive (elections then are spurious), then a random part of the
// leader's heartbeat period (so that crashes fall at every phase of the
// heartbeat cycle), takes the leader out, polls until every survivor
// agrees on a new one, counts the election messages sent until a tail
// after agreement, brings the old leader back and waits for the cluster
// to settle again.
package failover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
)

// Cluster is a running cluster the driver measures. Its methods are called
// from one goroutine.
type Cluster interface {
	// Leader names the leader a round takes out, or says why the cluster
	// is not settled.
	Leader() (string, error)
	// Elections is a count that grows with every election started (or
	// term begun), cumulative since the start.
	Elections() uint64
	// Messages is the count of election messages sent so far, cumulative
	// (heartbeats excluded); ok false when the cluster does not count them.
	Messages() (n uint64, ok bool)
	// TakeOut crashes the leader (or has it resign).
	TakeOut(ctx context.Context, leader string) error
	// WaitAgreement polls every Poll until every running member reports the
	// same leader other than not, and returns when it saw that.
	WaitAgreement(ctx context.Context, not string) (time.Time, error)
	// BringBack restarts the member taken out and waits until the cluster
	// is settled again.
	BringBack(ctx context.Context, leader string) error
}

// Detailer is a Cluster that has something to say, at debug level, about
// the round that just reached agreement (t0: when the leader was taken
// out).
type Detailer interface {
	Detail(t0 time.Time) []any
}

// Poll is how often clusters look at their members while they wait; it
// bounds the resolution of the failover times.
const Poll = time.Millisecond

// Options of a run.
type Options struct {
	Rounds int
	// Quiet is the settled window before each round.
	Quiet time.Duration
	// Phase bounds the random wait after Quiet: the leader's heartbeat
	// period.
	Phase time.Duration
	// Tail is how long messages are still counted after agreement (late
	// answers, a duplicate announcement), before the leader comes back.
	Tail time.Duration
	Log  hclog.Logger
}

// Messages summarises the election messages per failover.
type Messages struct {
	P50 uint64 `json:"p50"`
	Max uint64 `json:"max"`
}

// Result of a run.
type Result struct {
	Rounds   int                   `json:"rounds"`
	Failover benchstat.Percentiles `json:"failover_ms"`
	// Messages is nil when the cluster does not count them.
	Messages *Messages `json:"messages_per_failover,omitempty"`
	Spurious uint64    `json:"spurious_elections"`
	// Unsettled counts the rounds that found no agreed leader after the
	// quiet window and waited for one first.
	Unsettled int `json:"unsettled_before_round"`
	// Times are the failover times of the rounds, in order; TimesMS the
	// same in milliseconds, rounded to the microsecond as Failover is.
	Times   []time.Duration `json:"-"`
	TimesMS []float64       `json:"times_ms"`
}

// Run measures o.Rounds failovers of c.
func Run(ctx context.Context, c Cluster, o Options) (Result, error) {
	if o.Rounds < 1 {
		return Result{}, errors.New("failover: want at least one round")
	}
	res := Result{Rounds: o.Rounds}
	var msgs []uint64
	for r := range o.Rounds {
		e0 := c.Elections()
		if err := Pause(ctx, o.Quiet+randN(o.Phase)); err != nil {
			return res, err
		}
		spurious := c.Elections() - e0
		res.Spurious += spurious
		d, m, counted, err := round(ctx, c, o, &res.Unsettled)
		if err != nil {
			return res, fmt.Errorf("round %d: %w", r+1, err)
		}
		res.Times = append(res.Times, d)
		if counted {
			msgs = append(msgs, m)
		}
		o.Log.Info("round", "round", r+1, "of", o.Rounds, "failover", d.Round(time.Microsecond),
			"messages", m, "spurious", spurious)
	}
	res.Failover = benchstat.Summarise(res.Times)
	res.TimesMS = benchstat.Milliseconds(res.Times)
	if len(msgs) == o.Rounds {
		slices.Sort(msgs)
		res.Messages = &Messages{P50: msgs[(len(msgs)-1)/2], Max: msgs[len(msgs)-1]}
	}
	return res, nil
}

// round takes the leader out, times the failover, counts its messages and
// brings the leader back.
func round(ctx context.Context, c Cluster, o Options, unsettled *int) (time.Duration, uint64, bool, error) {
	old, err := c.Leader()
	if err != nil {
		// A spurious election in the quiet window (counted already) left
		// the cluster without an agreed leader: wait until it has one.
		o.Log.Warn("cluster unsettled before the round; waiting for agreement", "why", err)
		*unsettled++
		if _, err := c.WaitAgreement(ctx, ""); err != nil {
			return 0, 0, false, err
		}
		if old, err = c.Leader(); err != nil {
			return 0, 0, false, fmt.Errorf("cluster unsettled before the round: %w", err)
		}
	}
	m0, counted := c.Messages()
	t0 := time.Now()
	if err := c.TakeOut(ctx, old); err != nil {
		return 0, 0, false, fmt.Errorf("taking out %s: %w", old, err)
	}
	at, err := c.WaitAgreement(ctx, old)
	if err != nil {
		return 0, 0, false, err
	}
	if d, ok := c.(Detailer); ok {
		o.Log.Debug("agreement", d.Detail(t0)...)
	}
	if err := Pause(ctx, o.Tail); err != nil {
		return 0, 0, false, err
	}
	m1, _ := c.Messages()
	if err := c.BringBack(ctx, old); err != nil {
		return 0, 0, false, fmt.Errorf("after %s came back: %w", old, err)
	}
	return at.Sub(t0), m1 - m0, counted, nil
}

func randN(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// Pause waits d, or until ctx is done (a SIGINT or SIGTERM): then it
// returns ctx's error.
func Pause(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Poller polls cond every Poll until it returns true (and when), or ctx
// ends or timeout passes (an error that names what was awaited, from
// explain).
func Poller(ctx context.Context, timeout time.Duration, cond func(now time.Time) bool, explain func() string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(Poll)
	defer t.Stop()
	for {
		if now := time.Now(); cond(now) {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s: %w", explain(), ctx.Err())
		case <-t.C:
		}
	}
}
