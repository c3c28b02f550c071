package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/bench/internal/failover"
)

const nodeSoakSynopsis = `usage: coordbench nodesoak -d DURATION [flags]

Starts -n 'demo node' processes (the binary -demo, built with
go build -o /tmp/demo ./cmd/demo) on 127.0.0.1, node i with rating i,
highest first so that each finds the coordinator in place, waits until all
report node n as coordinator, then loads the host from outside the nodes
for DURATION and watches them:

  -load busy     -busy-per-core busy processes per core (sh -c 'while :; do :; done')
                 beside the nodes
  -load cgroup   every node in its own cgroup v1 CPU group limited to
                 -quota of one core (cpu.cfs_quota_us over a 100 ms
                 cpu.cfs_period_us, under /sys/fs/cgroup/cpu; needs root)
  -load none     nothing

Nothing fails in the cluster meanwhile, so every election is spurious. It
reports the elections the nodes started (coordelect_elections_total
{result="started"}), the epochs the highest term advanced, coordinator
changes and polls with two coordinators (/status every 100 ms), heartbeat
misses (coordelect_heartbeat_misses_total), the longest silence a follower
saw between two heartbeats it received (from the nodes' debug log, which
-silence=false turns off), the nodes' CPU use (/proc/PID/stat), cgroup
throttling, and the host's load average (/proc/loadavg, every 10 s).
Prints one JSON object.`

// nodeSoakOptions is a validated nodesoak command line.
type nodeSoakOptions struct {
	demo        string
	n           int
	dur         time.Duration
	load        string
	busyPerCore int
	quota       float64 // of one core
	silence     bool
	timeout     time.Duration
}

func parseNodeSoak(args []string, stdout io.Writer) (nodeSoakOptions, error) {
	var o nodeSoakOptions
	fs := flag.NewFlagSet("coordbench nodesoak", flag.ContinueOnError)
	fs.StringVar(&o.demo, "demo", "/tmp/demo", "the demo binary (go build -o /tmp/demo ./cmd/demo)")
	fs.IntVar(&o.n, "n", 5, "number of node processes, 2 to 50")
	fs.DurationVar(&o.dur, "d", 0, "how long to run under load, e.g. 10m (required)")
	fs.StringVar(&o.load, "load", "busy", "busy, cgroup or none")
	fs.IntVar(&o.busyPerCore, "busy-per-core", 4, "with -load busy: busy processes per core")
	fs.Float64Var(&o.quota, "quota", 0.5, "with -load cgroup: each node's CPU quota, in cores")
	fs.BoolVar(&o.silence, "silence", true, "run the nodes at -log-level debug and measure the silences between heartbeats")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound of the wait for the cluster to agree at start")
	if err := parseFlags(fs, args, stdout, nodeSoakSynopsis); err != nil {
		return o, err
	}
	switch {
	case o.n < 2 || o.n > 50:
		return o, usagef("-n %d: want 2 to 50 nodes", o.n)
	case o.dur <= 0:
		return o, usagef("-d %v: want a duration more than 0, e.g. -d 10m", o.dur)
	case o.load != "busy" && o.load != "cgroup" && o.load != "none":
		return o, usagef("-load %q: want busy, cgroup or none", o.load)
	case o.busyPerCore < 1:
		return o, usagef("-busy-per-core %d: want at least 1", o.busyPerCore)
	case o.quota < 0.01 || o.quota > float64(runtime.NumCPU()):
		return o, usagef("-quota %v: want 0.01 to %d cores", o.quota, runtime.NumCPU())
	case o.timeout <= 0:
		return o, usagef("-timeout %v: want more than 0", o.timeout)
	}
	return o, nil
}

