package main

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// The default cluster elects 5; crashing it through the API elects 4 in
// well under a second; 5 restarted under its name takes over again
// (bully's rule) in a higher term.
func TestClusterCrashAndRestart(t *testing.T) {
	tc := startCluster(t)
	v := tc.waitAgreed(t, "5")
	if v.up() != 5 || len(v.Nodes) != 5 {
		t.Fatalf("%d of %d nodes up, want 5 of 5", v.up(), len(v.Nodes))
	}
	start := time.Now()
	tc.mustPost(t, "/api/nodes/5/crash", "")
	v = tc.waitAgreed(t, "4")
	t.Logf("crash of the coordinator: 4 agreed by the 4 survivors %v after the crash request", time.Since(start))
	waitFor(t, waitTimeout, "a log line for the change to 4", func() bool {
		return strings.Contains(tc.stderr.String(), "coordinator agreed: coordinator=4 term="+v.TermText+" nodes=4/5")
	})
	if code, _ := getJSON(tc.url+"/nodes/5/status", new(election.StatusDocument)); code != http.StatusServiceUnavailable {
		t.Errorf("status of a crashed node: %d, want 503", code)
	}
	if v.TermText != core.Term(v.Term).String() {
		t.Errorf("the page's term %d is %q as text, want %q", v.Term, v.TermText, core.Term(v.Term))
	}
	term4 := v.Term
	tc.mustPost(t, "/api/nodes/5/restart", "")
	v = tc.waitAgreed(t, "5")
	if v.up() != 5 || v.Term <= term4 {
		t.Errorf("after the restart: %d up, term %s; want 5 up and a term above %s", v.up(), v.TermText, core.Term(term4))
	}
}

// /nodes/{name}/status has exactly the fields of `demo node`'s /status.
// (The gossip is encrypted.)
func TestClusterNodeEndpoints(t *testing.T) {
	tc := startCluster(t, "-n", "3", "-key", "MDEyMzQ1Njc4OWFiY2RlZg==")
	tc.waitAgreed(t, "3")
	var doc map[string]any
	if code, err := getJSON(tc.url+"/nodes/2/status", &doc); code != http.StatusOK || err != nil {
		t.Fatalf("status: %d %v", code, err)
	}
	keys := slices.Sorted(maps.Keys(doc))
	if want := []string{"algorithm", "coordinator", "elections", "members", "name", "rating", "startup", "state", "term", "term_text"}; !slices.Equal(keys, want) {
		t.Errorf("status keys %v, want %v", keys, want)
	}
	var st election.StatusDocument
	if _, err := getJSON(tc.url+"/nodes/2/status", &st); err != nil {
		t.Fatal(err)
	}
	if st.Name != "2" || st.Coordinator != "3" || st.State != "lost" || st.Algorithm != "bully" || st.Rating != 2 ||
		core.Term(st.Term).Tag() != 3 || len(st.Members) != 3 {
		t.Errorf("status of 2: %+v", st)
	}
	for _, m := range st.Members {
		if !m.Alive || !strings.HasPrefix(m.Addr, "127.0.0.1:") || m.Rating != int64(m.Name[0]-'0') {
			t.Errorf("member %+v", m)
		}
	}
	for path, want := range map[string]string{
		"/nodes/3/metrics": `coordelect_is_coordinator{node="3"} 1`,
		"/metrics":         `coordelect_is_coordinator{node="1"} 0`,
		"/nodes/1/healthz": "ok",
		"/nodes/1/readyz":  `"coordinator": "3"`,
		"/nodes/1/leader":  `"coordinator": "3"`,
		"/healthz":         "ok",
	} {
		if body := get(t, tc.url+path); !strings.Contains(body, want) {
			t.Errorf("GET %s does not contain %q", path, want)
		}
	}
	if code, _ := getJSON(tc.url+"/nodes/9/status", new(election.StatusDocument)); code != http.StatusNotFound {
		t.Errorf("status of an unknown node: %d, want 404", code)
	}
}

