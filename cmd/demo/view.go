package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coordelect/coordelect/election"
)

// nodeView is one node as the page shows it.
type nodeView struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	Up   bool   `json:"up"`
	// State is the elector's state, or "down" while crashed.
	State  string `json:"state"`
	Rating int64  `json:"rating"`
	// Term is the coordinator's term (else the highest seen); TermText is
	// it as epoch.tag (election.TermText), which the page shows: with the
	// local cluster's numeric names the tag is the winner's name.
	Term        uint64 `json:"term"`
	TermText    string `json:"term_text"`
	Coordinator string `json:"coordinator"` // who the node says leads, "" for none
	Leading     bool   `json:"leading"`     // the node says it leads
	Electing    bool   `json:"electing"`
	Alive       int    `json:"alive"` // members the node holds alive, itself included
	Known       int    `json:"known"`
	Group       int    `json:"group"` // partition side, 1 or 2; 0 when healed
	// NoQuorum: with the quorum guard on, the node reports no coordinator
	// and fewer than a majority of the quorum size run on its side (its
	// side of the partition, or the whole cluster): it cannot elect one.
	NoQuorum bool   `json:"no_quorum"`
	Sent     uint64 `json:"sent"` // messages sent since the demo started
	// Leads lists the jobs (-jobs) the node says it leads, in -jobs order.
	Leads []string `json:"leads"`
	// leaderTerm is the term of Coordinator, as the node reports it.
	leaderTerm uint64
	// jobs is each job's leader as the node reports it, in -jobs order;
	// nil while the node is down.
	jobs []jobSeen
}

// clusterView is the page's state: one event of the event stream.
type clusterView struct {
	Algorithm string `json:"algorithm"`
	Quorum    int    `json:"quorum"`
	// Majority is the number of running nodes a side needs to elect with
	// the quorum guard (Quorum/2 + 1); 0 with the guard off.
	Majority int        `json:"majority"`
	Nodes    []nodeView `json:"nodes"` // in ring order
	// Agreed: every running node names the same coordinator and term, and
	// that coordinator runs and leads.
	Agreed      bool   `json:"agreed"`
	Coordinator string `json:"coordinator"` // the agreed one, else ""
	Term        uint64 `json:"term"`        // its term, 0 when none
	TermText    string `json:"term_text"`   // the same as epoch.tag, "" when none
	// Leaders lists the running nodes that say they lead: more than one
	// is a split brain (a partition without the quorum guard).
	Leaders   []string   `json:"leaders"`
	Partition [][]string `json:"partition"`
	// Jobs are the named elections every node runs (-jobs), in -jobs
	// order; empty without jobs.
	Jobs     []jobView  `json:"jobs"`
	Messages []msgCount `json:"messages"` // by type, every node since the demo started
	Dropped  uint64     `json:"dropped"`
	Now      int64      `json:"now"` // server time in ms since the Unix epoch, for rates
}

// view builds the page's state from every node's Status.
func (c *localCluster) view() clusterView {
	v := clusterView{Algorithm: c.opts.alg.String(), Quorum: c.opts.quorum, Leaders: []string{}, Now: time.Now().UnixMilli()}
	if g := c.groups.Load(); g != nil {
		v.Partition = *g
	}
	for _, name := range c.names() {
		s, _ := c.slot(name)
		n := s.view(v.Partition)
		if n.Leading {
			v.Leaders = append(v.Leaders, n.Name)
		}
		v.Nodes = append(v.Nodes, n)
	}
	v.quorum()
	v.agree()
	v.Jobs = jobViews(c.opts.jobs, v.Nodes)
	v.Messages, v.Dropped = c.totals()
	return v
}

// quorum sets Majority and each node's NoQuorum from the running nodes on
// each side of the partition: the demo knows who can reach whom.
func (v *clusterView) quorum() {
	if v.Quorum <= 0 {
		return
	}
	v.Majority = v.Quorum/2 + 1
	running := map[int]int{} // side -> running nodes
	for _, n := range v.Nodes {
		if n.Up {
			running[n.Group]++
		}
	}
	for i := range v.Nodes {
		n := &v.Nodes[i]
		n.NoQuorum = n.Up && n.Coordinator == "" && running[n.Group] < v.Majority
	}
}

