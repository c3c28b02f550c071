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
// ready: /readyz says it is alone, instead of a 200 for a cluster of one
// that leads itself. That start (every node of a cluster started at once
// has it) is quiet at INFO: no WARN, one line per entry.
func TestNodeReadyzAlone(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"node", "-name", "a", "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0",
			"-profile", "local", "-join", "127.0.0.1:1", "-expect-window", "500ms", "-log-level", "info"}, &out, &errb, nil)
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
	// Alone, the node makes itself coordinator once its -expect-window
	// (another voter, by default with -join) has passed; /readyz is still 503.
	waitFor(t, waitTimeout, "a leads itself", func() bool {
		var st election.StatusDocument
		code, err := getJSON(base+"/status", &st)
		return code == http.StatusOK && err == nil && st.Coordinator == "a"
	})
	var r election.Readiness
	if code, err := getDoc(base+"/readyz", &r); err != nil || code != http.StatusServiceUnavailable ||
		len(r.Reasons) != 1 || !strings.HasPrefix(r.Reasons[0], "alone: no seed reachable") {
		t.Errorf("/readyz of a node whose seed is unreachable: %d %+v (%v); want 503 alone", code, r, err)
	}
	logs := errb.String()
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
		if !strings.HasPrefix(l, "20") || strings.Contains(l, "[WARN]") || strings.Contains(l, "[ERROR]") {
			t.Errorf("start-up log line %q: want one INFO line per entry, no WARN or ERROR", l)
		}
	}
}