// nodeSoakResult is what nodesoak prints.
type nodeSoakResult struct {
	N       int     `json:"n"`
	Seconds float64 `json:"duration_s"`
	Load    string  `json:"load"`
	// BusyProcs is the number of busy processes beside the nodes.
	BusyProcs int `json:"busy_procs,omitempty"`
	// QuotaCores is each node's cgroup CPU quota, in cores.
	QuotaCores float64 `json:"quota_cores,omitempty"`
	// ElectionsStarted sums coordelect_elections_total{result="started"}
	// over the nodes, during the soak.
	ElectionsStarted uint64 `json:"elections_started"`
	// TermEpochs is how many epochs the highest term any node reported
	// advanced: each is an election that changed the term.
	TermEpochs uint64 `json:"term_epochs_advanced"`
	// CoordinatorChanges counts the polls in which the agreed coordinator
	// was another than the one before; TwoCoordinatorPolls those in which
	// more than one node said it was coordinator.
	CoordinatorChanges  int `json:"coordinator_changes"`
	TwoCoordinatorPolls int `json:"two_coordinator_polls"`
	Polls               int `json:"status_polls"`
	// HeartbeatMisses sums coordelect_heartbeat_misses_total over the
	// followers; MissesPerFollowerMinute divides it by followers and minutes.
	HeartbeatMisses         uint64  `json:"heartbeat_misses"`
	MissesPerFollowerMinute float64 `json:"heartbeat_misses_per_follower_minute"`
	// MaxSilenceMs is the longest time a follower's log shows between two
	// heartbeats it received; MaxSilenceNode names the follower.
	MaxSilenceMs   float64 `json:"max_silence_ms,omitempty"`
	MaxSilenceNode string  `json:"max_silence_node,omitempty"`
	// Silences counts the gaps between heartbeats a follower received
	// that were longer than 100 ms (two heartbeat intervals).
	SilencesOver100ms int `json:"silences_over_100ms"`
	// CPUPercent is each node's CPU use (user + system) over the soak, in
	// percent of one core, by node name.
	CPUPercent map[string]float64 `json:"cpu_percent_of_one_core"`
	// Throttled is, with -load cgroup, each node's share of CFS periods in
	// which it was throttled, in percent.
	Throttled map[string]float64 `json:"throttled_periods_percent,omitempty"`
	// LoadAvg is the host's 1-minute load average: min and max of the
	// samples taken every 10 s.
	LoadAvgMin float64 `json:"loadavg1_min"`
	LoadAvgMax float64 `json:"loadavg1_max"`
}

// soakNode is one demo node process.
type soakNode struct {
	name   string
	cmd    *exec.Cmd
	gossip string
	http   string
	cgroup string // the cgroup directory, "" without
	exited chan struct{}

	mu      sync.Mutex
	lastHB  time.Time // when the log last showed a heartbeat received
	maxGap  time.Duration
	long    int  // gaps over 100 ms
	measure bool // gaps count (the soak is on)
}

func runNodeSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseNodeSoak(args, stdout)
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.demo); err != nil {
		return usagef("-demo %s: %v (build it: go build -o /tmp/demo ./cmd/demo)", o.demo, err)
	}
	log := newBenchLogger(stderr, false)
	s := &nodeSoak{opts: o, log: log, client: &http.Client{Timeout: 2 * time.Second}}
	defer s.stop()
	if err := s.start(ctx); err != nil {
		return err
	}
	res, err := s.soak(ctx)
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}

// nodeSoak runs the processes of one soak.
type nodeSoak struct {
	opts   nodeSoakOptions
	log    hclog.Logger
	client *http.Client
	nodes  []*soakNode // nodes[i] is named i+1
	busy   busyProcs
}

// cgroupRoot is where cgroup v1's cpu controller is mounted.
const cgroupRoot = "/sys/fs/cgroup/cpu"

// start starts the nodes, highest rating first, and waits until they all
// report the top one as coordinator.
func (s *nodeSoak) start(ctx context.Context) error {
	o := s.opts
	s.nodes = make([]*soakNode, o.n)
	var seeds []string
	for i := o.n - 1; i >= 0; i-- {
		b := &soakNode{name: strconv.Itoa(i + 1), exited: make(chan struct{})}
		s.nodes[i] = b
		if o.load == "cgroup" {
			if err := b.makeCgroup(o.quota); err != nil {
				return err
			}
		}
		if err := s.startNode(b, i+1, seeds); err != nil {
			return err
		}
		seeds = append(seeds, b.gossip)
		if len(seeds) > 3 {
			seeds = seeds[len(seeds)-3:]
		}
	}
	top := s.nodes[o.n-1].name
	deadline := time.Now().Add(o.timeout)
	for {
		sts, err := s.statuses()
		if err == nil && agreedOn(sts) == top {
			s.log.Info("cluster settled", "nodes", o.n, "coordinator", top)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no agreement on %s within %v (last: %v)", top, o.timeout, err)
		}
		if err := failover.Pause(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// makeCgroup creates b's cgroup with a CPU quota of quota cores.
func (b *soakNode) makeCgroup(quota float64) error {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu.cfs_quota_us")); err != nil {
		return fmt.Errorf("-load cgroup needs cgroup v1's cpu controller at %s: %w", cgroupRoot, err)
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("coordbench-%d-%s", os.Getpid(), b.name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	b.cgroup = dir
	const period = 100000 // µs: the kernel's default, Kubernetes' CFS period
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	q := strconv.Itoa(int(quota * period))
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(q), 0o644); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

// startNode starts b's process (in its cgroup, if any, before the node
// runs: a shell joins the cgroup and execs the node) and reads its
// addresses from its first line of output.
func (s *nodeSoak) startNode(b *soakNode, rating int, seeds []string) error {
	args := []string{"node", "-name", b.name, "-rating", strconv.Itoa(rating),
		"-bind", "127.0.0.1:0", "-http", "127.0.0.1:0", "-join", strings.Join(seeds, ",")}
	if s.opts.silence {
		args = append(args, "-log-level", "debug")
	}
	name, argv := s.opts.demo, args
	if b.cgroup != "" {
		name, argv = "/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, b.cgroup, s.opts.demo}, args...)
	}
	b.cmd = exec.Command(name, argv...)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a ^C to the bench does not reach it
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errs, err := b.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := b.cmd.Start(); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	go b.readLog(errs)
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	select {
	case line := <-first:
		// node NAME: gossip ADDR, http://ADDR/status
		var name string
		if _, err := fmt.Sscanf(line, "node %s gossip %s http://%s", &name, &b.gossip, &b.http); err != nil {
			return fmt.Errorf("node %s: unexpected first line %q", b.name, line)
		}
		b.gossip = strings.TrimSuffix(b.gossip, ",")
		b.http = strings.TrimSuffix(b.http, "/status")
	case <-b.exited:
		return fmt.Errorf("node %s exited at start: %v", b.name, b.cmd.ProcessState)
	case <-time.After(s.opts.timeout):
		return fmt.Errorf("node %s printed no address within %v", b.name, s.opts.timeout)
	}
	return nil
}

// readLog reads b's log; with -silence it times the heartbeats b received
// (debug lines "receive: ... type=heartbeat"), by the log's own timestamps.
func (b *soakNode) readLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " receive: ") || !strings.Contains(line, " type=heartbeat ") {
			continue
		}
		ts, _, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts)
		if err != nil {
			continue
		}
		b.heartbeat(at)
	}
}

