package membership

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

const selfBoot = 100

// newTestDispatcher builds a dispatcher for "self" without memberlist; the
// tests call handle directly, or run it.
func newTestDispatcher(maxMsgs int) *dispatcher {
	c := &counters{}
	log := hclog.NewNullLogger()
	tb := newTable("self", meta{Boot: selfBoot}, time.Minute, log, c)
	out := &sender{table: tb, stats: c, log: log, wg: &sync.WaitGroup{}, links: make(map[string]*outLink)}
	return &dispatcher{
		inbox: newInbox(maxMsgs, c), table: tb, out: out, events: make(chan election.Event, 4),
		stats: c, log: log, selfBoot: selfBoot, hold: time.Second, maxMsgs: maxMsgs,
		links: make(map[string]*inLink),
	}
}

// heldLink returns a test dispatcher and its sender's link to member "b"
// (boot 5, rating 1; named says whether it announces named elections),
// which no goroutine drains: a test reads what is queued on it.
func heldLink(t *testing.T, named bool) (*dispatcher, *outLink) {
	t.Helper()
	d := newTestDispatcher(100)
	d.handle([]inboxItem{{kind: itemJoin, node: nodeInfo{Name: "b", Meta: meta{Rating: 1, Boot: 5}.encode(), Named: named}}}, time.Unix(0, 0))
	s := d.out
	s.queueSize = 100
	l, err := s.link("b")
	if err != nil {
		t.Fatal(err)
	}
	l.running = true // no goroutine sends: the test reads the queue
	return d, l
}

func join(name string, boot uint64) inboxItem {
	return inboxItem{kind: itemJoin, node: info(name, meta{Rating: 1, Boot: boot})}
}

func msgItem(t *testing.T, h frameHeader, m core.Message) inboxItem {
	t.Helper()
	b, err := appendFrame(nil, h, m)
	if err != nil {
		t.Fatal(err)
	}
	return inboxItem{kind: itemMessage, msg: b}
}

// pendingPhases lists the Phase of each pending message.
func pendingPhases(d *dispatcher) []uint32 {
	var out []uint32
	for _, ev := range d.pending {
		if ev.Kind == election.EventMessage {
			out = append(out, ev.Message.Phase)
		}
	}
	return out
}

func TestDispatcherDropsByReason(t *testing.T) {
	d := newTestDispatcher(100)
	now := time.Unix(0, 0)
	m := func(from string, phase uint32) core.Message {
		return core.Message{Type: core.MsgElection, From: from, To: "self", Phase: phase}
	}
	ok := frameHeader{Seq: 1, FromBoot: 7, ToBoot: selfBoot}
	good, _ := appendFrame(nil, ok, m("a", 1))
	badVersion := append([]byte{frameMagic, frameVersion + 1}, good[2:]...)
	d.handle([]inboxItem{
		join("a", 7),
		msgItem(t, ok, m("stranger", 0)), // not a member
		msgItem(t, frameHeader{Seq: 1, FromBoot: 6, ToBoot: selfBoot}, m("a", 0)), // an earlier incarnation of a
		msgItem(t, frameHeader{Seq: 1, FromBoot: 7, ToBoot: 101}, m("a", 0)),      // for a later incarnation of self
		{kind: itemMessage, msg: good[:len(good)-1]},
		{kind: itemMessage, msg: badVersion},
		{kind: itemMessage, msg: append(append([]byte{}, good...), make([]byte, MaxFrameSize)...)},
		{kind: itemMessage, msg: good},
		{kind: itemMessage, msg: good}, // duplicate
	}, now)
	d.expire(now.Add(2 * d.hold)) // held frames whose sender never came are dropped now
	s := d.stats.snapshot()
	want := [NumDropReasons]uint64{DropMalformed: 1, DropVersion: 1, DropUnknownSender: 1, DropStale: 2, DropDuplicate: 1, DropTooLarge: 1}
	if s.Dropped != want || s.Received != 1 {
		t.Fatalf("dropped %v received %d; want %v and 1", s.Dropped, s.Received, want)
	}
	if render(d.pending[:1]) != "up:a/1" || len(pendingPhases(d)) != 1 {
		t.Fatalf("pending: %+v", d.pending)
	}
}