func (s *slot) view(partition [][]string) nodeView {
	n := nodeView{Name: s.name, Addr: s.address(), State: "down", Rating: s.rating.Load(), Sent: s.tally.sentTotal(), Leads: []string{}}
	for i, g := range partition {
		if slices.Contains(g, s.name) {
			n.Group = i + 1
		}
	}
	p := s.peer.Load()
	if p == nil {
		return n
	}
	// One read of the leadership the elector publishes (which wakes the
	// watcher): it names this node only while the node leads.
	coord, term, _ := p.el.Leader()
	n.Coordinator, n.leaderTerm, n.Leading = coord, term, coord == s.name
	st := p.el.Status()
	n.Up, n.State, n.Rating = true, st.State.String(), st.Rating
	n.Term, n.TermText, n.Electing = st.Term, election.TermText(st.Term), st.Electing
	n.Alive, n.Known = st.AliveMembers(), len(st.Members)
	n.viewJobs(p)
	return n
}

// agree sets Agreed, Coordinator and Term from the leadership every
// running node reports.
func (v *clusterView) agree() {
	var first *nodeView
	for i := range v.Nodes {
		n := &v.Nodes[i]
		if !n.Up {
			continue
		}
		if first == nil {
			first = n
		}
		if n.Coordinator == "" || n.Coordinator != first.Coordinator || n.leaderTerm != first.leaderTerm {
			return
		}
	}
	if first == nil || !slices.Equal(v.Leaders, []string{first.Coordinator}) {
		return
	}
	v.Agreed, v.Coordinator = true, first.Coordinator
	v.Term, v.TermText = first.leaderTerm, election.TermText(first.leaderTerm)
}

// up counts the running nodes.
func (v *clusterView) up() int {
	n := 0
	for _, x := range v.Nodes {
		if x.Up {
			n++
		}
	}
	return n
}

// totals sums the message counts of every node.
func (c *localCluster) totals() ([]msgCount, uint64) {
	var sum []msgCount
	var dropped uint64
	for _, s := range c.slots {
		counts := s.tally.counts()
		if sum == nil {
			sum = counts
		} else {
			for i := range sum {
				sum[i].Sent += counts[i].Sent
				sum[i].Received += counts[i].Received
			}
		}
		dropped += s.tally.dropped.Load()
	}
	return sum, dropped
}

// watcher publishes the cluster's state to the page whenever it changes
// (and every publishEvery for the counters), and reports each change of
// the agreed coordinator and each split brain, once.
type watcher struct {
	c          *localCluster
	lastKey    string
	lastSent   time.Time
	lastAgreed string // coordinator@term
	lastSplit  []string
	splitSince time.Time         // when more than one node began to lead
	jobLeaders map[string]string // each job's last agreed leader (trackJobs)
	jobsPlaced bool              // every job has had an agreed leader
	moves      []jobMove         // changes of jobLeaders not logged yet
	movesSince time.Time         // when the first of moves was seen
}

const (
	watchEvery   = 25 * time.Millisecond
	publishEvery = 500 * time.Millisecond
	splitAfter   = 300 * time.Millisecond
)

// run samples the cluster every watchEvery, and at once when a node
// publishes a new leadership (localCluster.wake).
func (w *watcher) run(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.c.wake:
		}
		w.step()
	}
}

func (w *watcher) step() {
	v := w.c.view()
	w.track(v)
	key := stateKey(v)
	if key == w.lastKey && time.Since(w.lastSent) < publishEvery {
		return
	}
	w.lastKey, w.lastSent = key, time.Now()
	w.c.events.publishState(v)
}

// stateKey is v without its counters: the page is updated at once when
// it changes.
func stateKey(v clusterView) string {
	v.Messages, v.Dropped, v.Now = nil, 0, 0
	nodes := slices.Clone(v.Nodes)
	for i := range nodes {
		nodes[i].Sent = 0
	}
	v.Nodes = nodes
	b, _ := json.Marshal(v)
	return string(b)
}