func (b *soakNode) heartbeat(at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.measure && !b.lastHB.IsZero() {
		gap := at.Sub(b.lastHB)
		b.maxGap = max(b.maxGap, gap)
		if gap > 100*time.Millisecond {
			b.long++
		}
	}
	b.lastHB = at
}

// soakStatus is the part of a node's /status the soak reads.
type soakStatus struct {
	State       string `json:"state"`
	Coordinator string `json:"coordinator"`
	Term        uint64 `json:"term"`
}

func (s *nodeSoak) statuses() ([]soakStatus, error) {
	out := make([]soakStatus, len(s.nodes))
	for i, b := range s.nodes {
		resp, err := s.client.Get("http://" + b.http + "/status")
		if err != nil {
			return nil, err
		}
		err = json.NewDecoder(resp.Body).Decode(&out[i])
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("node %s /status: %w", b.name, err)
		}
	}
	return out, nil
}

// agreedOn names the coordinator every node reports, or "".
func agreedOn(sts []soakStatus) string {
	for _, st := range sts {
		if st.Coordinator == "" || st.Coordinator != sts[0].Coordinator {
			return ""
		}
	}
	return sts[0].Coordinator
}

// counters scrapes the nodes' heartbeat misses and started elections.
func (s *nodeSoak) counters() (misses, started []uint64, err error) {
	for _, b := range s.nodes {
		resp, err := s.client.Get("http://" + b.http + "/metrics")
		if err != nil {
			return nil, nil, err
		}
		m, e := scrape(resp.Body)
		_ = resp.Body.Close()
		misses, started = append(misses, m), append(started, e)
	}
	return misses, started, nil
}

// scrape reads coordelect_heartbeat_misses_total and
// coordelect_elections_total{result="started"} from a Prometheus text page.
func scrape(r io.Reader) (misses, started uint64) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch name {
		case "coordelect_heartbeat_misses_total":
			misses = uint64(f)
		case `coordelect_elections_total{result="started"}`:
			started = uint64(f)
		}
	}
	return misses, started
}

