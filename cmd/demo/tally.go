package main

import (
	"sync/atomic"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// fanout is an election.Recorder that hands every Update to each of its
// recorders in order. They inherit the Recorder contract: called from the
// elector's loop goroutine, they must not block.
type fanout []election.Recorder

func (f fanout) Record(u election.Update) {
	for _, r := range f {
		r.Record(u)
	}
}

// nodeEvent is an election event of one node, for the web page's log.
type nodeEvent struct {
	Kind   string // "election started", "election restarted", "won", "follows", "no coordinator"
	Leader election.Leadership
}

// tally is the web page's view of one node's metrics: messages by type,
// counted since the demo started (across restarts of the node), and its
// election events, handed to onEvent. It serves the successive electors of
// one node, one at a time. Its counters may be read from any goroutine.
type tally struct {
	sent     [core.NumMsgTypes]atomic.Uint64
	received [core.NumMsgTypes]atomic.Uint64
	dropped  atomic.Uint64
	// onEvent is called on the elector's loop goroutine: it must not block.
	onEvent func(nodeEvent)
}

var _ election.Recorder = (*tally)(nil)

// Record counts an Update's messages, of every election, and turns the
// unnamed election's elections and leadership changes into events.
func (t *tally) Record(u election.Update) {
	for m := range u.Sent {
		t.sent[m].Add(u.Sent[m])
		t.received[m].Add(u.Received[m])
	}
	dropped := u.SendFailed
	for _, n := range u.Dropped {
		dropped += n
	}
	t.dropped.Add(dropped)
	if u.Election != election.DefaultName {
		return // the jobs' leadership is the watcher's to report (watcher.trackJobs)
	}
	if u.ElectionsStarted > 0 {
		t.emit(nodeEvent{Kind: "election started"})
	}
	if u.ElectionsRestarted > 0 {
		t.emit(nodeEvent{Kind: "election restarted"})
	}
	if u.LeaderChanged {
		t.leader(u.Leader)
	}
}

func (t *tally) leader(l election.Leadership) {
	switch {
	case l.IsSelf:
		t.emit(nodeEvent{Kind: "won", Leader: l})
	case l.Known():
		t.emit(nodeEvent{Kind: "follows", Leader: l})
	default:
		t.emit(nodeEvent{Kind: "no coordinator"})
	}
}

func (t *tally) emit(e nodeEvent) {
	if t.onEvent != nil {
		t.onEvent(e)
	}
}

// msgCount is one message type's counts.
type msgCount struct {
	Type     string `json:"type"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
}

// counts returns the counts of every message type, in core order.
func (t *tally) counts() []msgCount {
	out := make([]msgCount, 0, core.NumMsgTypes)
	for _, m := range core.MsgTypes() {
		out = append(out, msgCount{Type: m.String(), Sent: t.sent[m].Load(), Received: t.received[m].Load()})
	}
	return out
}

// sentTotal counts the messages sent, of every type.
func (t *tally) sentTotal() uint64 {
	var n uint64
	for i := range t.sent {
		n += t.sent[i].Load()
	}
	return n
}
