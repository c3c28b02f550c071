package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/sim"
)

// runExplore runs -explore K schedules; every violation prints its seed and
// writes a scenario file that replays it.
func runExplore(ctx context.Context, f *simFlags, stdout io.Writer) error {
	alg, err := core.ParseAlgorithm(f.algorithm)
	if err != nil {
		return usagef("-algorithm: %v", err)
	}
	n := f.n
	if n == 0 {
		n = 5
	}
	if f.explore < 0 || n < 1 || n > 1000 || f.ids != "" {
		return usagef("-explore %d -n %d: want K >= 1 and -n from 1 to 1000 (no -ids)", f.explore, f.n)
	}
	if f.names < 0 || f.names > 1000 {
		return usagef("-names %d: want 0 (one unnamed election) to 1000", f.names)
	}
	if st, err := os.Stat(f.exploreOut); err != nil || !st.IsDir() {
		return usagef("-explore-out %q: want an existing directory for the replay files", f.exploreOut)
	}
	if _, ferr := sim.ParseFaults(f.faults); ferr != nil {
		return usagef("-faults: %v", ferr)
	}
	res, err := sim.Explore(sim.ExploreConfig{Algorithm: alg, N: n, Runs: f.explore, Seed: f.seed, Faults: f.faults, ViewOnly: f.view, Names: f.names, Context: ctx})
	if err != nil && ctx.Err() == nil {
		return err
	}
	for _, fail := range res.Failures {
		path := filepath.Join(f.exploreOut, fmt.Sprintf("explore-%s-n%d%s-seed%d.txt", alg, n, namesPart(f.names), fail.Seed))
		if err := os.WriteFile(path, []byte(fail.Script), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "violation at seed %d: %v\n  replay: go run ./cmd/demo sim -script %s\n", fail.Seed, fail.Violations, path)
		if f.shrink {
			if err := writeShrunk(f.exploreOut, alg, n, f.names, fail); err != nil {
				return err
			}
		}
	}
	if f.json {
		if jerr := json.NewEncoder(stdout).Encode(res); jerr != nil {
			return jerr
		}
	} else {
		names := ""
		if res.Names > 0 {
			names = fmt.Sprintf(", %d names", res.Names)
		}
		fmt.Fprintf(stdout, "%s, n = %d%s: %d schedules from seed %d, %d with violations, slowest convergence after faults stopped %d virtual ms\n",
			res.Algorithm, res.N, names, res.Runs, res.Seed, res.Violations, res.MaxConvergenceMs)
	}
	return err // the interruption, after what was done is printed
}

// writeShrunk writes one shrunk replay per property a failure broke.
func writeShrunk(dir string, alg core.Algorithm, n, names int, fail sim.Failure) error {
	done := map[string]bool{}
	for _, kind := range fail.Kinds {
		if done[kind] {
			continue
		}
		done[kind] = true
		script, v, err := sim.Shrink(fail.Script, kind)
		if err != nil {
			return err
		}
		head := fmt.Sprintf("# explore: algorithm %s, n %d, seed %d, shrunk to what breaks %s:\n", alg, n, fail.Seed, kind)
		for _, line := range v {
			head += "#   " + line + "\n"
		}
		path := filepath.Join(dir, fmt.Sprintf("explore-%s-n%d%s-seed%d-%s-min.txt", alg, n, namesPart(names), fail.Seed, kind))
		if err := os.WriteFile(path, []byte(head+"\n"+script), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  shrunk (%s): %s\n", kind, path)
	}
	return nil
}

// namesPart is the replay files' mark of -names E: "-namesE", or "".
func namesPart(names int) string {
	if names == 0 {
		return ""
	}
	return fmt.Sprintf("-names%d", names)
}
