package main

import (
	"sync/atomic"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// fanout is an election.Recorder that passes every call to each of its
// recorders in order. They inherit the Recorder contract: called from the
// elector's loop goroutine, they must not block.
type fanout []election.Recorder

var _ election.Recorder = fanout(nil)

func (f fanout) SetState(s core.State) {
	for _, r := range f {
		r.SetState(s)
	}
}

func (f fanout) SetTerm(term uint64) {
	for _, r := range f {
		r.SetTerm(term)
	}
}

func (f fanout) SetLeader(l election.Leadership) {
	for _, r := range f {
		r.SetLeader(l)
	}
}

func (f fanout) LeaderChanged() {
	for _, r := range f {
		r.LeaderChanged()
	}
}

func (f fanout) MessagesSent(t core.MsgType, n uint64) {
	for _, r := range f {
		r.MessagesSent(t, n)
	}
}

func (f fanout) MessagesReceived(t core.MsgType, n uint64) {
	for _, r := range f {
		r.MessagesReceived(t, n)
	}
}

func (f fanout) MessagesDropped(reason string, n uint64) {
	for _, r := range f {
		r.MessagesDropped(reason, n)
	}
}

func (f fanout) Elections(e election.Result, n uint64) {
	for _, r := range f {
		r.Elections(e, n)
	}
}

func (f fanout) ElectionDuration(seconds float64) {
	for _, r := range f {
		r.ElectionDuration(seconds)
	}
}

func (f fanout) HeartbeatMisses(n uint64) {
	for _, r := range f {
		r.HeartbeatMisses(n)
	}
}

func (f fanout) SetMembers(alive, known int) {
	for _, r := range f {
		r.SetMembers(alive, known)
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
	election.NopRecorder
	sent     [core.NumMsgTypes]atomic.Uint64
	received [core.NumMsgTypes]atomic.Uint64
	dropped  atomic.Uint64
	// onEvent is called on the elector's loop goroutine: it must not block.
	onEvent func(nodeEvent)
}

var _ election.Recorder = (*tally)(nil)

func (t *tally) MessagesSent(m core.MsgType, n uint64) {
	if int(m) < len(t.sent) {
		t.sent[m].Add(n)
	}
}

func (t *tally) MessagesReceived(m core.MsgType, n uint64) {
	if int(m) < len(t.received) {
		t.received[m].Add(n)
	}
}

func (t *tally) MessagesDropped(_ string, n uint64) { t.dropped.Add(n) }

func (t *tally) Elections(e election.Result, _ uint64) {
	switch e {
	case election.ElectionStarted:
		t.emit(nodeEvent{Kind: "election started"})
	case election.ElectionRestarted:
		t.emit(nodeEvent{Kind: "election restarted"})
	}
}

func (t *tally) SetLeader(l election.Leadership) {
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
