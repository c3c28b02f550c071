// Command exclusivity measures whether the leadership of a coordelect
// service is exclusive and whether its fence holds, against real processes:
// it starts N replicas of examples/fencedledger sharing one
// SQLite ledger, each logging leadership start, lease end, step-down and
// every guarded write with CLOCK_MONOTONIC stamps, injects faults round
// after round, and prints as JSON the overlap between any two replicas'
// valid leaderships, the stale writes the store accepted, spurious
// elections and failover times.
//
// Faults, each also under CPU starvation (busy shell loops outside the
// bench, -busy of them):
//
//	stop     SIGSTOP the leader for -pause-min..-pause-max, then SIGCONT
//	kill     SIGKILL the leader, restart it once a successor writes
//	restart  SIGTERM the leader (hand-off), restart it: the higher-rated
//	         member returns and takes the lead back
//	raise    SIGUSR1 a follower: it raises its rating above all
//
// Run from bench/ (it builds ../examples/fencedledger):
//
//	go run ./cmd/exclusivity -quorum 5 -rounds 200
//	go run ./cmd/exclusivity -quorum 0 -rounds 200   # Claim only
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	n, quorum, rounds, busy int
	kinds                   []string
	starve                  string
	pauseMin, pauseMax      time.Duration
	quiet, timeout, budget  time.Duration
	bin, src, dir           string
	seed                    uint64
}

