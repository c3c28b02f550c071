package sim

import (
	"strings"
	"testing"
)

// "network delay=MIN-MAX" changes the one-way delay from then on; an
// absent delay leaves it, delay=0 is the default 1-5 as in "cluster", and a
// bad value is refused with the argument and the value named, leaving the
// network as it was.
func TestNetworkDelay(t *testing.T) {
	var sc Script
	run := func(line string) error {
		t.Helper()
		_, err := sc.ExecLine(line)
		return err
	}
	if err := run("cluster algorithm=bully ids=(1,2,3) delay=2-3"); err != nil {
		t.Fatal(err)
	}
	delay := func() [2]int64 { return [2]int64{sc.sim.cfg.DelayMin, sc.sim.cfg.DelayMax} }
	for _, c := range []struct {
		line string
		want [2]int64
	}{
		{"network loss=0.1", [2]int64{2, 3}},
		{"network loss=0.1 delay=40-160", [2]int64{40, 160}},
		{"network dup=0.2", [2]int64{40, 160}},
		{"network delay=7", [2]int64{7, 7}},
		{"network delay=0-9", [2]int64{0, 9}},
		{"network delay=0", [2]int64{1, 5}},
		{"network delay=40-160", [2]int64{40, 160}},
	} {
		if err := run(c.line); err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if got := delay(); got != c.want {
			t.Errorf("after %q: delay %d-%d, want %d-%d", c.line, got[0], got[1], c.want[0], c.want[1])
		}
	}
	for _, bad := range []string{"delay=abc", "delay=160-40", "delay=-5", "delay=1-2-3", "delay=1-3600001", "delay=9223372036854775808"} {
		err := run("network loss=0.3 " + bad)
		if err == nil || !strings.Contains(err.Error(), bad+":") {
			t.Errorf("network %s: error %v, want one that names %q", bad, err, bad)
		}
		if got := delay(); got != [2]int64{40, 160} || sc.sim.cfg.Loss != 0 {
			t.Errorf("network %s: refused, but the network changed: delay %d-%d, loss %v", bad, got[0], got[1], sc.sim.cfg.Loss)
		}
	}
	// The cluster command refuses the same values the same way.
	for _, bad := range []string{"delay=abc", "delay=1-3600001"} {
		var c Script
		if _, err := c.ExecLine("cluster algorithm=bully ids=(1,2) " + bad); err == nil || !strings.Contains(err.Error(), bad+":") {
			t.Errorf("cluster %s: error %v, want one that names %q", bad, err, bad)
		}
	}
	// Messages sent after the change take the new delay: 1's ELECTIONs
	// of the detect at 0 ms reach 2 and 3, which answer at once.
	if err := run("network delay=40-60"); err != nil {
		t.Fatal(err)
	}
	if s := sc.sim.Now(); s != 0 {
		t.Fatalf("the clock is at %d ms before the detect, want 0", s)
	}
	traceOf(&sc, "detect 1")
	answers := 0
	for _, l := range traceOf(&sc, "advance ms=200") {
		if strings.Contains(l, "-> 1 answer") {
			answers++
			if ms := traceMs(t, l); ms < 40 || ms > 60 {
				t.Errorf("an ANSWER to the ELECTIONs sent at 0 ms left at %d ms (%q), want 40-60", ms, l)
			}
		}
	}
	if answers != 2 {
		t.Errorf("%d ANSWERs to 1, want 2", answers)
	}
}

// traceOf runs one command and returns its trace lines.
func traceOf(sc *Script, line string) []string {
	out, err := sc.ExecLine(line)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// traceMs is the virtual time of a trace line, relative to the cluster's
// start.
func traceMs(t *testing.T, l string) int64 {
	t.Helper()
	f := strings.Fields(l)
	var ms int64
	if len(f) == 0 || !strings.HasSuffix(f[0], "ms") {
		t.Fatalf("trace line %q has no time", l)
	}
	for _, c := range strings.TrimSuffix(f[0], "ms") {
		ms = 10*ms + int64(c-'0')
	}
	return ms
}