// getText returns the status and body at url (0 and "" when unreachable).
func getText(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Resign hands off to the next by rating; a raised rating takes over.
func TestClusterResignAndRating(t *testing.T) {
	tc := startCluster(t, "-n", "3")
	tc.waitAgreed(t, "3")
	tc.mustPost(t, "/api/nodes/3/resign", "")
	tc.waitAgreed(t, "2")
	tc.mustPost(t, "/api/nodes/1/rating", `{"rating": 10}`)
	tc.waitAgreed(t, "1")
	for range 3 { // quick clicks on the page's − button add up
		tc.mustPost(t, "/api/nodes/1/rating", `{"delta": -3}`)
	}
	v := tc.waitAgreed(t, "3")
	if v.Nodes[0].Rating != 1 {
		t.Errorf("rating of 1 shown as %d, want 10 - 9 = 1", v.Nodes[0].Rating)
	}
}

// With the quorum guard, the minority side of a partition reports no
// coordinator while the majority elects one; after the heal the top-rated
// node leads everyone.
func TestClusterPartitionQuorum(t *testing.T) {
	tc := startCluster(t, "-quorum", "5")
	tc.waitAgreed(t, "5")
	tc.mustPost(t, "/api/partition", "") // {4,5} | {1,2,3}
	waitFor(t, waitTimeout, "majority {1,2,3} on 3, minority {4,5} on none", func() bool {
		v := tc.view()
		got := make([]string, len(v.Nodes))
		for i, n := range v.Nodes {
			got[i] = n.Coordinator
		}
		return slices.Equal(got, []string{"3", "3", "3", "", ""}) && v.Nodes[3].Group == 1 && v.Nodes[0].Group == 2
	})
	// /readyz tells the minority's "no quorum" from the majority's "ready"
	// (memberlist declares the other side dead within about a second).
	waitFor(t, waitTimeout, "4 not ready for want of a quorum, 1 ready", func() bool {
		var r4, r1 election.Readiness
		code4, err4 := getDoc(tc.url+"/nodes/4/readyz", &r4)
		code1, err1 := getDoc(tc.url+"/nodes/1/readyz", &r1)
		return err4 == nil && err1 == nil && code4 == http.StatusServiceUnavailable &&
			slices.Equal(r4.Reasons, []string{"no quorum: 2 of 5 voters visible (QuorumSize), a coordinator needs 3"}) &&
			code1 == http.StatusOK && r1.Ready && r1.Coordinator == "3"
	})
	tc.mustPost(t, "/api/heal", "")
	tc.waitAgreed(t, "5")
}

// Without the guard both sides lead; the page and the log say so.
func TestClusterPartitionSplitBrain(t *testing.T) {
	tc := startCluster(t, "-n", "3")
	tc.waitAgreed(t, "3")
	tc.mustPost(t, "/api/partition", `{"minority": ["3"]}`)
	waitFor(t, waitTimeout, "split brain logged", func() bool {
		return strings.Contains(tc.stderr.String(), "split brain: 2 and 3 both lead")
	})
	tc.mustPost(t, "/api/heal", "")
	tc.waitAgreed(t, "3")
}

// The ring algorithms fail over too (they wait for memberlist's verdict).
func TestClusterRingAlgorithms(t *testing.T) {
	for _, alg := range []string{"ring", "peterson"} {
		t.Run(alg, func(t *testing.T) {
			tc := startCluster(t, "-n", "3", "-algorithm", alg)
			tc.waitAgreed(t, "3")
			start := time.Now()
			tc.mustPost(t, "/api/nodes/3/crash", "")
			tc.waitAgreed(t, "2")
			t.Logf("%s: 2 agreed %v after the crash request", alg, time.Since(start))
		})
	}
}

// Actions that do not fit answer with an error status and change nothing.
func TestClusterActionErrors(t *testing.T) {
	tc := startCluster(t, "-n", "2")
	tc.waitAgreed(t, "2")
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/api/nodes/9/crash", "", http.StatusNotFound},
		{"/api/nodes/1/restart", "", http.StatusConflict},
		{"/api/nodes/1/resign", "", http.StatusConflict},
		{"/api/nodes/1/rating", `{"rating": "high"}`, http.StatusBadRequest},
		{"/api/nodes/1/rating", `{}`, http.StatusBadRequest},
		{"/api/nodes/1/rating", `{"rating": 1, "delta": 1}`, http.StatusBadRequest},
		{"/api/partition", `{"minority": ["1", "2"]}`, http.StatusConflict},
		{"/api/partition", `{"minority": ["7"]}`, http.StatusNotFound},
		{"/api/heal", "", http.StatusConflict},
	} {
		if code, body := post(t, tc.url+c.path, c.body); code != c.code || !strings.Contains(body, `"error"`) {
			t.Errorf("POST %s %s: %d %s, want %d with an error", c.path, c.body, code, body, c.code)
		}
	}
	// Another site open in the browser cannot drive the cluster.
	req, _ := http.NewRequest(http.MethodPost, tc.url+"/api/nodes/2/crash", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := httpClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %v %v, want 403", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	if v := tc.waitAgreed(t, "2"); v.up() != 2 {
		t.Errorf("%d nodes up, want 2", v.up())
	}
}

// The event stream starts with the log so far and the state, then sends
// the log of each action.
func TestClusterEventStream(t *testing.T) {
	tc := startCluster(t, "-n", "2")
	tc.waitAgreed(t, "2")
	resp, err := http.Get(tc.url + "/api/events") // no timeout: the stream stays open
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan [2]string, 64)
	go readEvents(resp.Body, events)
	want := map[string]bool{"backlog": false, "state": false}
	for !want["backlog"] || !want["state"] {
		ev := nextEvent(t, events)
		if ev[0] == "state" {
			var v clusterView
			if err := json.Unmarshal([]byte(ev[1]), &v); err != nil || len(v.Nodes) != 2 {
				t.Fatalf("state event %s: %v", ev[1], err)
			}
		}
		want[ev[0]] = true
	}
	tc.mustPost(t, "/api/nodes/1/crash", "")
	for {
		ev := nextEvent(t, events)
		if ev[0] == "log" && strings.Contains(ev[1], "crashed 1") {
			break
		}
	}
}

// readEvents parses server-sent events into {event, data} pairs.
func readEvents(r io.Reader, out chan<- [2]string) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && name != "":
			out <- [2]string{name, data}
			name, data = "", ""
		}
	}
}

func nextEvent(t *testing.T, events <-chan [2]string) [2]string {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("event stream ended")
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("no event")
	}
	return [2]string{}
}
