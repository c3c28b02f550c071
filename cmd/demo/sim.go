package main

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/sim"
)

type simFlags struct {
	algorithm, ids, ratings, crash, detect, delay, script string
	exploreOut, faults                                    string
	n, explore                                            int
	view, shuffle, json, shrink                           bool
	seed                                                  uint64
	loss, dup                                             float64
	maxMs                                                 int64
}

func parseSimFlags(args []string, stdout io.Writer) (*simFlags, error) {
	f := &simFlags{}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.StringVar(&f.algorithm, "algorithm", "bully", "bully, ring or peterson")
	fs.IntVar(&f.n, "n", 0, "members 1..N, rating = id (default 5 unless -ids)")
	fs.StringVar(&f.ids, "ids", "", "explicit integer ids, comma-separated (rings: clockwise order)")
	fs.StringVar(&f.ratings, "ratings", "", "ratings for the ids, comma-separated (default: rating = id)")
	fs.StringVar(&f.crash, "crash", "", "ids down before the run (the previous coordinator is the highest-rated)")
	fs.StringVar(&f.detect, "detect", "all", "ids that notice at time 0 and start an election, or all")
	fs.BoolVar(&f.view, "view", false, "view mode: a membership view says who is alive (default textbook)")
	fs.BoolVar(&f.shuffle, "shuffle", false, "random clockwise order from -seed")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the simulated network")
	fs.Float64Var(&f.loss, "loss", 0, "probability that a message is lost")
	fs.Float64Var(&f.dup, "dup", 0, "probability that a message is duplicated")
	fs.StringVar(&f.delay, "delay", "1-5", "one-way delay range MIN-MAX in virtual ms")
	fs.StringVar(&f.script, "script", "", "run a scenario file (docs/scenarios.md) instead")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of the trace")
	fs.Int64Var(&f.maxMs, "max-ms", 3_600_000, "give up after this much virtual time")
	fs.IntVar(&f.explore, "explore", 0, "run K seeded random fault schedules (seeds -seed .. -seed+K-1) and check every property")
	fs.StringVar(&f.exploreOut, "explore-out", ".", "directory for the scenario files that replay violations")
	fs.StringVar(&f.faults, "faults", "classic", "explorer fault kinds: classic, harsh, or a list such as crash=3,forge-max,nonvoters (docs/reliability.md)")
	fs.BoolVar(&f.shrink, "shrink", false, "with -explore: also write a shrunk replay per violated property (…-KIND-min.txt)")
	if err := parseFlags(fs, args, stdout, simSynopsis); err != nil {
		return nil, err
	}
	if f.maxMs <= 0 {
		return nil, usagef("-max-ms %d: want a positive number of virtual ms", f.maxMs)
	}
	return f, nil
}

// simResult is the -json output.
type simResult struct {
	Algorithm  string      `json:"algorithm"`
	IDs        []int64     `json:"ids"`
	Crashed    []int64     `json:"crashed"`
	Initiators []int64     `json:"initiators"`
	Coord      *int64      `json:"coordinator"`
	Term       uint64      `json:"term"`
	TermStr    string      `json:"term_epoch_tag"`
	Agreed     bool        `json:"agreed"`
	Messages   msgCounts   `json:"messages"`
	Heartbeats uint64      `json:"heartbeats"`
	Lost       uint64      `json:"lost"`
	Phases     int         `json:"phases"`
	VirtualMs  int64       `json:"virtual_ms"`
	Violations []string    `json:"violations,omitempty"`
	Mode       string      `json:"mode"`
	Network    networkInfo `json:"network"`
}

type msgCounts struct {
	Election    uint64 `json:"election"`
	Answer      uint64 `json:"answer"`
	Coordinator uint64 `json:"coordinator"`
	Ack         uint64 `json:"ack"`
	Total       uint64 `json:"total"`
}

