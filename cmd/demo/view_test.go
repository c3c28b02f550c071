package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
)

// newViewCluster is a local cluster that is never started: enough for the
// watcher's reports.
func newViewCluster(t *testing.T, n, quorum int) (*localCluster, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	c := newLocalCluster(&clusterOptions{n: n, alg: core.Bully, quorum: quorum}, logger, hclog.NewNullLogger(), nil)
	return c, &out
}

// agreedView is every node of c up and following coordinator in term.
func agreedView(c *localCluster, coordinator, term string) clusterView {
	v := clusterView{Agreed: true, Coordinator: coordinator, TermText: term, Leaders: []string{coordinator}}
	for _, s := range c.slots {
		v.Nodes = append(v.Nodes, nodeView{Name: s.name, Up: true, Coordinator: coordinator})
	}
	return v
}

func lastLog(c *localCluster) logEntry {
	c.events.mu.Lock()
	defer c.events.mu.Unlock()
	if len(c.events.backlog) == 0 {
		return logEntry{}
	}
	return c.events.backlog[len(c.events.backlog)-1]
}

// The agreement after a heal is timed from the heal, not from the
// partition before it (it said after=15.141s for a 0.2 s merge).
func TestAgreedTimedFromHeal(t *testing.T) {
	c, _ := newViewCluster(t, 3, 0)
	w := &watcher{c: c}
	w.track(agreedView(c, "3", "1.3"))
	c.lostAt.Store(&disruption{at: time.Now().Add(-15 * time.Second), cause: "the partition"})
	w.track(clusterView{Nodes: agreedView(c, "", "").Nodes, Leaders: []string{"2", "3"}}) // split
	c.disrupted("the heal")
	w.track(agreedView(c, "3", "2.3"))
	e := lastLog(c)
	if !strings.Contains(e.Text, "after the heal") || strings.Contains(e.Text, "15.") {
		t.Fatalf("agreement after the heal logged as %q; want it timed from the heal", e.Text)
	}
}

// A coordinator that resigned and is elected again is explained on the
// page (the bully rule), once.
func TestResignedTakenBackExplained(t *testing.T) {
	c, out := newViewCluster(t, 3, 0)
	w := &watcher{c: c}
	w.track(agreedView(c, "3", "1.3"))
	c.slots[2].resigned.Store(true)
	w.track(agreedView(c, "2", "2.2"))
	if e := lastLog(c); e.Kind == "note" {
		t.Fatalf("a note for 2, which did not resign: %q", e.Text)
	}
	w.track(agreedView(c, "3", "3.3"))
	e := lastLog(c)
	if e.Kind != "note" || !strings.Contains(e.Text, "3 leads again although it resigned") ||
		!strings.Contains(e.Text, "bully rule") || !strings.Contains(out.String(), "leads again") {
		t.Fatalf("last log entry %+v; want the bully rule explained", e)
	}
	w.track(agreedView(c, "2", "4.2"))
	w.track(agreedView(c, "3", "5.3"))
	if e := lastLog(c); e.Kind == "note" {
		t.Fatalf("explained twice: %q", e.Text)
	}
}

func TestLeadText(t *testing.T) {
	for in, want := range map[string]string{
		"3,4": "3 and 4 both lead", "3,4,5": "3, 4 and 5 all lead", "1,2,3,4": "1, 2, 3 and 4 all lead",
	} {
		if got := leadText(strings.Split(in, ",")); got != want {
			t.Errorf("leadText(%s) = %q, want %q", in, got, want)
		}
	}
}

// With the quorum guard, the nodes on a side without a majority of the
// quorum size, that report no coordinator, are marked no quorum.
func TestViewNoQuorum(t *testing.T) {
	nodes := func(groups []int, coords []string, up []bool) []nodeView {
		var out []nodeView
		for i := range groups {
			out = append(out, nodeView{Name: string(rune('1' + i)), Up: up[i], Group: groups[i], Coordinator: coords[i]})
		}
		return out
	}
	all := []bool{true, true, true, true, true}
	for _, tc := range []struct {
		name   string
		quorum int
		nodes  []nodeView
		want   string // per node: q no quorum, . not
	}{
		{"partition 3|2", 5, nodes([]int{2, 2, 2, 1, 1}, []string{"3", "3", "3", "", ""}, all), "...qq"},
		{"minority still following", 5, nodes([]int{2, 2, 2, 1, 1}, []string{"3", "3", "3", "5", ""}, all), "....q"},
		{"guard off", 0, nodes([]int{2, 2, 2, 1, 1}, []string{"3", "3", "3", "", ""}, all), "....."},
		{"3 of 5 crashed", 5, nodes([]int{0, 0, 0, 0, 0}, []string{"", "", "", "", ""}, []bool{true, true, false, false, false}), "qq..."},
		{"electing with a majority", 5, nodes([]int{0, 0, 0, 0, 0}, []string{"", "", "", "", ""}, all), "....."},
	} {
		v := clusterView{Quorum: tc.quorum, Nodes: tc.nodes}
		v.quorum()
		got := ""
		for _, n := range v.Nodes {
			if n.NoQuorum {
				got += "q"
			} else {
				got += "."
			}
		}
		if got != tc.want {
			t.Errorf("%s: no quorum %s, want %s", tc.name, got, tc.want)
		}
	}
}
