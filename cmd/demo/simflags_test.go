package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The sim flags TestSimBadFlags does not cover, exploration's among them:
// each bad value is one line naming the flag, exit status 2, no output,
// and nothing run (an -explore-out that cannot be written is found before
// the schedules run, not after the first violation).
func TestSimMoreBadFlags(t *testing.T) {
	for _, tc := range []struct{ args, mention string }{
		{"sim -explore -1", "-explore"}, {"sim -explore 5 -n 2000", "-n"}, {"sim -explore 5 -ids 1,2", "-ids"},
		{"sim -explore 2 -algorithm raft", "-algorithm"}, {"sim -seed x", "-seed"}, {"sim -seed -1", "-seed"},
		{"sim -max-ms x", "-max-ms"}, {"sim -json=maybe", "-json"}, {"sim -script", "-script"},
		{"sim -delay x", "-delay"}, {"sim -ratings 1,x,3", "-ratings"},
		{"sim -shuffle=2", "-shuffle"}, {"sim -view=x", "-view"}, {"sim -detect 9", "-detect"},
		// Accepted today (reported): NaN passes "p < 0 || p > 1"; a negative
		// bound; an output directory that is only tried after a violation.
		{"sim -loss NaN", "-loss"}, {"sim -dup NaN", "-dup"}, {"sim -max-ms -5", "-max-ms"},
		{"sim -explore 2 -explore-out /nonexistent/dir", "-explore-out"},
		{"sim -explore 2 -names -1", "-names"}, {"sim -explore 2 -names 1001", "-names"},
	} {
		var out, errb bytes.Buffer
		rc := run(strings.Fields(tc.args), &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if rc != 2 || strings.Contains(msg, "\n") || out.Len() != 0 || !strings.Contains(msg, tc.mention) {
			t.Errorf("%q: rc=%d, stderr %q, %d bytes of stdout; want rc 2 and one line naming %s, no output",
				tc.args, rc, msg, out.Len(), tc.mention)
		}
	}
}

// demo sim -explore K -names E runs every schedule with E names and says
// so in its JSON.
func TestSimExploreNames(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"sim", "-explore", "3", "-n", "5", "-names", "4", "-faults", "harsh", "-view", "-json", "-explore-out", t.TempDir()}
	if rc := run(args, &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var res struct {
		Runs, Names, Violations int
		Mode                    string
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if res.Runs != 3 || res.Names != 4 || res.Violations != 0 || res.Mode != "view" {
		t.Errorf("result %+v: want 3 runs of 4 names in view mode, no violation", res)
	}
}