func TestDispatcherOrdersAndResets(t *testing.T) {
	d := newTestDispatcher(100)
	t0 := time.Unix(0, 0)
	m := func(seq uint64, boot uint64) inboxItem {
		return msgItem(t, frameHeader{Seq: seq, FromBoot: boot, ToBoot: selfBoot},
			core.Message{Type: core.MsgElection, From: "a", To: "self", Phase: uint32(seq)})
	}
	hb := msgItem(t, frameHeader{FromBoot: 7, ToBoot: selfBoot}, core.Message{Type: core.MsgHeartbeat, From: "a", To: "self", Phase: 99})
	d.handle([]inboxItem{join("a", 7), m(2, 7), m(4, 7), hb, m(1, 7)}, t0)
	if got := pendingPhases(d); !equalU32(got, 99, 1, 2) {
		t.Fatalf("delivered %v, want heartbeat 99 at once, then 1 2 in order", got)
	}
	d.expire(t0.Add(time.Second)) // 3 never came
	if got := pendingPhases(d); !equalU32(got, 99, 1, 2, 4) || d.stats.gapsSkipped.Load() != 1 {
		t.Fatalf("after expiry %v, skipped %d", got, d.stats.gapsSkipped.Load())
	}
	// a restarts: its links start over (its new incarnation numbers from 1
	// again), and the elector sees only the PeerUp.
	d.pending = nil
	d.handle([]inboxItem{join("a", 8), m(1, 8)}, t0.Add(2*time.Second))
	if got := render(d.pending[:1]); got != "up:a/1" || !equalU32(pendingPhases(d), 1) {
		t.Fatalf("after restart: %q, messages %v", got, pendingPhases(d))
	}
}

// TestDispatcherFlushesBeforeDown: messages held back for order are
// delivered before their sender's PeerDown, never after.
func TestDispatcherFlushesBeforeDown(t *testing.T) {
	d := newTestDispatcher(100)
	m := msgItem(t, frameHeader{Seq: 3, FromBoot: 7, ToBoot: selfBoot},
		core.Message{Type: core.MsgAck, From: "a", To: "self", Phase: 3})
	d.handle([]inboxItem{join("a", 7), m, {kind: itemLeave, node: nodeInfo{Name: "a"}}}, time.Unix(0, 0))
	if len(d.pending) != 3 || d.pending[1].Message.Phase != 3 || render(d.pending) != "up:a/1 down:a" {
		t.Fatalf("pending %+v", d.pending)
	}
	if d.stats.gapsSkipped.Load() != 2 {
		t.Fatalf("gapsSkipped = %d, want 2", d.stats.gapsSkipped.Load())
	}
}

func equalU32(got []uint32, want ...uint32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestDispatcherBoundsMessagesNotMembership(t *testing.T) {
	d := newTestDispatcher(2)
	items := []inboxItem{join("a", 7)}
	for seq := uint64(1); seq <= 4; seq++ {
		items = append(items, msgItem(t, frameHeader{Seq: seq, FromBoot: 7, ToBoot: selfBoot},
			core.Message{Type: core.MsgAck, From: "a", To: "self"}))
	}
	items = append(items, inboxItem{kind: itemLeave, node: nodeInfo{Name: "a"}})
	d.handle(items, time.Unix(0, 0))
	if got := render(d.pending); got != "up:a/1 down:a" || len(d.pending) != 4 {
		t.Fatalf("pending %q (%d events)", got, len(d.pending))
	}
	if n := d.stats.dropped[DropQueueFull].Load(); n != 2 {
		t.Fatalf("DropQueueFull = %d, want 2", n)
	}
}

func TestInboxNeverDropsMembership(t *testing.T) {
	c := &counters{}
	q := newInbox(1, c)
	q.push(inboxItem{kind: itemMessage})
	q.push(inboxItem{kind: itemMessage})
	q.push(inboxItem{kind: itemJoin})
	if got := q.take(nil); len(got) != 2 || got[1].kind != itemJoin || c.dropped[DropQueueFull].Load() != 1 {
		t.Fatalf("took %d items, drops %d", len(got), c.dropped[DropQueueFull].Load())
	}
	q.push(inboxItem{kind: itemMessage}) // room again after take
	q.close()
	q.push(inboxItem{kind: itemJoin})
	if got := q.take(nil); len(got) != 0 {
		t.Fatalf("items after close: %d", len(got))
	}
}

// TestDispatcherRun drives the goroutine: events flow in order, a gap is
// skipped by the timer, and stopping closes Events.
func TestDispatcherRun(t *testing.T) {
	checkLeaks(t)
	d := newTestDispatcher(100)
	d.hold = 20 * time.Millisecond
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); d.run(stop, nil) }()
	d.inbox.push(join("a", 7))
	for _, seq := range []uint64{3, 1} {
		d.inbox.push(msgItem(t, frameHeader{Seq: seq, FromBoot: 7, ToBoot: selfBoot},
			core.Message{Type: core.MsgAck, From: "a", To: "self", Phase: uint32(seq)}))
	}
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-d.events:
			got = append(got, render([]election.Event{ev})+phaseOf(ev))
		case <-time.After(waitTimeout):
			t.Fatalf("events so far: %v", got)
		}
	}
	if want := []string{"up:a/1", "#1", "#3"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("events %v, want %v", got, want)
	}
	close(stop)
	<-done
	if _, open := <-d.events; open {
		t.Fatal("Events not closed")
	}
}

func phaseOf(ev election.Event) string {
	if ev.Kind != election.EventMessage {
		return ""
	}
	return fmt.Sprintf("#%d", ev.Message.Phase)
}

