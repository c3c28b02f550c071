package main

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/sim"
)

// simFlags is the command line of demo sim.
type simFlags struct {
	algorithm, ids, ratings, crash, detect, delay, script string
	exploreOut, faults, cpuprofile                        string
	n, explore, names                                     int
	view, shuffle, json, shrink                           bool
	seed                                                  uint64
	loss, dup                                             float64
	maxMs                                                 int64
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
		s.initiate = make([]string, 0, len(ids))
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
		ids = make([]string, 0, n)
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