func parseFlags() (*options, error) {
	o := &options{}
	var kinds string
	flag.IntVar(&o.n, "n", 5, "replicas")
	flag.IntVar(&o.quorum, "quorum", 5, "the replicas' -quorum: the cluster size for the quorum guard, 0 for none (Claim only)")
	flag.IntVar(&o.rounds, "rounds", 200, "faults of each kind (and of each kind under starvation, see -starve)")
	flag.StringVar(&kinds, "kinds", "stop,kill,restart,raise", "fault kinds, comma-separated")
	flag.StringVar(&o.starve, "starve", "both", "CPU starvation: off, only, or both (each fault with and without)")
	flag.IntVar(&o.busy, "busy", 4, "busy processes that starve the CPU")
	flag.DurationVar(&o.pauseMin, "pause-min", 200*time.Millisecond, "shortest SIGSTOP")
	flag.DurationVar(&o.pauseMax, "pause-max", 10*time.Second, "longest SIGSTOP")
	flag.DurationVar(&o.quiet, "quiet", time.Second, "how long the expected leader must lead undisturbed before the next fault")
	flag.DurationVar(&o.timeout, "timeout", time.Minute, "longest wait for a failover or for the cluster to settle")
	flag.DurationVar(&o.budget, "budget", 0, "stop injecting faults after this long (0: none) and report what was done")
	flag.StringVar(&o.bin, "bin", "", "fencedledger binary; empty: build it from -src")
	flag.StringVar(&o.src, "src", "../examples/fencedledger", "the example service's module, to build")
	flag.StringVar(&o.dir, "dir", "", "directory for the event logs and the ledger; empty: a new temporary one (kept)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the fault schedule")
	flag.Parse()
	o.kinds = strings.Split(kinds, ",")
	for _, k := range o.kinds {
		switch k {
		case "stop", "kill", "restart", "raise":
		default:
			return nil, fmt.Errorf("-kinds: unknown fault %q", k)
		}
	}
	switch o.starve {
	case "off", "only", "both":
	default:
		return nil, fmt.Errorf("-starve %q: want off, only or both", o.starve)
	}
	if o.n < 2 || o.pauseMin <= 0 || o.pauseMax < o.pauseMin {
		return nil, errors.New("want -n >= 2 and 0 < -pause-min <= -pause-max")
	}
	return o, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "exclusivity:", err)
		os.Exit(1)
	}
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "exclusivity-"); err != nil {
			return err
		}
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.dir, "fencedledger")
		build := exec.Command("go", "build", "-o", o.bin, ".")
		build.Dir, build.Stdout, build.Stderr = o.src, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building %s: %w", o.src, err)
		}
	}
	c, err := newCluster(o.bin, o.dir, o.n, o.quorum)
	if err != nil {
		return err
	}
	b := &bench{o: o, c: c, rng: rand.New(rand.NewPCG(o.seed, 1)), times: map[string][]float64{},
		spurious: map[string]int{}, current: "start"}
	defer c.stopAll()
	defer b.unstarve()
	fmt.Fprintf(os.Stderr, "exclusivity: %d replicas, quorum %d, logs in %s\n", o.n, o.quorum, o.dir)
	if err := b.settle(); err != nil {
		return fmt.Errorf("the cluster did not settle at start: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b.runRounds(ctx)
	b.unstarve()
	c.stopAll()
	c.poll()
	rep, err := b.report()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// fault is one injected fault, for the report and for replays.
type fault struct {
	Kind    string  `json:"kind"`
	Starved bool    `json:"starved"`
	Member  string  `json:"member"`
	T       int64   `json:"t"`
	PauseMS float64 `json:"pause_ms,omitempty"`
}

// bench is one run: the cluster, the schedule and what was measured live.
type bench struct {
	o        *options
	c        *cluster
	rng      *rand.Rand
	busy     []*exec.Cmd
	faults   []fault
	times    map[string][]float64 // "failover/stop", "handoff/raise", ... in ms
	spurious map[string]int       // by the fault of the round it followed
	current  string               // the fault kind of the round running ("start" before)
	newest   uint64               // the highest term a member started leading in
	stuck    []string
	quieting bool // lead events now are spurious
}

// runRounds injects the faults, each kind in turn, until -rounds of each,
// the budget is spent or ctx ends (SIGINT: the report follows).
func (b *bench) runRounds(ctx context.Context) {
	start := time.Now()
	variants := map[string][]bool{"off": {false}, "only": {true}, "both": {false, true}}[b.o.starve]
	for r := 0; r < b.o.rounds; r++ {
		for _, kind := range b.o.kinds {
			for _, starved := range variants {
				if ctx.Err() != nil || b.o.budget > 0 && time.Since(start) > b.o.budget {
					return
				}
				if err := b.round(kind, starved); err != nil {
					b.stuck = append(b.stuck, fmt.Sprintf("%s starved=%v at t=%d: %v", kind, starved, mono(), err))
					fmt.Fprintln(os.Stderr, "exclusivity:", b.stuck[len(b.stuck)-1])
				}
			}
		}
		fmt.Fprintf(os.Stderr, "exclusivity: round %d done, %d faults, spurious elections %v, %v\n",
			r+1, len(b.faults), b.spurious, time.Since(start).Round(time.Second))
	}
}

// round injects one fault and waits for the cluster to settle again.
func (b *bench) round(kind string, starved bool) error {
	if starved {
		b.starve()
		defer b.unstarve()
	}
	leader := b.c.top()
	f := fault{Kind: kind, Starved: starved, Member: b.c.members[leader].name}
	if b.current = kind; starved {
		b.current += "/starved"
	}
	var err error
	switch kind {
	case "stop":
		err = b.stop(leader, &f)
	case "kill", "restart":
		err = b.killRestart(leader, kind, &f)
	case "raise":
		err = b.raise(&f)
	}
	b.faults = append(b.faults, f)
	if err != nil {
		return err
	}
	return b.settle()
}

// stop pauses the leader, then resumes it; the failover is the first write
// a successor commits while it is paused.
func (b *bench) stop(leader int, f *fault) error {
	pause := b.o.pauseMin + time.Duration(b.rng.Int64N(int64(b.o.pauseMax-b.o.pauseMin)+1))
	f.PauseMS = ms(int64(pause))
	f.T = mono()
	if err := b.c.signal(leader, syscall.SIGSTOP); err != nil {
		return err
	}
	b.c.members[leader].paused = true
	if t, ok := b.waitWrite(pause, func(ev event) bool { return b.c.incs[ev.who].member != leader }); ok {
		b.record("failover/stop", t-f.T)
	} else {
		b.record("no-takeover/stop", 0)
	}
	if rest := time.Duration(f.T + int64(pause) - mono()); rest > 0 {
		time.Sleep(rest)
	}
	b.c.members[leader].paused = false
	return b.c.signal(leader, syscall.SIGCONT)
}

// killRestart kills the leader (SIGKILL) or stops it gracefully (SIGTERM:
// a hand-off), waits for a successor's write, then restarts it; being the
// highest-rated, it takes the lead back.
func (b *bench) killRestart(leader int, kind string, f *fault) error {
	sig, name := syscall.SIGKILL, "failover/kill"
	if kind == "restart" {
		sig, name = syscall.SIGTERM, "handoff/stop"
	}
	f.T = mono()
	if err := b.c.kill(leader, sig, 10*time.Second); err != nil {
		return err
	}
	t, ok := b.waitWrite(b.o.timeout, func(ev event) bool { return b.c.incs[ev.who].member != leader })
	if !ok {
		return errors.New("no successor wrote")
	}
	b.record(name, t-f.T)
	t0 := mono()
	if err := b.c.start(leader); err != nil {
		return err
	}
	inc := b.c.members[leader].inc
	if t, ok = b.waitWrite(b.o.timeout, func(ev event) bool { return ev.who == inc }); !ok {
		return errors.New("the restarted member did not take the lead back")
	}
	b.record("return/"+kind, t-t0)
	return nil
}

// raise makes a random follower the highest-rated; it takes the lead by a
// hand-off.
func (b *bench) raise(f *fault) error {
	leader := b.c.top()
	var followers []int
	for i, m := range b.c.members {
		if i != leader && m.alive {
			followers = append(followers, i)
		}
	}
	who := followers[b.rng.IntN(len(followers))]
	f.Member, f.T = b.c.members[who].name, mono()
	inc := b.c.members[who].inc
	// The replica raises its rating above every rating it knows of; if
	// gossip has not yet brought it another's raise, it may only tie:
	// raise it again until it is strictly the highest.
	for range 5 {
		if err := b.c.signal(who, syscall.SIGUSR1); err != nil {
			return err
		}
		if _, ok := b.waitEvent(b.o.timeout, func(ev event) bool { return ev.who == inc && ev.Ev == "rating" }); !ok {
			return errors.New("the raised member did not log its rating")
		}
		if b.c.top() == who {
			break
		}
	}
	t, ok := b.waitWrite(b.o.timeout, func(ev event) bool { return ev.who == inc })
	if !ok {
		return errors.New("the raised member did not take the lead")
	}
	b.record("handoff/raise", t-f.T)
	return nil
}

// waitWrite reads the event logs until a committed write matching pred
// shows up, and returns its commit time.
func (b *bench) waitWrite(timeout time.Duration, pred func(event) bool) (int64, bool) {
	return b.waitEvent(timeout, func(ev event) bool { return ev.Ev == "write" && ev.OK && pred(ev) })
}

// waitEvent reads the event logs until an event matching pred shows up,
// and returns its time.
func (b *bench) waitEvent(timeout time.Duration, pred func(event) bool) (int64, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, ev := range b.c.poll() {
			b.see(ev)
			if pred(ev) {
				return ev.T, true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, false
}

// see follows the newest term and counts a leadership that starts while
// the cluster should be quiet.
func (b *bench) see(ev event) {
	if ev.Ev == "lead" {
		b.newest = max(b.newest, ev.Term)
	}
	if ev.Ev == "lead" && b.quieting {
		b.spurious[b.current]++
		fmt.Fprintf(os.Stderr, "exclusivity: spurious election after %s: %s term %d at t=%d\n",
			b.current, b.c.members[b.c.incs[ev.who].member].name, ev.Term, ev.T)
	}
}

// settle waits until the expected leader (the highest-rated live member)
// commits a write that it began after the fault, in the newest term any
// member has started leading in, then for -quiet without a new leadership.
// (A leader paused inside a transaction commits it when resumed, in its old
// term: that is not yet the settled cluster.)
func (b *bench) settle() error {
	top := b.c.top()
	inc, since := b.c.members[top].inc, mono()
	settled := func(ev event) bool { return ev.who == inc && ev.T0 >= since && ev.Term >= b.newest }
	if _, ok := b.waitWrite(b.o.timeout, settled); !ok {
		return fmt.Errorf("%s did not lead", b.c.members[top].name)
	}
	b.quieting = true
	b.waitWrite(b.o.quiet, func(event) bool { return false })
	b.quieting = false
	return nil
}

// record adds a measured time (nanoseconds) under name.
func (b *bench) record(name string, d int64) { b.times[name] = append(b.times[name], ms(d)) }

// starve starts the busy processes.
func (b *bench) starve() {
	for range b.o.busy {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if cmd.Start() == nil {
			b.busy = append(b.busy, cmd)
		}
	}
}

// unstarve ends the busy processes.
func (b *bench) unstarve() {
	for _, cmd := range b.busy {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	b.busy = nil
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// ledgerReport runs `fencedledger -check` on the shared database.
func (b *bench) ledgerReport() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.o.bin, "-check", "-db", b.c.db).Output()
	if err != nil {
		return nil, fmt.Errorf("checking the ledger: %w", err)
	}
	var rep map[string]any
	return rep, json.Unmarshal(out, &rep)
}
