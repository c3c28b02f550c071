package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election"
)

func TestParseJobs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"0", []string{}},
		{"2", []string{"scheduler", "compactor"}},
		{" 5 ", []string{"scheduler", "compactor", "billing", "shard-00", "shard-01"}},
		{"a, b ,c", []string{"a", "b", "c"}},
		{"nightly report", []string{"nightly report"}},
	} {
		got, err := parseJobs(tc.in, maxJobs)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseJobs(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if got := jobNames(defaultJobs); len(got) != 12 || got[0] != "scheduler" || got[11] != "shard-08" {
		t.Errorf("the default jobs: %q; want scheduler, compactor, billing, shard-00 .. shard-08", got)
	}
	if got := jobNames(maxJobs); len(got) != maxJobs || got[maxJobs-1] != fmt.Sprintf("shard-%02d", maxJobs-4) {
		t.Errorf("jobNames(%d) ends with %q", maxJobs, got[len(got)-1])
	}
	// demo node, which has no page, takes more.
	if got, err := parseJobs(fmt.Sprint(maxNodeJobs), maxNodeJobs); err != nil || len(got) != maxNodeJobs {
		t.Errorf("parseJobs(%d, maxNodeJobs): %d names, %v", maxNodeJobs, len(got), err)
	}
	if _, err := parseJobs(fmt.Sprint(maxNodeJobs+1), maxNodeJobs); err == nil || !strings.Contains(err.Error(), fmt.Sprint(maxNodeJobs)) {
		t.Errorf("parseJobs(%d, maxNodeJobs) = %v; want an error naming the cap", maxNodeJobs+1, err)
	}
	long := strings.Repeat("x", 65)
	for _, in := range []string{"-1", "65", "", ",", "a,a", "default", "a,\x01", long, strings.Repeat("j,", 70)} {
		if names, err := parseJobs(in, maxJobs); err == nil {
			t.Errorf("parseJobs(%.20q) = %q; want an error", in, names)
		} else if msg := err.Error(); !strings.Contains(msg, "-jobs") || !strings.Contains(msg, fmt.Sprintf("%q", in)) {
			t.Errorf("parseJobs(%.20q): %q does not name -jobs and the value", in, msg)
		}
	}
}

// seenNodes are nodes 1..len(leaders[0]), up but for those in down; node
// i reports character i of leaders[k] as job k's leader ('.' for none),
// in term 7.
func seenNodes(leaders []string, down ...string) []nodeView {
	var out []nodeView
	for i := range leaders[0] {
		name := fmt.Sprint(i + 1)
		n := nodeView{Name: name, Up: !slices.Contains(down, name)}
		if n.Up {
			for _, l := range leaders {
				leader := string(l[i])
				if leader == "." {
					leader = ""
				}
				n.jobs = append(n.jobs, jobSeen{leader, 7})
			}
		}
		out = append(out, n)
	}
	return out
}

// A job is agreed when every running node names the same leader and term,
// and only that leader says it leads.
func TestJobViews(t *testing.T) {
	jobs := []string{"a", "b", "c", "d", "e"}
	// Per job, what nodes 1, 2 and 3 report as its leader.
	nodes := seenNodes([]string{"333", "222", "3.3", "123", "111"}, "1")
	got := jobViews(jobs, nodes)
	want := []jobView{
		{Name: "a", Agreed: true, Leader: "3", Term: 7, TermText: election.TermText(7), Leaders: []string{"3"}},
		{Name: "b", Agreed: true, Leader: "2", Term: 7, TermText: election.TermText(7), Leaders: []string{"2"}},
		{Name: "c", Leaders: []string{"3"}},      // 2 knows no leader yet
		{Name: "d", Leaders: []string{"2", "3"}}, // a split
		{Name: "e", Leaders: []string{}},         // led by 1, which is down
	}
	for i := range want {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Errorf("job %s: %+v; want %+v", jobs[i], got[i], want[i])
		}
	}
	nodes[1].jobs[0].term = 8 // 2 names 3 in another term
	if j := jobViews(jobs, nodes)[0]; j.Agreed {
		t.Errorf("job a agreed across terms: %+v", j)
	}
	if got := jobViews(nil, nodes); len(got) != 0 {
		t.Errorf("no jobs: %+v", got)
	}
}

