package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// A results file is one bench run as bench/results/ keeps it and
// 'coordbench report' reads it: the conditions of the run (machine, load,
// Go, commit, date, command line) around the result the subcommand's
// -json prints. A subcommand given -results DIR writes one, named after
// the bench and the parameters that set its figures
// (failover-bully-crash-n5.json); a later run of the same parameters
// replaces it.
type resultsFile struct {
	// Bench is the subcommand: failover, compare, idle, memory or soak.
	Bench string `json:"bench"`
	// Command is the command line, environment settings that change the
	// figures (GOGC, GOMEMLIMIT, GOMAXPROCS) first.
	Command string `json:"command"`
	Env     runEnv `json:"env"`
	// Note, when set, says where the figures come from if not from a run
	// of this command by this code (a result transcribed from a run's log).
	Note string `json:"note,omitempty"`
	// Error, when set, says why the run did not finish; Result then holds
	// what it measured before that (the rounds done).
	Error string `json:"error,omitempty"`
	// Result is what the subcommand's -json prints (compare: one object
	// per cluster, in a list).
	Result json.RawMessage `json:"result"`
}

// runEnv is the machine and the moment a run had.
type runEnv struct {
	// Date is the start of the run, UTC, to the second.
	Date    string  `json:"date"`
	Seconds float64 `json:"duration_s"`
	// CPU is the processor's model name, Cores the logical CPUs Go sees,
	// MemGiB the machine's memory.
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemGiB    int    `json:"mem_gib"`
	OS        string `json:"os"`
	GoVersion string `json:"go"`
	// Commit is the source's git commit, "-dirty" appended when the work
	// tree had changes; "" when it could not be read.
	Commit string `json:"commit"`
	// LoadStart and LoadEnd are the 1-, 5- and 15-minute load averages at
	// the start and at the end; nil when not known.
	LoadStart []float64 `json:"load_start"`
	LoadEnd   []float64 `json:"load_end"`
}

// resultsFlag adds -results to a subcommand's flags.
func resultsFlag(fs *flag.FlagSet, dir *string) {
	fs.StringVar(dir, "results", "", "also write the result with the run's conditions (machine, load, Go, commit, date, command) to a file in this directory, named after the bench and its parameters (bench/results is what 'coordbench report' reads)")
}

// recorder notes the conditions at the start of a run and writes its
// results file at the end; a nil recorder writes nothing.
type recorder struct {
	dir, bench string
	args       []string
	start      time.Time
	load       []float64
	commit     string
}

// startRecording starts a recorder for the run of args (the subcommand's
// flags) if dir is not "".
func startRecording(dir, bench string, args []string) *recorder {
	if dir == "" {
		return nil
	}
	return &recorder{dir: dir, bench: bench, args: args, start: time.Now(), load: loadAvg(), commit: gitCommit()}
}

// write writes result to DIR/NAME.json.
func (r *recorder) write(name string, result any) error { return r.writeFile(name, result, nil) }

// writeFailed writes what a run that failed with runErr measured, and
// why it stopped; nothing for a run interrupted by a signal.
func (r *recorder) writeFailed(name string, partial any, runErr error) error {
	if errors.Is(runErr, context.Canceled) {
		return nil
	}
	return r.writeFile(name, partial, runErr)
}

func (r *recorder) writeFile(name string, result any, runErr error) error {
	if r == nil {
		return nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return err
	}
	f := resultsFile{Bench: r.bench, Command: commandLine(r.bench, r.args), Result: raw, Env: runEnv{
		Date: r.start.UTC().Format(time.RFC3339), Seconds: roundTo(time.Since(r.start).Seconds(), 1),
		CPU: cpuModel(), Cores: runtime.NumCPU(), MemGiB: memGiB(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion: runtime.Version(), Commit: r.commit, LoadStart: r.load, LoadEnd: loadAvg(),
	}}
	if runErr != nil {
		f.Error = runErr.Error()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.dir, name+".json"), buf.Bytes(), 0o644)
}

// commandLine is the run's command line as a shell would take it, with
// the environment settings that change the figures first.
func commandLine(bench string, args []string) string {
	var parts []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			parts = append(parts, k+"="+shellQuote(v))
		}
	}
	parts = append(parts, "coordbench", bench)
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// loadAvg reads the load averages from /proc/loadavg; nil elsewhere.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		if out[i], err = strconv.ParseFloat(fields[i], 64); err != nil {
			return nil
		}
	}
	return out
}

// cpuModel is the first "model name" of /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return runtime.GOARCH
}

// memGiB is MemTotal of /proc/meminfo in GiB, rounded; 0 if unknown.
func memGiB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return int(math.Round(kb / (1 << 20)))
			}
		}
	}
	return 0
}

// buildCommit is the commit the binary was built from, when the build
// says so (run-all.sh: -ldflags "-X main.buildCommit=...").
var buildCommit string

// gitCommit is the commit of the source this binary was built from:
// buildCommit, else the build's VCS stamp, else 'git' in the working
// directory (go run and -buildvcs=false do not stamp); "-dirty" when the
// tree had changes to tracked files other than bench/results.
func gitCommit() string {
	if buildCommit != "" {
		return buildCommit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) >= 12 {
			if modified == "true" {
				return rev[:12] + "-dirty"
			}
			return rev[:12]
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	// The results a run of the benches writes are not the code measured.
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude,top)bench/results").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}

// roundTo rounds x to d decimals.
func roundTo(x float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(x*p) / p
}

// resultsName names the results file of a run of bench with o: the bench,
// then the parameters that set its figures, those left at their defaults
// left out.
func resultsName(bench string, o benchOptions, parts ...string) string {
	name := []string{bench}
	name = append(name, parts...)
	name = append(name, "n"+strconv.Itoa(o.n))
	add := func(cond bool, s string) {
		if cond {
			name = append(name, s)
		}
	}
	add(o.profile != "" && o.profile != "lan", o.profile)
	add(o.quorum > 0, "q"+strconv.Itoa(o.quorum))
	add(o.voters > 0, "v"+strconv.Itoa(o.voters))
	add(o.busy > 0, "busy"+strconv.Itoa(o.busy))
	add(o.bare, "bare")
	add(o.procs > 1, "procs"+strconv.Itoa(o.procs))
	add(o.netns, "netns")
	add(!o.compress, "nocompress")
	return strings.Join(name, "-")
}

// readResults reads every *.json results file in dir, by file name.
func readResults(dir string) ([]namedResults, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no results files (*.json) in %s", dir)
	}
	var out []namedResults
	var errs []error
	for _, p := range paths { // Glob sorts
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var f resultsFile
		if err := json.Unmarshal(b, &f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		out = append(out, namedResults{name: strings.TrimSuffix(filepath.Base(p), ".json"), resultsFile: f})
	}
	return out, errors.Join(errs...)
}

// namedResults is a results file and its name without ".json".
type namedResults struct {
	name string
	resultsFile
}
