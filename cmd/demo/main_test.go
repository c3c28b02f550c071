package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSimJSONBullyTextbook(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run(strings.Fields("sim -algorithm bully -n 8 -crash 8 -detect 1 -json"), &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	var r simResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if r.Coord == nil || *r.Coord != 7 || !r.Agreed {
		t.Fatalf("coordinator %v agreed %v, want 7 true", r.Coord, r.Agreed)
	}
	if m := r.Messages; m.Election != 28 || m.Answer != 21 || m.Coordinator != 6 || m.Total != 55 {
		t.Fatalf("messages %+v, want 28/21/6 total 55", m)
	}
}

func TestSimBadFlags(t *testing.T) {
	for _, args := range []string{
		"sim -n -3", "sim -algorithm raft", "sim -loss 1.5", "sim -dup -1", "sim -delay 5-1",
		"sim -ids 1,2,x", "sim -ids 1,1", "sim -n 3 -ids 1,2", "sim -n 3 -crash 9", "sim -n 3 -detect 4",
		"sim -n 3 -crash 2 -detect 2", "sim -ratings 1,2 -n 3", "sim -nosuchflag", "sim extra", "nosuchcommand",
		"sim -script /nonexistent/file",
	} {
		var out, errb bytes.Buffer
		rc := run(strings.Fields(args), &out, &errb)
		lines := strings.Count(strings.TrimSpace(errb.String()), "\n") + 1
		if rc != 2 || lines != 1 || out.Len() != 0 {
			t.Errorf("%q: rc=%d, %d stderr lines %q, stdout %q; want rc 2, one line, no output", args, rc, lines, errb.String(), out.String())
		}
	}
}

func TestDefaultDemoRuns(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run(nil, &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "2: coordinator coordinator=2") {
		t.Fatalf("default demo did not end with 2 as coordinator:\n%s", out.String())
	}
}
