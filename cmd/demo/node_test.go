package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election"
)

// A node whose seeds cannot be reached is alive (/healthz 200) but not
// ready: /readyz says it is alone. Without -bootstrap it never leads, and
// once its -expect-window has passed it says so once, at WARN (the one
// line that is not INFO); with -bootstrap it leads itself after the
// window, and its start is quiet at INFO: one line per entry.
func TestNodeReadyzAlone(t *testing.T) {
	checkLeaks(t)
	for _, bootstrap := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "bootstrap"}[bootstrap], func(t *testing.T) { nodeAlone(t, bootstrap) })
	}
}

func nodeAlone(t *testing.T, bootstrap bool) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		args := []string{"node", "-name", "a", "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0",
			"-profile", "local", "-join", "127.0.0.1:1", "-expect-window", "500ms", "-log-level", "info"}
		if bootstrap {
			args = append(args, "-bootstrap")
		}
		done <- runContext(ctx, args, &out, &errb, nil)
	}()
	defer func() {
		cancel()
		if rc := <-done; rc != 0 {
			t.Errorf("rc=%d, stderr %s", rc, errb.String())
		}
	}()
	line := regexp.MustCompile(`(http://\S+)/status`)
	var base string
	waitFor(t, waitTimeout, "the node's URL on stdout", func() bool {
		m := line.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	if code, body := getText(base + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %q; want 200", code, body)
	}
	if bootstrap {
		// Alone, the node makes itself coordinator once its -expect-window
		// (another voter, by default with -join) has passed.
		waitFor(t, waitTimeout, "a leads itself", func() bool {
			var st election.StatusDocument
			code, err := getJSON(base+"/status", &st)
			return code == http.StatusOK && err == nil && st.Coordinator == "a"
		})
	} else {
		// It holds past the window, and says why once.
		waitFor(t, waitTimeout, "the hold logged at WARN", func() bool {
			return strings.Contains(errb.String(), "[WARN]  demo.election: holding the election: waiting for the expected voters, 1 of 2 visible")
		})
		var st election.StatusDocument
		if code, err := getJSON(base+"/status", &st); code != http.StatusOK || err != nil || st.Coordinator != "" || st.State == "coordinator" {
			t.Errorf("/status: %d %v %+v; want no coordinator", code, err, st)
		}
	}
	var r election.Readiness
	if code, err := getDoc(base+"/readyz", &r); err != nil || code != http.StatusServiceUnavailable ||
		len(r.Reasons) == 0 || !strings.HasPrefix(r.Reasons[0], "alone: no seed reachable") {
		t.Errorf("/readyz of a node whose seed is unreachable: %d %+v (%v); want 503 alone", code, r, err)
	}
	logs := errb.String()
	if n := strings.Count(logs, "[WARN]"); !bootstrap && n != 1 {
		t.Errorf("%d WARN lines, want the hold's alone:\n%s", n, logs)
	}
	if !strings.Contains(logs, "no seed reachable") {
		t.Errorf("the unreachable seed is not logged:\n%s", logs)
	}
	// One naming convention: the libraries name their sub-loggers, the
	// caller passes its own (here "demo"), so no name is doubled.
	for _, want := range []string{"demo.membership: ", "demo.election: "} {
		if !strings.Contains(logs, want) {
			t.Errorf("no line from logger %q:\n%s", strings.TrimSuffix(want, ": "), logs)
		}
	}
	if strings.Contains(logs, "membership.membership") || strings.Contains(logs, "election.election") {
		t.Errorf("a doubled logger name:\n%s", logs)
	}
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		hold := !bootstrap && strings.Contains(l, "[WARN]  demo.election: holding the election")
		if !strings.HasPrefix(l, "20") || strings.Contains(l, "[WARN]") && !hold || strings.Contains(l, "[ERROR]") {
			t.Errorf("start-up log line %q: want one INFO line per entry, no WARN (but the hold's) or ERROR", l)
		}
	}
}