// A member's first message can overtake its join: it is held, not
// dropped, and delivered right after the member's PeerUp, so the link's
// next message finds no gap to wait for.
func TestDispatcherHoldsFramesFromSendersNotYetAdmitted(t *testing.T) {
	d := newTestDispatcher(100)
	now := time.Unix(0, 0)
	m := func(seq uint64) inboxItem {
		return msgItem(t, frameHeader{Seq: seq, FromBoot: 7, ToBoot: selfBoot},
			core.Message{Type: core.MsgElection, From: "a", To: "self", Phase: uint32(seq)})
	}
	d.handle([]inboxItem{m(1)}, now)
	if len(d.pending) != 0 {
		t.Fatalf("delivered before the sender was admitted: %+v", d.pending)
	}
	d.handle([]inboxItem{join("a", 7), m(2)}, now.Add(time.Millisecond))
	if got := pendingPhases(d); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("phases %v, want [1 2] delivered at once", got)
	}
	if render(d.pending[:1]) != "up:a/1" {
		t.Fatalf("the PeerUp must come first: %+v", d.pending)
	}
	if s := d.stats.snapshot(); s.Dropped != ([NumDropReasons]uint64{}) {
		t.Fatalf("drops: %v", s.Dropped)
	}
}

// The limbo is bounded: a flood of frames claiming unknown names is
// dropped, not kept.
func TestDispatcherLimboIsBounded(t *testing.T) {
	d := newTestDispatcher(10_000)
	now := time.Unix(0, 0)
	var items []inboxItem
	for i := 0; i < 2*limboTotal; i++ {
		items = append(items, msgItem(t, frameHeader{Seq: 1, FromBoot: 7, ToBoot: selfBoot},
			core.Message{Type: core.MsgElection, From: fmt.Sprintf("x%d", i), To: "self"}))
	}
	d.handle(items, now)
	if d.limbo.total != limboTotal {
		t.Fatalf("limbo holds %d frames, want the cap %d", d.limbo.total, limboTotal)
	}
	if got := d.stats.snapshot().Dropped[DropUnknownSender]; got != limboTotal {
		t.Fatalf("dropped %d at once, want %d", got, limboTotal)
	}
	d.expire(now.Add(2 * d.hold))
	if d.limbo.total != 0 || d.stats.snapshot().Dropped[DropUnknownSender] != 2*limboTotal {
		t.Fatalf("after expiry: limbo %d, dropped %d", d.limbo.total, d.stats.snapshot().Dropped[DropUnknownSender])
	}
}

// Boot IDs order incarnations: a peer that restarted is heard before its new
// metadata arrives, and a peer that has not heard of our restart is heard
// too, its link starting at the first number that reaches us.
func TestDispatcherTakesRestartsNotYetGossiped(t *testing.T) {
	d := newTestDispatcher(100)
	now := time.Unix(0, 0)
	m := func(h frameHeader) inboxItem {
		return msgItem(t, h, core.Message{Type: core.MsgElection, From: "a", To: "self", Phase: uint32(h.Seq)})
	}
	d.handle([]inboxItem{
		join("a", 7),
		m(frameHeader{Seq: 1, FromBoot: 9, ToBoot: selfBoot}), // a restarted (boot 9 > 7)
		m(frameHeader{Seq: 2, FromBoot: 9, ToBoot: selfBoot}),
		m(frameHeader{Seq: 41, FromBoot: 9, ToBoot: 50}), // from a link numbered before our restart
		m(frameHeader{Seq: 42, FromBoot: 9, ToBoot: 50}),
		m(frameHeader{Seq: 3, FromBoot: 6, ToBoot: selfBoot}), // an earlier life of a: stale
	}, now)
	if got := pendingPhases(d); len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 41 || got[3] != 42 {
		t.Fatalf("delivered %v, want [1 2 41 42] at once", got)
	}
	if s := d.stats.snapshot(); s.Dropped[DropStale] != 1 {
		t.Fatalf("drops %v, want the one stale frame", s.Dropped)
	}
}

// TestInboxLetsBurstsGo: after a burst (a push-pull reports every member
// at once) the inbox and the dispatcher do not keep its arrays for reuse;
// a settled cluster's few items at a time reuse one.
func TestInboxLetsBurstsGo(t *testing.T) {
	q := newInbox(10, &counters{})
	for range 100 {
		q.push(inboxItem{kind: itemJoin})
	}
	burst := q.take(nil)
	q.push(inboxItem{kind: itemJoin})
	small := q.take(burst)
	if len(small) != 1 || cap(small) > keptItems {
		t.Fatalf("after the burst: %d items, capacity %d (at most %d kept)", len(small), cap(small), keptItems)
	}
	q.push(inboxItem{kind: itemJoin})
	if got := q.take(small); len(got) != 1 || &got[:1][0] == &small[:1][0] {
		t.Fatalf("took %d items; a small array is reused by the other side", len(got))
	}
	q.push(inboxItem{kind: itemJoin})
	if got := q.take(nil); len(got) != 1 || &got[:1][0] != &small[:1][0] {
		t.Fatal("the small array handed back was not reused")
	}
}
