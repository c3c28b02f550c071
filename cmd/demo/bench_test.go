package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchBadFlags(t *testing.T) {
	for _, args := range []string{
		"bench", "bench nosuch", "bench failover -n 1", "bench failover -n 501", "bench failover -rounds 0",
		"bench failover -mode pause", "bench failover -algorithm raft", "bench failover -profile fast",
		"bench failover -quiet -1s", "bench failover -timeout 0s", "bench failover extra",
		"bench soak", "bench soak -d 0s", "bench soak -d 1s -burners -1", "bench soak -d 1s -nosuchflag",
		"bench memory -n 0", "bench memory -settle -1s",
	} {
		var out, errb bytes.Buffer
		rc := run(strings.Fields(args), &out, &errb)
		lines := strings.Count(strings.TrimSpace(errb.String()), "\n") + 1
		if rc != 2 || lines != 1 || out.Len() != 0 {
			t.Errorf("%q: rc=%d, %d stderr lines %q, stdout %q; want rc 2, one line, no output", args, rc, lines, errb.String(), out.String())
		}
	}
}

func TestBenchHelp(t *testing.T) {
	for _, args := range []string{"bench -h", "bench failover -h", "bench soak -h", "bench memory -h"} {
		var out, errb bytes.Buffer
		if rc := run(strings.Fields(args), &out, &errb); rc != 0 || !strings.Contains(out.String(), "usage: demo bench") {
			t.Errorf("%q: rc=%d stdout %q stderr %q; want rc 0 and the usage", args, rc, out.String(), errb.String())
		}
	}
}

// A tiny real run of each failover mode: the JSON has the documented shape
// and describes the run. Nothing is timed.
func TestBenchFailoverTiny(t *testing.T) {
	checkLeaks(t)
	for _, mode := range []string{"crash", "resign"} {
		var out, errb bytes.Buffer
		args := []string{"bench", "failover", "-n", "3", "-rounds", "1", "-quiet", "50ms", "-mode", mode, "-json"}
		if rc := run(args, &out, &errb); rc != 0 {
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
		if r.N != 3 || r.Rounds != 1 || r.Algorithm != "bully" || r.Mode != mode {
			t.Errorf("%s: result %+v, want n 3, 1 round, bully, mode %s", mode, r, mode)
		}
		if f := r.Failover; f.P50 <= 0 || f.P50 != f.Max || r.Messages.P50 == 0 || r.Messages.P50 != r.Messages.Max {
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
	if rc := run(strings.Fields("bench soak -n 3 -d 200ms -burners 1"), &out, &errb); rc != 0 {
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
