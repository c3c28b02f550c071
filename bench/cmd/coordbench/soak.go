package main

import (
	"context"
	"flag"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const benchSoakSynopsis = `usage: coordbench soak -d DURATION [flags]

Runs an idle cluster for DURATION while -burners goroutines spin (one per
usable core by default, so the members compete for every core), and counts
the elections started: with the coordinator alive throughout, every one is
spurious. Prints one JSON object.`

// soakResult is what soak prints.
type soakResult struct {
	N        int     `json:"n"`
	Seconds  float64 `json:"duration_s"`
	Burners  int     `json:"burners"`
	Profile  string  `json:"profile"`
	Spurious uint64  `json:"spurious_elections"`
	// LeaderChanges counts the times the agreed coordinator was seen to
	// change (polled every 10 ms).
	LeaderChanges int `json:"leader_changes"`
	// HeartbeatMisses sums the heartbeat intervals followers counted as
	// silent (election.Recorder.HeartbeatMisses). A heartbeat that lands
	// just after the follower's interval ends counts as one, so it grows
	// even on an idle machine; only HeartbeatMisses in a row elect.
	HeartbeatMisses uint64 `json:"heartbeat_misses"`
	// BurnerSpins is the burners' loop count, in millions: evidence that
	// they ran.
	BurnerSpins uint64 `json:"burner_spins_millions"`
}

func parseBenchSoak(args []string, stdout io.Writer) (benchOptions, error) {
	return parseBench("soak", 5, benchSoakSynopsis, args, stdout, func(fs *flag.FlagSet, o *benchOptions) {
		fs.DurationVar(&o.dur, "d", 0, "how long to run, e.g. 10m (required)")
		fs.IntVar(&o.burners, "burners", runtime.GOMAXPROCS(0), "CPU-burning goroutines (default one per usable core)")
		fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound of the wait for the cluster to agree at start")
		resultsFlag(fs, &o.results)
	}, func(o *benchOptions) error {
		switch {
		case o.dur <= 0:
			return usagef("-d %v: want a duration more than 0, e.g. -d 10m", o.dur)
		case o.burners < 0:
			return usagef("-burners %d: want 0 or more", o.burners)
		}
		return nil
	})
}

func runBenchSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBenchSoak(args, stdout)
	if err != nil {
		return err
	}
	log := newBenchLogger(stderr, false)
	rec := startRecording(o.results, "soak", args)
	c := newBenchCluster(o, log)
	if err := c.start(ctx); err != nil {
		return err
	}
	defer c.stop()
	res := soakResult{N: o.n, Burners: o.burners, Profile: o.profile}
	started0, misses0 := c.electionsStarted(), c.heartbeatMisses()
	stopBurn, spins := burnCPU(o.burners)
	log.Info("soaking", "duration", o.dur, "burners", o.burners)
	t0 := time.Now()
	res.LeaderChanges, err = c.watchLeader(ctx, o.dur)
	stopBurn()
	res.Seconds = time.Since(t0).Seconds()
	res.Spurious = c.electionsStarted() - started0
	res.HeartbeatMisses = c.heartbeatMisses() - misses0
	res.BurnerSpins = spins.Load() / 1e6
	if err != nil {
		return err
	}
	if err := rec.write(resultsName("soak", o, "burners"+strconv.Itoa(o.burners)), res); err != nil {
		return err
	}
	return printJSON(stdout, res)
}

// watchLeader polls the agreed coordinator every 10 ms for d and counts
// its changes; progress is logged every minute.
func (c *benchCluster) watchLeader(ctx context.Context, d time.Duration) (int, error) {
	tick, progress := time.NewTicker(10*time.Millisecond), time.NewTicker(time.Minute)
	defer tick.Stop()
	defer progress.Stop()
	end := time.After(d)
	last, changes := c.top().name, 0
	for {
		select {
		case <-end:
			return changes, nil
		case <-ctx.Done():
			return changes, ctx.Err()
		case <-progress.C:
			c.log.Info("soak", "elections_started", c.electionsStarted(), "heartbeat_misses", c.heartbeatMisses(),
				"leader_changes", changes)
		case <-tick.C:
			if coord, ok := c.agreed(); ok && coord != last {
				last, changes = coord, changes+1
			}
		}
	}
}

// burnCPU starts k goroutines that spin until stop is called; spins counts
// their iterations (in batches, so that counting costs little).
func burnCPU(k int) (stop func(), spins *atomic.Uint64) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var sink atomic.Uint64 // keeps the loops' results alive
	spins = new(atomic.Uint64)
	for range k {
		wg.Go(func() {
			x := uint64(1)
			for !done.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				spins.Add(1 << 16)
			}
			sink.Add(x)
		})
	}
	return func() { done.Store(true); wg.Wait() }, spins
}
