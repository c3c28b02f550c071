package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
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

// The default command is the live local cluster: 5 nodes, bully, the page
// on 127.0.0.1:8080. (The fig. 29 walk-through it used to run is
// `demo sim -script election/sim/testdata/scenarios/bully_fig29.txt`.)
func TestDefaultDemoRuns(t *testing.T) {
	o, err := parseClusterFlags(nil, io.Discard)
	if err != nil || o.n != 5 || o.alg != core.Bully || o.http != "127.0.0.1:8080" || o.quorum != 0 || o.key != nil {
		t.Fatalf("defaults %+v, %v; want 5 nodes, bully, 127.0.0.1:8080, no quorum, no key", o, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, []string{"-http", "127.0.0.1:0"}, &out, &errb, nil) }()
	waitFor(t, waitTimeout, "coordinator 5 agreed", func() bool {
		return strings.Contains(errb.String(), "coordinator agreed: coordinator=5")
	})
	if !strings.Contains(out.String(), "5 nodes (bully) on 127.0.0.1; open http://127.0.0.1:") {
		t.Errorf("no URL printed: %q", out.String())
	}
	cancel()
	select {
	case rc := <-done:
		if rc != 0 {
			t.Errorf("rc=%d after the context ended; stderr:\n%s", rc, errb.String())
		}
	case <-time.After(waitTimeout):
		t.Fatal("the demo did not stop when its context ended")
	}
	var wout, werr bytes.Buffer
	if rc := run([]string{"sim", "-script", "../../election/sim/testdata/scenarios/bully_fig29.txt"}, &wout, &werr); rc != 0 ||
		!strings.Contains(wout.String(), "2: coordinator coordinator=2") {
		t.Fatalf("fig. 29 walk-through: rc=%d stderr=%s\n%s", rc, werr.String(), wout.String())
	}
}
