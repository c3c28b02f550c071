package electiontest

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// drain returns the events queued on tr without blocking.
func drain(tr *Transport) []election.Event {
	var out []election.Event
	for {
		select {
		case ev, ok := <-tr.Events():
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

func kinds(evs []election.Event) []election.EventKind {
	out := make([]election.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

func msg(from, to string, ph uint32) core.Message {
	return core.Message{Type: core.MsgHeartbeat, From: from, To: to, Phase: ph}
}

func TestJoinAnnouncesMembers(t *testing.T) {
	n := NewNetwork()
	a := n.MustJoin(election.Identity{Name: "a", Rating: 1})
	b := n.MustJoin(election.Identity{Name: "b", Rating: 2, NonVoter: true})
	if evs := drain(a); len(evs) != 1 || evs[0].Kind != election.EventPeerUp || evs[0].Peer != (core.Peer{ID: "b", Rating: 2, NonVoter: true}) {
		t.Errorf("a saw %+v, want b up", evs)
	}
	if evs := drain(b); len(evs) != 1 || evs[0].Peer.ID != "a" {
		t.Errorf("b saw %+v, want a up", evs)
	}
	if _, err := n.Join(election.Identity{Name: "a"}); err == nil {
		t.Error("joining twice under one ID succeeded")
	}
	if err := a.SetRating(7); err != nil {
		t.Fatal(err)
	}
	if evs := drain(b); len(evs) != 1 || evs[0].Kind != election.EventPeerRating || evs[0].Peer.Rating != 7 {
		t.Errorf("b saw %+v, want a's new rating", evs)
	}
}

// TestFaults: partitions, the drop predicate, crashes and unknown peers.
func TestFaults(t *testing.T) {
	n := NewNetwork()
	a, b := n.MustJoin(election.Identity{Name: "a"}), n.MustJoin(election.Identity{Name: "b"})
	drain(a)
	drain(b)

	n.Partition([]string{"a"})
	_ = a.Send(msg("a", "b", 1))
	n.Heal()
	n.SetDrop(func(m core.Message) bool { return m.Phase == 2 })
	_ = a.Send(msg("a", "b", 2))
	_ = a.Send(msg("a", "b", 3))
	if evs := drain(b); len(evs) != 1 || evs[0].Message.Phase != 3 {
		t.Errorf("b got %+v, want only message 3", evs)
	}
	if err := a.Send(msg("a", "z", 0)); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("send to a stranger = %v, want ErrUnknownPeer", err)
	}

	n.Crash("b")
	if err := a.Send(msg("a", "b", 4)); err != nil {
		t.Errorf("send to a crashed peer = %v, want nil (lost silently)", err)
	}
	if _, ok := <-b.Events(); ok {
		t.Error("crashed node's events still open")
	}
	if evs := drain(a); len(evs) != 0 {
		t.Errorf("a was told of the crash: %+v", evs)
	}
	n.AnnounceDown("b")
	if evs := drain(a); len(evs) != 1 || evs[0].Kind != election.EventPeerDown || evs[0].Peer.ID != "b" {
		t.Errorf("a saw %+v, want b down", evs)
	}
	if err := b.Send(msg("b", "a", 5)); !errors.Is(err, ErrClosed) {
		t.Errorf("send from a crashed node = %v, want ErrClosed", err)
	}
	st := n.Stats()
	if st.Sent[core.MsgHeartbeat] != 4 || st.Delivered != 1 || st.Dropped != 3 {
		t.Errorf("stats = %+v, want 4 sent, 1 delivered, 3 dropped", st)
	}
}

// TestLatencyKeepsOrder: with a latency, events arrive after it, in the
// order they were sent, even when the latency changes in between.
func TestLatencyKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork()
		a, b := n.MustJoin(election.Identity{Name: "a"}), n.MustJoin(election.Identity{Name: "b"})
		drain(a)
		drain(b)
		n.SetLatency(10 * time.Millisecond)
		start := time.Now()
		_ = a.Send(msg("a", "b", 1))
		n.SetLatency(time.Millisecond)
		_ = a.Send(msg("a", "b", 2))
		for want := uint32(1); want <= 2; want++ {
			ev := <-b.Events()
			if ev.Message.Phase != want {
				t.Fatalf("got message %d, want %d", ev.Message.Phase, want)
			}
		}
		if took := time.Since(start); took != 10*time.Millisecond {
			t.Errorf("delivered after %v, want 10ms", took)
		}
		_ = a.Send(msg("a", "b", 3))
		n.Close() // pending deliveries are discarded, timers stopped
		if evs := drain(b); len(evs) != 0 {
			t.Errorf("events after Close: %+v", kinds(evs))
		}
	})
}

// TestLeave: Transport.Close tells the others and is idempotent; the ID
// may join again (a restart).
func TestLeave(t *testing.T) {
	n := NewNetwork()
	a, b := n.MustJoin(election.Identity{Name: "a"}), n.MustJoin(election.Identity{Name: "b"})
	drain(a)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if evs := drain(a); len(evs) != 1 || evs[0].Kind != election.EventPeerDown {
		t.Errorf("a saw %+v, want b down", evs)
	}
	if _, err := n.Join(election.Identity{Name: "b"}); err != nil {
		t.Errorf("rejoin: %v", err)
	}
	if got := n.Members(); len(got) != 2 {
		t.Errorf("members %v", got)
	}
}

func TestFullBufferDrops(t *testing.T) {
	n := NewNetwork()
	n.SetBuffer(1)
	a, b := n.MustJoin(election.Identity{Name: "a"}), n.MustJoin(election.Identity{Name: "b"})
	drain(a)
	drain(b)
	for i := range 3 {
		_ = a.Send(msg("a", "b", uint32(i)))
	}
	if st := n.Stats(); st.Delivered != 1 || st.Dropped != 2 {
		t.Errorf("stats %+v, want 1 delivered and 2 dropped", st)
	}
}
