package main

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime/pprof"
)

// simSynopsis heads demo sim -h.
const simSynopsis = `usage: demo sim [flags]

Runs one election of the chosen algorithm on a simulated network, in
virtual time, and prints its trace (or, with -json, one JSON object):
members 1..N with rating = id unless -ids and -ratings say otherwise.
With -script it runs a scenario file instead (docs/scenarios.md), and with
-explore K it runs K seeded random fault schedules and checks every
property, writing a replayable scenario for each violation.

Flags:`

func parseSimFlags(args []string, stdout io.Writer) (*simFlags, error) {
	f := &simFlags{}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.StringVar(&f.algorithm, "algorithm", "bully", "bully, ring or peterson")
	fs.IntVar(&f.n, "n", 0, "members 1..N, rating = id (default 5 unless -ids)")
	fs.StringVar(&f.ids, "ids", "", "explicit integer ids, comma-separated (rings: clockwise order)")
	fs.StringVar(&f.ratings, "ratings", "", "ratings for the ids, comma-separated (default: rating = id)")
	fs.StringVar(&f.crash, "crash", "", "ids down before the run (the previous coordinator is the highest-rated)")
	fs.StringVar(&f.detect, "detect", "all", "ids that notice at time 0 and start an election, or all")
	fs.BoolVar(&f.view, "view", false, "view mode: a membership view says who is alive (default textbook; with -explore: every schedule in view mode, the runtime's, instead of one in four in textbook mode)")
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
	fs.IntVar(&f.names, "names", 0, "with -explore: every schedule runs this many named elections (spread placement, a quarter with members abstaining; docs/reliability.md); 0: one unnamed election")
	fs.BoolVar(&f.shrink, "shrink", false, "with -explore: also write a shrunk replay per violated property (…-KIND-min.txt)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	if err := parseFlags(fs, args, stdout, simSynopsis); err != nil {
		return nil, err
	}
	if f.maxMs <= 0 {
		return nil, usagef("-max-ms %d: want a positive number of virtual ms", f.maxMs)
	}
	return f, nil
}

func runSim(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseSimFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.cpuprofile != "" {
		out, err := os.Create(f.cpuprofile)
		if err != nil {
			return usagef("-cpuprofile: %v", err)
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return usagef("-cpuprofile %s: %v", f.cpuprofile, err)
		}
		defer pprof.StopCPUProfile()
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
