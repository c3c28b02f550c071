package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/internal/benchstat"
)

const benchFailoverSynopsis = `usage: demo bench failover [flags]

Each round crashes the coordinator (its elector stops without handing off,
memberlist shuts down without leaving) or, with -mode resign, has it resign,
and times it until every survivor reports the same new coordinator (polled
every millisecond). It also counts the election messages the members sent
for it (heartbeats excluded). The node then comes back on the same name and
port (a resigned one leaves first) and the round ends when every member
reports it as coordinator again. Elections started in the -quiet window
before each round, with the coordinator alive, count as spurious. After
that window the bench waits a further random part of a heartbeat interval,
so that the crashes fall at every phase of the heartbeat cycle (a fixed
wait after the previous round would always crash the coordinator just
after the same heartbeat).`

// failoverResult is what -json prints.
type failoverResult struct {
	N         int                   `json:"n"`
	Rounds    int                   `json:"rounds"`
	Algorithm string                `json:"algorithm"`
	Mode      string                `json:"mode"`
	Failover  benchstat.Percentiles `json:"failover_ms"`
	Messages  struct {
		P50 uint64 `json:"p50"`
		Max uint64 `json:"max"`
	} `json:"messages_per_failover"`
	Spurious uint64 `json:"spurious_elections"`
}

func parseBenchFailover(args []string, stdout io.Writer) (benchOptions, error) {
	o := benchOptions{}
	fs, profile := benchFlags("failover", &o, 5)
	var alg algorithmFlag
	fs.IntVar(&o.rounds, "rounds", 20, "number of failovers to measure")
	fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
	fs.StringVar(&o.mode, "mode", "crash", "crash: crash the coordinator; resign: it hands off")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
	fs.StringVar(&o.samples, "samples", "", "file to write every failover time to, in ms, one per line")
	fs.DurationVar(&o.quiet, "quiet", time.Second, "settled window before each round in which elections are spurious")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound of each wait for agreement")
	fs.BoolVar(&o.verbose, "v", false, "log, per round, the node the agreement waited for and the survivors' membership counters")
	if err := parseFlags(fs, args, stdout, benchFailoverSynopsis); err != nil {
		return o, err
	}
	o.alg = alg.a
	if err := checkBenchCommon(&o, *profile); err != nil {
		return o, err
	}
	switch {
	case o.rounds < 1:
		return o, usagef("-rounds %d: want at least 1", o.rounds)
	case o.mode != "crash" && o.mode != "resign":
		return o, usagef("-mode %q: want crash or resign", o.mode)
	case o.quiet < 0:
		return o, usagef("-quiet %v: want 0 or more", o.quiet)
	case o.timeout <= 0:
		return o, usagef("-timeout %v: want more than 0", o.timeout)
	}
	return o, nil
}

func runBenchFailover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBenchFailover(args, stdout)
	if err != nil {
		if err == errHelp {
			return nil
		}
		return err
	}
	log := newBenchLogger(stderr, o.verbose)
	c := newBenchCluster(o, log)
	log.Info("starting cluster", "n", o.n, "algorithm", o.alg, "profile", o.profile)
	if err := c.start(ctx); err != nil {
		return err
	}
	defer c.stop()
	res, times, err := c.failoverRounds(ctx)
	if err != nil {
		return err
	}
	if o.samples != "" {
		if err := benchstat.WriteSamples(o.samples, times); err != nil {
			return err
		}
	}
	if o.asJSON {
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "%d %s failovers of %s, n = %d: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; "+
		"messages p50 %d, max %d; spurious elections %d\n", res.Rounds, res.Mode, res.Algorithm, res.N,
		res.Failover.P50, res.Failover.P90, res.Failover.P99, res.Failover.Max,
		res.Messages.P50, res.Messages.Max, res.Spurious)
	return nil
}