// The page's JSON keeps the cluster's fields and adds jobs and each
// node's leads.
func TestJobsJSON(t *testing.T) {
	v := clusterView{Nodes: []nodeView{{Name: "1", Leads: []string{"a"}}}, Jobs: []jobView{{Name: "a", Leaders: []string{}}}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nodes []map[string]any `json:"nodes"`
		Jobs  []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if leads := doc.Nodes[0]["leads"]; fmt.Sprint(leads) != "[a]" {
		t.Errorf("node 1's leads: %v", leads)
	}
	for _, k := range []string{"name", "agreed", "leader", "term", "term_text", "leaders"} {
		if _, ok := doc.Jobs[0][k]; !ok {
			t.Errorf("job without %q: %s", k, b)
		}
	}
	for _, k := range []string{"coordinator", "term", "term_text", "state", "up"} {
		if _, ok := doc.Nodes[0][k]; !ok {
			t.Errorf("node without %q: %s", k, b)
		}
	}
}

// The watcher logs the placement once every job has a leader, then the
// moves of a crash in one entry once every job has a leader again.
func TestTrackJobs(t *testing.T) {
	c, out := newViewCluster(t, 3, 0)
	w := &watcher{c: c}
	jobs := []string{"a", "b", "c"}
	view := func(leaders []string, down ...string) clusterView {
		v := clusterView{Nodes: seenNodes(leaders, down...)}
		for i := range v.Nodes {
			n := &v.Nodes[i]
			for k, s := range n.jobs {
				if s.leader == n.Name {
					n.Leads = append(n.Leads, jobs[k])
				}
			}
		}
		v.Jobs = jobViews(jobs, v.Nodes)
		return v
	}
	w.trackJobs(view([]string{"333", "222", "..."}))
	if e := lastLog(c); e.Kind == "jobs" {
		t.Fatalf("logged before every job has a leader: %q", e.Text)
	}
	w.trackJobs(view([]string{"333", "222", "333"}))
	want := "3 jobs placed: 3 leads a and c; 2 leads b; 1 leads none"
	if e := lastLog(c); e.Kind != "jobs" || e.Text != want {
		t.Fatalf("last log entry %+v; want %q", e, want)
	}
	// 3 crashes: a moves first, c later.
	w.trackJobs(view([]string{"222", "222", "..."}, "3"))
	if e := lastLog(c); e.Text != want {
		t.Fatalf("logged before every job has a leader again: %q", e.Text)
	}
	w.trackJobs(view([]string{"222", "222", "111"}, "3"))
	want = "jobs moved: a 3 → 2, c 3 → 1"
	if e := lastLog(c); e.Kind != "jobs" || e.Text != want || !strings.Contains(out.String(), want) {
		t.Fatalf("last log entry %+v; want %q on the page and the terminal", e, want)
	}
	w.trackJobs(view([]string{"222", "222", "111"}, "3"))
	if n := strings.Count(out.String(), "moved"); n != 1 {
		t.Errorf("%d lines of moves; want 1", n)
	}
}

// A live cluster runs its jobs: /api/state lists each job's leader, every
// node's leads, and /nodes/N/leader?election=JOB says the same; crashing
// a node moves its jobs to the survivors.
func TestClusterJobsMove(t *testing.T) {
	tc := startCluster(t, "-n", "3", "-jobs", "6")
	var v clusterView
	waitFor(t, waitTimeout, "every job led, agreed", func() bool {
		v = tc.view()
		return len(v.Jobs) == 6 && allAgreed(v.Jobs)
	})
	leads := map[string][]string{}
	for _, n := range v.Nodes {
		leads[n.Name] = n.Leads
	}
	var victim string
	for _, j := range v.Jobs {
		if !slices.Contains(leads[j.Leader], j.Name) {
			t.Errorf("job %s led by %s, whose leads are %q", j.Name, j.Leader, leads[j.Leader])
		}
		var doc election.LeaderDocument
		if code, err := getJSON(tc.url+"/nodes/1/leader?election="+j.Name, &doc); code != http.StatusOK || err != nil || doc.Coordinator != j.Leader {
			t.Errorf("/nodes/1/leader?election=%s: %d %v %+v; want %s", j.Name, code, err, doc, j.Leader)
		}
		victim = j.Leader
	}
	var state struct {
		Jobs []jobView `json:"jobs"`
	}
	if code, err := getJSON(tc.url+"/api/state", &state); code != http.StatusOK || err != nil || len(state.Jobs) != 6 {
		t.Fatalf("/api/state: %d %v, %d jobs", code, err, len(state.Jobs))
	}
	moved := leads[victim]
	tc.mustPost(t, "/api/nodes/"+victim+"/crash", "")
	waitFor(t, waitTimeout, "the jobs of "+victim+" led by survivors", func() bool {
		v = tc.view()
		return allAgreed(v.Jobs)
	})
	for _, j := range v.Jobs {
		if j.Leader == victim {
			t.Errorf("job %s still led by %s, which crashed", j.Name, victim)
		}
	}
	t.Logf("crash of %s: its jobs %q moved; now %+v", victim, moved, v.Jobs)
	waitFor(t, waitTimeout, "the moves in the log", func() bool {
		return strings.Contains(tc.stderr.String(), "moved: ")
	})
}

func allAgreed(jobs []jobView) bool {
	for _, j := range jobs {
		if !j.Agreed {
			return false
		}
	}
	return len(jobs) > 0
}
