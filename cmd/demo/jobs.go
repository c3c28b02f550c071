package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coordelect/coordelect/election"
)

// jobView is one job (a named election of -jobs) as the page shows it.
type jobView struct {
	Name string `json:"name"`
	// Agreed: every running node names the same leader and term for the
	// job, and that leader runs and is the only one that says it leads.
	Agreed bool `json:"agreed"`
	// Leader is the agreed leader, "" when none; Term its term (the job's
	// fencing token), 0 when none; TermText the same as epoch.tag.
	Leader   string `json:"leader"`
	Term     uint64 `json:"term"`
	TermText string `json:"term_text"`
	// Leaders lists the running nodes that say they lead the job, in
	// ring order: more than one is a split brain.
	Leaders []string `json:"leaders"`
}

// jobSeen is a job's leader and term as one node reports them.
type jobSeen struct {
	leader string
	term   uint64
}

// viewJobs fills in n.Leads and n.jobs from the jobs p runs.
func (n *nodeView) viewJobs(p *peer) {
	n.jobs = make([]jobSeen, len(p.jobs))
	for i, j := range p.jobs {
		leader, term, _ := j.Leader()
		n.jobs[i] = jobSeen{leader, term}
		if leader == n.Name {
			n.Leads = append(n.Leads, j.Name())
		}
	}
}

// jobViews builds the views of jobs from the running nodes of nodes,
// whose jobs are in the same order.
func jobViews(jobs []string, nodes []nodeView) []jobView {
	out := make([]jobView, len(jobs))
	for i, name := range jobs {
		j := jobView{Name: name, Leaders: []string{}}
		var first *jobSeen
		agreed := true
		for k := range nodes {
			n := &nodes[k]
			if !n.Up || i >= len(n.jobs) {
				continue
			}
			seen := &n.jobs[i]
			if seen.leader == n.Name {
				j.Leaders = append(j.Leaders, n.Name)
			}
			if first == nil {
				first = seen
			}
			if seen.leader == "" || *seen != *first {
				agreed = false
			}
		}
		if agreed && first != nil && slices.Equal(j.Leaders, []string{first.leader}) {
			j.Agreed, j.Leader, j.Term, j.TermText = true, first.leader, first.term, election.TermText(first.term)
		}
		out[i] = j
	}
	return out
}

// jobMove is a job whose agreed leader changed.
type jobMove struct{ job, from, to string }

// movesAfter bounds how long the moves of jobs wait to be logged together
// for every job to have an agreed leader again.
const movesAfter = time.Second

// trackJobs logs the jobs' placement once every job has an agreed leader
// for the first time, and then each change of a job's agreed leader: the
// changes up to the moment every job has one again (at most movesAfter
// after the first) in one entry.
func (w *watcher) trackJobs(v clusterView) {
	if len(v.Jobs) == 0 {
		return
	}
	if w.jobLeaders == nil {
		w.jobLeaders = make(map[string]string, len(v.Jobs))
	}
	all := true
	for _, j := range v.Jobs {
		if !j.Agreed {
			all = false
			continue
		}
		if from := w.jobLeaders[j.Name]; from != "" && from != j.Leader {
			if len(w.moves) == 0 {
				w.movesSince = time.Now()
			}
			w.moves = append(w.moves, jobMove{j.Name, from, j.Leader})
		}
		w.jobLeaders[j.Name] = j.Leader
	}
	if len(w.moves) > 0 && (all || time.Since(w.movesSince) >= movesAfter) {
		text := movesText(w.moves)
		w.moves = nil
		w.c.log.Info(text)
		w.c.events.addLog(logEntry{Kind: "jobs", Text: text})
	}
	if all && !w.jobsPlaced {
		w.jobsPlaced = true
		text := placementText(v)
		w.c.log.Info(text)
		w.c.events.addLog(logEntry{Kind: "jobs", Text: text})
	}
}

// movesText says which jobs moved: "jobs moved: billing 5 → 4, shard-03 5 → 2".
func movesText(moves []jobMove) string {
	parts := make([]string, len(moves))
	for i, m := range moves {
		parts[i] = fmt.Sprintf("%s %s → %s", m.job, m.from, m.to)
	}
	noun := "jobs moved"
	if len(moves) == 1 {
		noun = "job moved"
	}
	return noun + ": " + strings.Join(parts, ", ")
}

// placementText says who leads which job: "12 jobs placed: 5 leads billing
// and shard-01; 4 leads scheduler; 1 leads none", the nodes in ring order
// from the last.
func placementText(v clusterView) string {
	parts := make([]string, 0, len(v.Nodes))
	for _, n := range slices.Backward(v.Nodes) {
		if !n.Up {
			continue
		}
		leads := andList(n.Leads)
		if leads == "" {
			leads = "none"
		}
		parts = append(parts, n.Name+" leads "+leads)
	}
	return fmt.Sprintf("%d jobs placed: %s", len(v.Jobs), strings.Join(parts, "; "))
}