// failoverRounds runs the rounds and summarises them.
func (c *benchCluster) failoverRounds(ctx context.Context) (failoverResult, []time.Duration, error) {
	o := c.opts
	res := failoverResult{N: o.n, Rounds: o.rounds, Algorithm: o.alg.String(), Mode: o.mode}
	var times []time.Duration
	var msgs []uint64
	for r := range o.rounds {
		spurious, err := c.quietWindow(ctx)
		if err != nil {
			return res, nil, err
		}
		res.Spurious += spurious
		d, m, err := c.failoverRound(ctx)
		if err != nil {
			return res, nil, fmt.Errorf("round %d: %w", r+1, err)
		}
		times, msgs = append(times, d), append(msgs, m.election())
		c.log.Info("round", "round", r+1, "of", o.rounds, "failover", d.Round(time.Microsecond),
			"messages", m.election(), "by_type", m.String(), "spurious", spurious)
	}
	res.Failover = benchstat.Summarise(times)
	slices.Sort(msgs)
	res.Messages.P50, res.Messages.Max = msgs[(len(msgs)-1)/2], msgs[len(msgs)-1]
	return res, times, nil
}

// quietWindow waits o.quiet and a random part of a heartbeat interval with
// the coordinator alive, and returns the elections started meanwhile.
func (c *benchCluster) quietWindow(ctx context.Context) (uint64, error) {
	before := c.electionsStarted()
	if err := pause(ctx, c.opts.quiet+rand.N(election.DefaultHeartbeatInterval)); err != nil {
		return 0, err
	}
	if coord, ok := c.agreed(); !ok || coord != c.top().name {
		return 0, fmt.Errorf("cluster unsettled before the round (coordinator %q)", coord)
	}
	return c.electionsStarted() - before, nil
}

// messageTail is how long the bench keeps counting election messages after
// agreement, for those still on their way (late ANSWERs, a duplicate
// announcement), before the node comes back.
const messageTail = 250 * time.Millisecond

// failoverRound takes the coordinator (the top-rated node) out, times the
// failover, brings it back and waits until it leads again.
func (c *benchCluster) failoverRound(ctx context.Context) (time.Duration, sentCounts, error) {
	old := c.top()
	msgs0 := c.sent()
	r0, g0, d0, f0 := c.memberStats(old)
	t0 := time.Now()
	if err := c.takeOut(ctx, old); err != nil {
		return 0, sentCounts{}, err
	}
	at, err := c.waitAgreement(ctx, "", old)
	if err != nil {
		return 0, sentCounts{}, err
	}
	last, lastAt := c.changes.last()
	r1, g1, d1, f1 := c.memberStats(old)
	c.log.Debug("agreement", "last_node", last, "last_change", lastAt.Sub(t0).Round(time.Millisecond),
		"reordered", r1-r0, "gaps_skipped", g1-g0, "dropped", d1-d0, "send_failed", f1-f0)
	time.Sleep(messageTail)
	msgs := c.sent().minus(msgs0)
	if err := c.bringBack(old); err != nil {
		return 0, sentCounts{}, err
	}
	if _, err := c.waitAgreement(ctx, old.name, nil); err != nil {
		return 0, sentCounts{}, fmt.Errorf("after node %s came back: %w", old.name, err)
	}
	return at.Sub(t0), msgs, nil
}

// takeOut crashes b or, with -mode resign, has it resign.
func (c *benchCluster) takeOut(ctx context.Context, b *benchNode) error {
	if c.opts.mode == "resign" {
		ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
		defer cancel()
		return b.el.Resign(ctx)
	}
	return b.crash()
}

// bringBack restarts b on its name and port; a resigned node, still
// running and yielding, leaves the cluster first.
func (c *benchCluster) bringBack(b *benchNode) error {
	if b.el != nil {
		if err := b.leave(); err != nil {
			c.log.Warn("leaving", "node", b.name, "error", err)
		}
	}
	return c.startNode(b, true)
}
