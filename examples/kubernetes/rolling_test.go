package kubernetes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// TestRollingRestart runs the StatefulSet's pods as `demo node` processes
// in network namespaces (lab_test.go), five of them, with the manifest's
// arguments, and replaces them one by one as a rolling update does: the
// Service drops the pod's address, SIGTERM, the process exits, a new pod
// under the same name starts at a new address and is published, and the
// next replacement waits for its /readyz and the StatefulSet's
// minReadySeconds. The coordinator goes in the
// middle of the order or last (alternating from round to round, and from
// one mode to the other). It runs without the quorum guard and with
// -quorum 5. ROLLING_ROUNDS=5 runs five rolling restarts in a row per mode
// (default 1).
//
// Targets, for each rolling restart: at most 2 leader changes (leaders
// started) for each replacement of the coordinator and none for the
// others; no interval over 1 s in which no ready member knows a
// coordinator that is in service; with the guard, no two coordinators at
// once (from the processes' own "started leading" and "stopped leading"
// lines, one clock); every process exits 0.
func TestRollingRestart(t *testing.T) {
	requireLab(t)
	rounds := 1
	if v := os.Getenv("ROLLING_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ROLLING_ROUNDS=%q: want a positive count", v)
		}
		rounds = n
	}
	bin := buildDemo(t)
	sts := statefulSet(t)
	args := sts.Spec.Template.Spec.Containers[0].Args
	minReady := time.Duration(sts.Spec.MinReadySeconds) * time.Second
	for _, mode := range []struct {
		name      string
		quorum    int
		coordLast bool // in the first round
	}{{"no-quorum", 0, false}, {"quorum", 5, true}} {
		t.Run(mode.name, func(t *testing.T) {
			modeArgs := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "-quorum=") })
			if mode.quorum > 0 {
				modeArgs = append(modeArgs, "-quorum="+strconv.Itoa(mode.quorum))
			}
			r := &rolling{t: t, bin: bin, args: modeArgs, guard: mode.quorum > 0, minReady: minReady}
			r.run(rounds, mode.coordLast)
		})
	}
}

// buildDemo builds cmd/demo from this repository, static as in the
// Dockerfile.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/demo")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	return bin
}

