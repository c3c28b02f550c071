package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/coordelect/coordelect/internal/cli"
)

// TestMain runs coordbench itself, not the tests, in a shard process
// that idle -procs started from this test binary (os.Executable).
func TestMain(m *testing.M) {
	if os.Getenv(shardEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// runArgs runs coordbench with args and returns its exit status.
func runArgs(args []string, stdout, stderr io.Writer) int {
	return cli.Status("coordbench", run(context.Background(), args, stdout, stderr), stderr)
}

// checkLeaks fails the test if it leaves goroutines behind (after up to
// 10 s for members shutting down).
func checkLeaks(t *testing.T, more ...goleak.Option) {
	ignore := append(more, goleak.IgnoreCurrent())
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := goleak.Find(ignore...)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Error(err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range []string{
		"", "nosuch", "failover -n 1", "failover -n 1001", "failover -rounds 0",
		"failover -mode pause", "failover -algorithm raft", "failover -profile fast",
		"failover -quiet -1s", "failover -timeout 0s", "failover extra",
		"failover -quorum -1", "failover -n 3 -quorum 4", "failover -busy-per-core -1",
		"soak", "soak -d 0s", "soak -d 1s -burners -1", "soak -d 1s -nosuchflag",
		"memory -n 0", "memory -settle -1s", "idle -n 1001", "idle -d 0s", "idle -settle -1s", "idle -timeout 0s", "idle -bare -quorum 3", "idle -rounds -1", "idle -ramp -1s", "idle -bare -rounds 2", "idle -procs 0", "idle -algorithm raft", "idle -procs 65", "idle -netns", "idle -procs 2 -cpuprofile /tmp/x", "idle -procs 2 -stalldump /tmp/x", "idle -procs 2 -stalllog", "idle -logtop -1", "idle -n 5 -logtop 6",
		"compare -n 1", "compare -rounds 0", "compare -hb 1ms", "compare -quiet -1s",
		"nodesoak", "nodesoak -d 1s -load fire", "nodesoak -d 1s -n 1", "nodesoak -d 1s -quota 0",
		"nodesoak -d 1s -busy-per-core 0", "nodesoak -d 1s -demo /nonexistent/demo",
		"report extra", "report -img", "report -nosuchflag",
		"elections -n 1", "elections -elections 0", "elections -rounds 0", "elections -quorum 30", "elections -idle 10ms",
		"elections -quiet -1s", "elections -timeout 0s", "elections -algorithm raft", "elections extra",
	} {
		var out, errb bytes.Buffer
		rc := runArgs(strings.Fields(args), &out, &errb)
		lines := strings.Count(strings.TrimSpace(errb.String()), "\n") + 1
		if rc != 2 || lines != 1 || out.Len() != 0 {
			t.Errorf("%q: rc=%d, %d stderr lines %q, stdout %q; want rc 2, one line, no output", args, rc, lines, errb.String(), out.String())
		}
	}
}

func TestBenchHelp(t *testing.T) {
	for _, args := range []string{"-h", "failover -h", "soak -h", "memory -h", "compare -h", "nodesoak -h", "idle -h", "elections -h", "report -h"} {
		var out, errb bytes.Buffer
		if rc := runArgs(strings.Fields(args), &out, &errb); rc != 0 || !strings.Contains(out.String(), "usage: coordbench") {
			t.Errorf("%q: rc=%d stdout %q stderr %q; want rc 0 and the usage", args, rc, out.String(), errb.String())
		}
	}
}

// A tiny real run of each failover mode: the JSON has the documented shape
// and describes the run. Nothing is timed.
func TestBenchFailoverTiny(t *testing.T) {
	checkLeaks(t)
	for _, mode := range []string{"crash", "resign", "crash -quorum 3 -busy-per-core 1"} {
		var out, errb bytes.Buffer
		args := append([]string{"failover", "-n", "3", "-rounds", "1", "-quiet", "50ms", "-json", "-mode"}, strings.Fields(mode)...)
		if rc := runArgs(args, &out, &errb); rc != 0 {
			t.Fatalf("%s: rc=%d stderr=%s", mode, rc, errb.String())
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &fields); err != nil {
			t.Fatalf("%s: %v in %q", mode, err, out.String())
		}
		for _, k := range []string{"n", "rounds", "algorithm", "mode", "failover_ms", "messages_per_failover", "spurious_elections"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("%s: no %q in %s", mode, k, out.String())
			}
		}
		var r failoverResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		wantMode, wantQuorum, wantBusy := mode, 0, 0
		if mode != "crash" && mode != "resign" {
			wantMode, wantQuorum, wantBusy = "crash", 3, runtime.NumCPU()
		}
		if r.N != 3 || r.Rounds != 1 || r.Algorithm != "bully" || r.Mode != wantMode || r.Quorum != wantQuorum || r.BusyProcs != wantBusy {
			t.Errorf("%s: result %+v, want n 3, 1 round, bully, mode %s, quorum %d, %d busy", mode, r, wantMode, wantQuorum, wantBusy)
		}
		if f := r.Failover; f.P50 <= 0 || f.P50 != f.Max || r.Messages == nil || r.Messages.P50 == 0 || r.Messages.P50 != r.Messages.Max {
			t.Errorf("%s: one round should give p50 = max > 0 and messages > 0: %+v", mode, r)
		}
		if !strings.Contains(errb.String(), "round=1") {
			t.Errorf("%s: no progress on stderr: %q", mode, errb.String())
		}
	}
}

func TestBenchSoakTiny(t *testing.T) {
	checkLeaks(t)
	var out, errb bytes.Buffer
	if rc := runArgs(strings.Fields("soak -n 3 -d 200ms -burners 1"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r soakResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.N != 3 || r.Burners != 1 || r.Seconds < 0.2 || r.Profile != "lan" {
		t.Errorf("result %+v, want n 3, 1 burner, at least 0.2 s, profile lan", r)
	}
}

// compare runs the three clusters with the one driver, tiny: one JSON row
// each, with messages counted for every library.
func TestCompareTiny(t *testing.T) {
	// raft's transport leaves a reader on each connection it accepted
	// after Close until the peer closes it.
	checkLeaks(t, goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn"))
	var out, errb bytes.Buffer
	args := strings.Fields("compare -n 3 -rounds 1 -raft-rounds 1 -quiet 50ms -json")
	if rc := runArgs(args, &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var libs []string
	for line := range strings.Lines(out.String()) {
		var r compareRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		if r.N != 3 || r.Rounds != 1 || r.Failover.P50 <= 0 || r.Messages == nil || r.Messages.P50 == 0 {
			t.Errorf("row %+v: want n 3, 1 round, a failover time and messages", r)
		}
		libs = append(libs, r.Library+" "+r.Config)
	}
	want := []string{"coordelect bully, defaults (K·H = 150 ms)", "hashicorp/raft DefaultConfig (1 s)",
		"hashicorp/raft HeartbeatTimeout = ElectionTimeout = 150ms"}
	if strings.Join(libs, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q", libs, want)
	}
}

func TestScrape(t *testing.T) {
	page := `# HELP coordelect_heartbeat_misses_total x
coordelect_heartbeat_misses_total 17
coordelect_elections_total{result="lost"} 9
coordelect_elections_total{result="started"} 4
coordelect_heartbeat_misses_total_other 3
`
	if m, s := scrape(strings.NewReader(page)); m != 17 || s != 4 {
		t.Errorf("scrape = %d misses, %d started; want 17, 4", m, s)
	}
}

// A short nodesoak of real demo node processes with no load: the JSON
// describes the run, every node's CPU was read, and the silences between
// heartbeats were timed from the followers' logs (a follower hears one
// every 50 ms, so the longest silence is positive). Nothing is timed
// against a bound.
func TestNodeSoakTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/demo and runs 3 processes")
	}
	demo := filepath.Join(t.TempDir(), "demo")
	build := exec.Command("go", "build", "-o", demo, "./cmd/demo")
	build.Dir = filepath.Join("..", "..", "..") // the root module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building demo: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	if rc := runArgs([]string{"nodesoak", "-demo", demo, "-n", "3", "-d", "2s", "-load", "none"}, &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r nodeSoakResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.N != 3 || r.Load != "none" || r.Seconds < 2 || len(r.CPUPercent) != 3 || r.Polls == 0 {
		t.Errorf("result %+v: want n 3, load none, 2 s, CPU of 3 nodes, polls", r)
	}
	if r.MaxSilenceMs <= 0 || r.MaxSilenceNode == "3" {
		t.Errorf("max silence %v ms at node %q: want a follower's silence measured", r.MaxSilenceMs, r.MaxSilenceNode)
	}
}

// A tiny bare run: members without electors send nothing of ours, and
// the window and the process's CPU are still reported. Nothing is timed.
func TestBenchIdleBare(t *testing.T) {
	checkLeaks(t)
	var out, errb bytes.Buffer
	if rc := runArgs(strings.Fields("idle -bare -n 3 -d 500ms -settle 0s"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r idleResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if !r.Bare || r.N != 3 || r.Seconds < 0.5 || r.CoordinatorSendsPerSec != 0 || r.FollowerMaxSendsPerSec != 0 ||
		r.Spurious != 0 || r.ProcessCPUPercent <= 0 {
		t.Errorf("result %+v, want bare, n 3, at least 0.5 s, no elector sends, some CPU", r)
	}
}

// A tiny idle run: the coordinator heartbeats the others, the followers
// send nothing (no quorum guard), and the window and CPU are reported.
// Nothing is timed.
func TestBenchIdleTiny(t *testing.T) {
	checkLeaks(t)
	var out, errb bytes.Buffer
	if rc := runArgs(strings.Fields("idle -n 3 -d 500ms -settle 0s"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r idleResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.N != 3 || r.Seconds < 0.5 || r.Profile != "lan" || r.CoordinatorHeartbeatPerSec <= 0 ||
		r.CoordinatorSendsPerSec < r.CoordinatorHeartbeatPerSec || r.FollowerMaxSendsPerSec != 0 {
		t.Errorf("result %+v, want n 3, at least 0.5 s, heartbeats from the coordinator only", r)
	}
}

// idle -rounds: after the window the coordinator is crashed twice, on the
// same cluster, and the failovers are reported with the idle figures and
// the heap per member.
func TestBenchIdleRounds(t *testing.T) {
	checkLeaks(t)
	var out, errb bytes.Buffer
	if rc := runArgs(strings.Fields("idle -n 3 -d 300ms -settle 0s -rounds 2 -quiet 100ms"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r idleResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.Failover == nil || r.Failover.Rounds != 2 || r.Failover.Failover.P50 <= 0 || r.Failover.Messages == nil ||
		r.Failover.Messages.P50 == 0 || r.HeapBytesPerMember <= 0 {
		t.Errorf("result %+v (failover %+v), want 2 rounds with times and messages, and a heap reading", r, r.Failover)
	}
}

// idle -procs: the members run in three shard processes (this test
// binary, re-run as coordbench), each with its own runtime; the start,
// the idle figures and a crash failover work across them, and the
// figures sum over the processes. Nothing is timed.
// The idle window is 1 s: the shards' CPU is read from /proc/PID/stat in
// clock ticks (10 ms), and 6 idle members in 3 processes can use less
// than a tick each in 300 ms (CI read 0 % once with -d 300ms).
func TestBenchIdleProcs(t *testing.T) {
	checkLeaks(t)
	var out, errb bytes.Buffer
	if rc := runArgs(strings.Fields("idle -n 6 -procs 3 -algorithm ring -d 1s -settle 0s -rounds 2 -quiet 100ms"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r idleResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.Procs != 3 || r.N != 6 || r.Algorithm != "ring" || r.CoordinatorHeartbeatPerSec <= 0 || r.ProcessCPUPercent <= 0 ||
		r.HeapBytesPerMember <= 0 || r.StackBytesPerMember <= 0 || r.GoroutinesPerMember < 1 {
		t.Errorf("result %+v: want 3 processes, ring, heartbeats, CPU, heap, stacks and goroutines read", r)
	}
	if r.Failover == nil || r.Failover.Rounds != 2 || r.Failover.Failover.P50 <= 0 || r.Failover.Messages == nil ||
		r.Failover.Messages.P50 < 5 {
		t.Errorf("failover %+v: want 2 rounds with times and at least n-1 messages each", r.Failover)
	}
}

// A tiny run of elections on the simulator: the JSON has the fields the
// issue asks for, every name the crashed member led is timed, and the
// same flags give the same figures (virtual time; the heap is not
// compared).
func TestBenchElectionsTiny(t *testing.T) {
	var runs [2]electionsResult
	for i := range runs {
		var out, errb bytes.Buffer
		args := []string{"elections", "-n", "5", "-elections", "12", "-rounds", "2", "-idle", "2s", "-json"}
		if rc := runArgs(args, &out, &errb); rc != 0 {
			t.Fatalf("rc=%d stderr=%s", rc, errb.String())
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &fields); err != nil {
			t.Fatalf("%v in %q", err, out.String())
		}
		for _, k := range []string{"n", "elections", "leaders_per_member", "idle_packets_per_s", "failover_ms", "spurious_elections", "bytes_per_name_per_member"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("no %q in %s", k, out.String())
			}
		}
		r := &runs[i]
		if err := json.Unmarshal(out.Bytes(), r); err != nil {
			t.Fatal(err)
		}
		if r.N != 5 || r.Elections != 12 || r.LeadersPerMember.Mean != 12.0/5 || r.IdlePackets.SingleElection <= 0 || r.IdlePackets.MaxMember <= 0 {
			t.Errorf("result %+v: want n 5, 12 names, mean 2.4 leaders, idle packets", r)
		}
		sum := 0
		for _, k := range r.NamesPerRound {
			sum += k
		}
		if len(r.NamesPerRound) != 2 || sum != r.FailoverNames || r.Failover.P50 <= 0 {
			t.Errorf("result %+v: want every name of 2 rounds timed", r)
		}
	}
	a, b := runs[0], runs[1]
	a.BytesPerName, a.SimBytesPerName, b.BytesPerName, b.SimBytesPerName = 0, 0, 0, 0
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("two runs differ:\n%s\n%s", ja, jb)
	}
}