type networkInfo struct {
	Seed  uint64  `json:"seed"`
	Delay string  `json:"delay_ms"`
	Loss  float64 `json:"loss"`
	Dup   float64 `json:"dup"`
}

func runSim(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseSimFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.script != "" {
		data, err := os.ReadFile(f.script)
		if err != nil {
			return usagef("-script: %v", err)
		}
		return runScript(string(data), stdout)
	}
	if f.explore != 0 {
		return runExplore(ctx, f, stdout)
	}
	setup, err := f.setup()
	if err != nil {
		return err
	}
	return setup.run(f, stdout)
}

// simSetup is the validated experiment.
type simSetup struct {
	cfg               sim.Config
	ids               []string
	crashed, initiate []string
}

func (f *simFlags) setup() (*simSetup, error) {
	alg, err := core.ParseAlgorithm(f.algorithm)
	if err != nil {
		return nil, usagef("-algorithm: %v", err)
	}
	ids, err := f.memberIDs()
	if err != nil {
		return nil, err
	}
	var ratings []string
	if f.ratings != "" {
		ratings = strings.Split(f.ratings, ",")
		if len(ratings) != len(ids) {
			return nil, usagef("-ratings: %d values for %d ids", len(ratings), len(ids))
		}
	}
	members, err := sim.BuildMembers(ids, ratings, nil)
	if err != nil {
		return nil, usagef("-ratings: %v", err)
	}
	dmin, dmax, err := sim.ParseSpan(f.delay)
	if err != nil {
		return nil, usagef("-delay: %v", err)
	}
	for name, p := range map[string]float64{"-loss": f.loss, "-dup": f.dup} {
		if !(p >= 0 && p <= 1) { // NaN too
			return nil, usagef("%s %v: want a probability in [0, 1]", name, p)
		}
	}
	s := &simSetup{ids: ids, cfg: sim.Config{Members: members, Algorithm: alg, Seed: f.seed,
		DelayMin: dmin, DelayMax: dmax, Loss: f.loss, Dup: f.dup}}
	if f.view {
		s.cfg.Mode = core.View
	}
	if s.crashed, err = subset("-crash", f.crash, ids); err != nil {
		return nil, err
	}
	if f.detect == "all" {
		for _, id := range ids {
			if !slices.Contains(s.crashed, id) {
				s.initiate = append(s.initiate, id)
			}
		}
	} else if s.initiate, err = subset("-detect", f.detect, ids); err != nil {
		return nil, err
	}
	for _, id := range s.initiate {
		if slices.Contains(s.crashed, id) {
			return nil, usagef("-detect %s: node %s is in -crash", f.detect, id)
		}
	}
	return s, nil
}

func (f *simFlags) memberIDs() ([]string, error) {
	var ids []string
	switch {
	case f.ids != "" && f.n != 0:
		return nil, usagef("-n and -ids: give one of them")
	case f.ids != "":
		ids = strings.Split(f.ids, ",")
		seen := map[string]bool{}
		for _, id := range ids {
			if _, err := strconv.ParseUint(id, 10, 32); err != nil {
				return nil, usagef("-ids: %q is not a non-negative integer below 2^32", id)
			}
			if seen[id] {
				return nil, usagef("-ids: %s appears twice", id)
			}
			seen[id] = true
		}
	default:
		n := f.n
		if n == 0 {
			n = 5
		}
		if n < 1 || n > 1_000_000 {
			return nil, usagef("-n %d: want 1 to 1000000", f.n)
		}
		for i := 1; i <= n; i++ {
			ids = append(ids, strconv.Itoa(i))
		}
	}
	if f.shuffle {
		r := rand.New(rand.NewPCG(f.seed, 0x5eed))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
	return ids, nil
}

func subset(flagName, list string, ids []string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var out []string
	for _, id := range strings.Split(list, ",") {
		if !slices.Contains(ids, id) {
			return nil, usagef("%s: %q is not one of the ids", flagName, id)
		}
		out = append(out, id)
	}
	return out, nil
}