// track logs a newly agreed coordinator, with the time since the last
// disruption (the latest action, or the loss of the previous agreement),
// a resigned coordinator taken back, and a split brain.
func (w *watcher) track(v clusterView) {
	c := w.c
	if !v.Agreed {
		c.lostAt.CompareAndSwap(nil, &disruption{at: time.Now(), cause: "the agreement was lost"})
	} else if cur := v.Coordinator + "@" + v.TermText; cur != w.lastAgreed {
		w.lastAgreed = cur
		after, since := time.Duration(0), "the last change"
		if d := c.lostAt.Load(); d != nil {
			after, since = time.Since(d.at).Round(time.Millisecond), d.cause
		}
		c.log.Info("coordinator agreed", "coordinator", v.Coordinator, "term", v.TermText,
			"nodes", fmt.Sprintf("%d/%d", v.up(), len(v.Nodes)), "after", after, "since", since)
		c.events.addLog(logEntry{Kind: "agreed", Node: v.Coordinator, Text: fmt.Sprintf(
			"coordinator %s (term %s) agreed by all %d running nodes, %v after %s", v.Coordinator, v.TermText, v.up(), after, since)})
		if s, _ := c.slot(v.Coordinator); s != nil && s.resigned.CompareAndSwap(true, false) {
			text := takenBack(v.Coordinator)
			c.log.Info(text)
			c.events.addLog(logEntry{Kind: "note", Node: v.Coordinator, Text: text})
		}
	}
	if v.Agreed {
		c.lostAt.Store(nil)
	}
	w.trackSplit(v)
	w.trackJobs(v)
}

// takenBack explains why a node that resigned leads again.
func takenBack(name string) string {
	return name + " leads again although it resigned: it still has the highest rating, and under the bully rule " +
		"(preemption, election.Config.Preemption = PreemptAlways) the highest-rated voter takes the role back " +
		"at the next election; a resignation only hands off until then. Lower its rating to keep it off."
}

// andList joins names as "3", "3 and 4", "3, 4 and 5".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// leadText says that names all lead: "3 and 4 both lead", "3, 4 and 5 all lead".
func leadText(names []string) string {
	if len(names) == 2 {
		return andList(names) + " both lead"
	}
	return andList(names) + " all lead"
}

func (w *watcher) trackSplit(v clusterView) {
	if len(v.Leaders) < 2 {
		w.splitSince, w.lastSplit = time.Time{}, nil
		return
	}
	if w.splitSince.IsZero() {
		w.splitSince = time.Now()
	}
	// A takeover (bully's step 5) has two leaders for a round trip; report
	// only a split that lasts.
	if time.Since(w.splitSince) < splitAfter || slices.Equal(v.Leaders, w.lastSplit) {
		return
	}
	w.lastSplit = v.Leaders
	guard := "no quorum guard"
	if v.Quorum > 0 {
		guard = fmt.Sprintf("quorum guard %d", v.Quorum)
	}
	text := "split brain: " + leadText(v.Leaders) + " (" + guard + "); terms order them"
	w.c.log.Warn(text)
	w.c.events.addLog(logEntry{Kind: "split", Text: text})
}

// nodeEvent puts one node's election event in the page's log.
func (c *localCluster) nodeEvent(name string, e nodeEvent) {
	var text string
	switch e.Kind {
	case "won":
		text = fmt.Sprintf("%s leads, term %s", name, election.TermText(e.Leader.Term))
	case "follows":
		text = fmt.Sprintf("%s follows %s (term %s)", name, e.Leader.Coordinator, election.TermText(e.Leader.Term))
	case "no coordinator":
		if s, _ := c.slot(name); s != nil && s.peer.Load() == nil {
			return // the node stopped: its crash is already in the log
		}
		text = name + " knows no coordinator"
	default:
		text = name + ": " + e.Kind
	}
	c.events.addLog(logEntry{Kind: "node", Node: name, Text: text})
}