// statefulSet returns statefulset.yaml's StatefulSet.
func statefulSet(t *testing.T) *appsv1.StatefulSet {
	t.Helper()
	data, err := os.ReadFile("statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].(*appsv1.StatefulSet)
}

const (
	members     = 5
	httpPort    = "8080"
	gracePeriod = 15 * time.Second // terminationGracePeriodSeconds
	readyWithin = 60 * time.Second
	pollEvery   = 50 * time.Millisecond
	maxGap      = time.Second
)

// rolling is one mode's run.
type rolling struct {
	t     *testing.T
	bin   string
	args  []string
	guard bool
	// minReady is the StatefulSet's minReadySeconds: how long a new pod
	// stays ready before the next one is replaced.
	minReady time.Duration
	lab      *lab
	dir      string

	mu      sync.Mutex
	current map[string]*pod // the live incarnation of each name
	all     []*pod
	ready   map[*pod]bool // in service: ready once, not signalled
	steps   []step

	// the monitor's findings
	gap, someGap     time.Duration // longest: no ready member knows one; some does not
	gapAt, someGapAt time.Time
}

// step is one replacement.
type step struct {
	round     int
	name      string
	wasCoord  bool
	signaled  time.Time
	exited    time.Duration // SIGTERM to exit
	readyIn   time.Duration // new pod's start to /readyz
	exitCode  int
	oldLeader bool
}

var client = &http.Client{Timeout: 500 * time.Millisecond}

// get fetches http://ip:8080/path.
func get(p *pod, path string) (int, []byte, error) {
	resp, err := client.Get("http://" + p.ip.String() + ":" + httpPort + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// leader returns the coordinator p knows ("" for none).
func leader(p *pod) (string, error) {
	code, b, err := get(p, "/leader")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", nil
	}
	var doc struct {
		Coordinator string `json:"coordinator"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", err
	}
	return doc.Coordinator, nil
}

func (r *rolling) start(name string) *pod {
	r.t.Helper()
	p, err := r.lab.startPod(r.bin, r.dir, name, r.args)
	if err != nil {
		r.t.Fatalf("starting %s: %v", name, err)
	}
	r.mu.Lock()
	r.current[name] = p
	r.all = append(r.all, p)
	r.mu.Unlock()
	return p
}

// waitReady waits for p's /readyz and puts it in service.
func (r *rolling) waitReady(p *pod) time.Duration {
	r.t.Helper()
	deadline := time.Now().Add(readyWithin)
	for {
		code, b, err := get(p, "/readyz")
		if err == nil && code == http.StatusOK {
			r.mu.Lock()
			r.ready[p] = true
			r.mu.Unlock()
			return time.Since(p.started)
		}
		select {
		case <-p.exited:
			r.t.Fatalf("%s (%s) exited with %d before it was ready; log %s", p.name, p.ip, p.exitCode, p.logPath)
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s (%s) not ready after %v: %d %s %v; log %s", p.name, p.ip, readyWithin, code, b, err, p.logPath)
		}
		time.Sleep(pollEvery)
	}
}

// agreed waits until every pod in service names one coordinator, in
// service, and returns it.
func (r *rolling) agreed() string {
	r.t.Helper()
	deadline := time.Now().Add(readyWithin)
	for {
		r.mu.Lock()
		pods := make([]*pod, 0, len(r.ready))
		names := map[string]bool{}
		for p := range r.ready {
			pods = append(pods, p)
			names[p.name] = true
		}
		r.mu.Unlock()
		seen := map[string]bool{}
		for _, p := range pods {
			c, err := leader(p)
			if err != nil {
				c = ""
			}
			seen[c] = true
		}
		if len(seen) == 1 {
			for c := range seen {
				if names[c] {
					return c
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no agreement on a coordinator after %v: %v", readyWithin, seen)
		}
		time.Sleep(pollEvery)
	}
}

// monitor polls the pods in service until stop is closed and records the
// longest intervals in which none of them, or not all of them, knew a
// coordinator in service.
func (r *rolling) monitor(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var noneSince, someSince time.Time
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		pods := make([]*pod, 0, len(r.ready))
		inService := map[string]bool{}
		for p := range r.ready {
			pods = append(pods, p)
			inService[p.name] = true
		}
		r.mu.Unlock()
		now := time.Now()
		known, all := false, true
		for _, p := range pods {
			c, err := leader(p)
			r.mu.Lock()
			still := r.ready[p]
			r.mu.Unlock()
			if !still {
				continue // signalled during the poll
			}
			if err == nil && c != "" && inService[c] {
				known = true
			} else {
				all = false
			}
		}
		r.mu.Lock()
		if !known && len(pods) > 0 {
			if noneSince.IsZero() {
				noneSince = now
			}
			if d := time.Since(noneSince); d > r.gap {
				r.gap, r.gapAt = d, noneSince
			}
		} else {
			noneSince = time.Time{}
		}
		if !all {
			if someSince.IsZero() {
				someSince = now
			}
			if d := time.Since(someSince); d > r.someGap {
				r.someGap, r.someGapAt = d, someSince
			}
		} else {
			someSince = time.Time{}
		}
		r.mu.Unlock()
	}
}

// replace terminates name's pod and starts it anew, waiting for /readyz.
func (r *rolling) replace(round int, name, coord string) {
	r.t.Helper()
	r.mu.Lock()
	old := r.current[name]
	delete(r.ready, old)
	r.mu.Unlock()
	s := step{round: round, name: name, wasCoord: name == coord}
	s.signaled = time.Now()
	r.lab.terminate(old, gracePeriod)
	s.exited, s.exitCode = old.exitAt.Sub(old.signaled), old.exitCode
	p := r.start(name)
	s.readyIn = r.waitReady(p)
	time.Sleep(r.minReady)
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	r.t.Logf("round %d: %s replaced (coordinator: %v): exited %d after %v; %s ready %v after its start",
		round, name, s.wasCoord, s.exitCode, s.exited.Round(time.Millisecond), p.ip, s.readyIn.Round(time.Millisecond))
}

func (r *rolling) run(rounds int, coordLast bool) {
	t := r.t
	r.lab = newLab(t)
	dir, err := os.MkdirTemp("", "coordelect-rolling-")
	if err != nil {
		t.Fatal(err)
	}
	r.dir = dir
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the pods' logs are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r.current, r.ready = map[string]*pod{}, map[*pod]bool{}
	t.Cleanup(func() { // whatever still runs after a failure
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.all {
			select {
			case <-p.exited:
			default:
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
	})
	var names []string
	for i := range members {
		names = append(names, fmt.Sprintf("coordelect-%d", i))
	}
	began := time.Now()
	var first []*pod
	for _, n := range names {
		first = append(first, r.start(n))
	}
	for _, p := range first {
		r.waitReady(p)
	}
	coord := r.agreed()
	t.Logf("%d pods ready after %v, coordinator %s", members, time.Since(began).Round(time.Millisecond), coord)

	stop, done := make(chan struct{}), make(chan struct{})
	go r.monitor(stop, done)
	roundStart := time.Now()
	for round := 1; round <= rounds; round++ {
		last := coordLast == (round%2 == 1)
		order := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == coord })
		if last {
			order = append(order, coord)
		} else {
			order = slices.Insert(order, len(order)/2, coord)
		}
		t.Logf("round %d: order %v (coordinator %s %s)", round, order, coord, map[bool]string{true: "last", false: "in the middle"}[last])
		for _, n := range order {
			r.replace(round, n, r.agreed())
		}
		coord = r.agreed()
	}
	t.Logf("%d rolling restart(s) of %d members in %v", rounds, members, time.Since(roundStart).Round(time.Millisecond))
	close(stop)
	<-done
	end := time.Now()
	r.mu.Lock()
	final := make([]*pod, 0, len(r.current))
	for _, n := range names {
		final = append(final, r.current[n])
		delete(r.ready, r.current[n])
	}
	r.mu.Unlock()
	for _, p := range final {
		r.lab.terminate(p, gracePeriod)
	}
	r.check(end)
}

// check evaluates the targets on the recorded run; end is when the last
// replacement was over.
func (r *rolling) check(end time.Time) {
	t := r.t
	for _, p := range r.all {
		if p.exitCode != 0 {
			t.Errorf("%s (%s) exited with %d; log %s", p.name, p.ip, p.exitCode, p.logPath)
		}
	}
	for _, p := range r.all {
		// A replaced pod is a restart of its member, never a clash.
		if lines := p.grep("name is taken", "panic:"); len(lines) > 0 {
			t.Errorf("%s (%s) logged %d clash or panic line(s), the first: %s", p.name, p.ip, len(lines), lines[0])
		}
	}
	var events []logEvent
	for _, p := range r.all {
		evs, err := p.leadership()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	slices.SortStableFunc(events, func(a, b logEvent) int { return a.at.Compare(b.at) })

	// Leader changes: leaders started after each replacement's SIGTERM and
	// before the next one's (the last: until the end).
	total, coordSteps := 0, 0
	for i, s := range r.steps {
		until := end
		if i+1 < len(r.steps) {
			until = r.steps[i+1].signaled
		}
		var who []string
		for _, e := range events {
			if e.start && !e.at.Before(s.signaled.Truncate(time.Millisecond)) && e.at.Before(until) {
				who = append(who, e.pod.name+"@"+e.pod.ip.String()+"/"+e.term)
			}
		}
		total += len(who)
		limit := 0
		if s.wasCoord {
			limit = 2
			coordSteps++
		}
		t.Logf("round %d, %s (coordinator: %v): %d leader change(s) %v", s.round, s.name, s.wasCoord, len(who), who)
		if len(who) > limit {
			t.Errorf("round %d, replacing %s (coordinator: %v): %d leader changes %v, want at most %d; stalls logged meanwhile: %v",
				s.round, s.name, s.wasCoord, len(who), who, limit, r.stalls(s.signaled, until))
		}
	}
	t.Logf("leader changes: %d over %d replacements of the coordinator, %d replacements in all", total, coordSteps, len(r.steps))

	// Two coordinators at once: a leadership runs from its "started
	// leading" line to its "stopped leading" line, or to its process's exit.
	type span struct {
		p        *pod
		from, to time.Time
	}
	var spans []span
	open := map[*pod]time.Time{}
	for _, e := range events {
		if e.start {
			open[e.pod] = e.at
		} else if from, ok := open[e.pod]; ok {
			spans = append(spans, span{e.pod, from, e.at})
			delete(open, e.pod)
		}
	}
	for p, from := range open {
		spans = append(spans, span{p, from, p.exitAt})
	}
	overlaps := 0
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			a, b := spans[i], spans[j]
			if a.from.Before(b.to) && b.from.Before(a.to) {
				overlaps++
				msg := fmt.Sprintf("two coordinators at once: %s@%s %v..%v and %s@%s %v..%v", a.p.name, a.p.ip, a.from.Format("15:04:05.000"), a.to.Format("15:04:05.000"),
					b.p.name, b.p.ip, b.from.Format("15:04:05.000"), b.to.Format("15:04:05.000"))
				if r.guard {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		}
	}
	t.Logf("leaderships: %d, overlapping pairs: %d (guard: %v)", len(spans), overlaps, r.guard)

	r.mu.Lock()
	gap, gapAt, someGap, someGapAt := r.gap, r.gapAt, r.someGap, r.someGapAt
	r.mu.Unlock()
	at := func(d time.Duration, from time.Time) string {
		if d == 0 {
			return "none seen (polled every " + pollEvery.String() + ")"
		}
		return d.Round(time.Millisecond).String() + " from " + from.Format("15:04:05.000")
	}
	t.Logf("longest interval with no ready member knowing a coordinator: %s; with some ready member not knowing one: %s",
		at(gap, gapAt), at(someGap, someGapAt))
	if gap > maxGap {
		t.Errorf("%v with no ready member knowing a coordinator (from %s), want at most %v", gap, gapAt.Format("15:04:05.000"), maxGap)
	}
}

// stalls returns the "loop ran late" lines the pods logged between from
// and to: an elector that ran late (the process starved of CPU) misses
// heartbeats, and its followers elect on silence.
func (r *rolling) stalls(from, to time.Time) []string {
	var out []string
	for _, p := range r.all {
		for _, line := range p.grep("the loop ran late") {
			ts, _, _ := strings.Cut(line, " ")
			at, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts)
			if err == nil && !at.Before(from.Truncate(time.Millisecond)) && at.Before(to) {
				late := ""
				if _, rest, ok := strings.Cut(line, "late="); ok {
					late = rest
				}
				out = append(out, p.name+"@"+at.Format("15:04:05.000")+" late="+late)
			}
		}
	}
	return out
}