// cpuTicks reads a process's user + system time, in clock ticks (1/100 s).
func cpuTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + st, errors.Join(err1, err2)
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// soak loads the host and watches the nodes for the duration.
func (s *nodeSoak) soak(ctx context.Context) (nodeSoakResult, error) {
	o := s.opts
	res := nodeSoakResult{N: o.n, Load: o.load, CPUPercent: map[string]float64{}, LoadAvgMin: loadAvg1(), LoadAvgMax: loadAvg1()}
	switch o.load {
	case "busy":
		res.BusyProcs = o.busyPerCore * runtime.NumCPU()
		if err := s.busy.start(res.BusyProcs); err != nil {
			return res, err
		}
		defer s.busy.stop()
	case "cgroup":
		res.QuotaCores = o.quota
	}
	misses0, started0, err := s.counters()
	if err != nil {
		return res, err
	}
	sts, err := s.statuses()
	if err != nil {
		return res, err
	}
	maxTerm, coord := maxTermOf(sts), agreedOn(sts)
	term0 := maxTerm
	cpu0 := make([]uint64, len(s.nodes))
	for i, b := range s.nodes {
		if cpu0[i], err = cpuTicks(b.cmd.Process.Pid); err != nil {
			return res, err
		}
		b.mu.Lock()
		b.measure = true
		b.mu.Unlock()
	}
	thr0 := s.throttled()
	s.log.Info("soaking", "duration", o.dur, "load", o.load, "busy", res.BusyProcs, "quota", res.QuotaCores)
	t0 := time.Now()
	end := time.NewTimer(o.dur)
	defer end.Stop()
	poll, sample := time.NewTicker(100*time.Millisecond), time.NewTicker(10*time.Second)
	defer poll.Stop()
	defer sample.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-end.C:
			done = true
		case <-sample.C:
			l := loadAvg1()
			res.LoadAvgMin, res.LoadAvgMax = min(res.LoadAvgMin, l), max(res.LoadAvgMax, l)
			if int(time.Since(t0)/(10*time.Second))%6 == 0 {
				s.log.Info("soak", "elapsed", time.Since(t0).Round(time.Second), "loadavg1", l,
					"coordinator_changes", res.CoordinatorChanges, "term_epochs", (maxTerm>>32)-(term0>>32))
			}
		case <-poll.C:
			for _, b := range s.nodes {
				select {
				case <-b.exited:
					return res, fmt.Errorf("node %s exited during the soak: %v", b.name, b.cmd.ProcessState)
				default:
				}
			}
			sts, err := s.statuses()
			if err != nil {
				s.log.Warn("status poll", "error", err) // a starved node may not answer in 2 s
				continue
			}
			res.Polls++
			maxTerm = max(maxTerm, maxTermOf(sts))
			if c := agreedOn(sts); c != "" && c != coord {
				res.CoordinatorChanges++
				coord = c
			}
			if coordinators(sts) > 1 {
				res.TwoCoordinatorPolls++
			}
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	for i, b := range s.nodes {
		t, err := cpuTicks(b.cmd.Process.Pid)
		if err != nil {
			return res, err
		}
		res.CPUPercent[b.name] = round1(100 * float64(time.Duration(t-cpu0[i])*clockTick) / float64(time.Since(t0)))
	}
	if thr0 != nil {
		res.Throttled = map[string]float64{}
		for i, t := range s.throttled() {
			if p := t[0] - thr0[i][0]; p > 0 {
				res.Throttled[s.nodes[i].name] = round1(100 * float64(t[1]-thr0[i][1]) / float64(p))
			}
		}
	}
	misses1, started1, err := s.counters()
	if err != nil {
		return res, err
	}
	top := s.nodes[o.n-1].name
	for i, b := range s.nodes {
		res.ElectionsStarted += started1[i] - started0[i]
		if b.name != top {
			res.HeartbeatMisses += misses1[i] - misses0[i]
		}
		b.mu.Lock()
		if b.name != top && b.maxGap > time.Duration(res.MaxSilenceMs*float64(time.Millisecond)) {
			res.MaxSilenceMs, res.MaxSilenceNode = float64(b.maxGap.Microseconds())/1000, b.name
		}
		res.SilencesOver100ms += b.long
		b.mu.Unlock()
	}
	res.MissesPerFollowerMinute = round1(float64(res.HeartbeatMisses) / float64(o.n-1) / (res.Seconds / 60))
	res.TermEpochs = (maxTerm >> 32) - (term0 >> 32)
	res.Seconds = round1(res.Seconds)
	return res, nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func maxTermOf(sts []soakStatus) uint64 {
	var t uint64
	for _, st := range sts {
		t = max(t, st.Term)
	}
	return t
}

func coordinators(sts []soakStatus) int {
	k := 0
	for _, st := range sts {
		if st.State == "coordinator" {
			k++
		}
	}
	return k
}

// throttled reads each node's cgroup cpu.stat: nr_periods and
// nr_throttled; nil without cgroups.
func (s *nodeSoak) throttled() [][2]uint64 {
	if s.nodes[0].cgroup == "" {
		return nil
	}
	out := make([][2]uint64, len(s.nodes))
	for i, b := range s.nodes {
		data, err := os.ReadFile(filepath.Join(b.cgroup, "cpu.stat"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
			n, _ := strconv.ParseUint(v, 10, 64)
			switch k {
			case "nr_periods":
				out[i][0] = n
			case "nr_throttled":
				out[i][1] = n
			}
		}
	}
	return out
}

// stop stops the busy processes, then every node (SIGTERM: it resigns and
// leaves; SIGKILL after 5 s), and removes the cgroups.
func (s *nodeSoak) stop() {
	s.busy.stop()
	for _, b := range slices.Backward(s.nodes) {
		if b == nil || b.cmd == nil || b.cmd.Process == nil {
			continue
		}
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	for _, b := range s.nodes {
		if b != nil && b.cgroup != "" {
			_ = os.Remove(b.cgroup)
		}
	}
}
