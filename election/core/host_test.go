package core

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A Host validates what its nodes share when it is made, and each node's
// ID and roster when the node is built, naming the field and the value
// as Validate does.
func TestHostValidates(t *testing.T) {
	if _, err := NewHost(Config{QuorumSize: 3, QuorumLease: 5}); err == nil || !strings.Contains(err.Error(), "Config.QuorumLease = 5: must exceed HeartbeatInterval") {
		t.Errorf("NewHost: %v", err)
	}
	h, err := NewHost(Config{Mode: View}) // no ID, no Roster: each node has its own
	if err != nil {
		t.Fatal(err)
	}
	roster := MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}})
	if _, err := h.NewNode("9", roster); err == nil || !strings.Contains(err.Error(), `Config.ID = "9": must be a member of Roster`) {
		t.Errorf("a node outside its roster: %v", err)
	}
	if _, err := h.NewNode("1", nil); err == nil || !strings.Contains(err.Error(), "Config.Roster = nil") {
		t.Errorf("no roster: %v", err)
	}
	if c := h.Config(); c.ID != "" || c.Roster != nil || c.HeartbeatInterval != 5 {
		t.Errorf("Host.Config: ID %q, Roster %v, HeartbeatInterval %d; want none, none and the default 5", c.ID, c.Roster, c.HeartbeatInterval)
	}
}

// The nodes of a Host run as nodes built alone with the same
// configuration (the Host's message buffers change nothing): the same
// messages and statuses, step by step, through an election and the
// heartbeats after it.
func TestHostNodesRunAsNodesOfTheirOwn(t *testing.T) {
	var ps []Peer
	for i := 1; i <= 7; i++ {
		ps = append(ps, Peer{ID: strconv.Itoa(i), Rating: int64(i)})
	}
	roster := MustRoster(ps)
	cfg := Config{Mode: View, QuorumSize: 7}
	h, err := NewHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hosted, alone := map[string]*Node{}, map[string]*Node{}
	for _, p := range ps {
		hosted[p.ID], _ = h.NewNode(p.ID, roster)
		c := cfg
		c.ID, c.Roster = p.ID, roster
		alone[p.ID], _ = NewNode(c)
		if got, want := hosted[p.ID].Config(), alone[p.ID].Config(); got != want {
			t.Fatalf("Config: %+v, want %+v", got, want)
		}
	}
	var qa, qb []Message
	for tick := 0; tick < 200; tick++ {
		for _, p := range ps {
			hosted[p.ID].Tick()
			alone[p.ID].Tick()
		}
		for len(qa) > 0 || tick%3 == 0 {
			ma, mb := qa, qb
			qa, qb = nil, nil
			for i := range ma {
				hosted[ma[i].To].Step(ma[i])
				alone[mb[i].To].Step(mb[i])
			}
			for _, p := range ps {
				ra, rb := hosted[p.ID].Ready(), alone[p.ID].Ready()
				if !sameReady(*ra, *rb) {
					t.Fatalf("tick %d, node %s: the hosted node's Ready\n%+v\nthe other's\n%+v", tick, p.ID, ra, rb)
				}
				for _, m := range ra.Messages {
					qa = append(qa, m.Clone())
				}
				for _, m := range rb.Messages {
					qb = append(qb, m.Clone())
				}
				hosted[p.ID].Release()
				alone[p.ID].Release()
			}
			if len(qa) == 0 {
				break
			}
		}
	}
	if st := hosted["7"].Status(); st.Coordinator != "7" {
		t.Fatalf("no agreement: %+v", st)
	}
}

// A node lets go of a message buffer that a round to many members grew,
// once the Ready holding it is drained (Release, or the next call into
// it), and keeps a small one.
func TestReleaseLetsLargeBuffersGo(t *testing.T) {
	var ps []Peer
	for i := 1; i <= 12; i++ {
		ps = append(ps, Peer{ID: strconv.Itoa(i), Rating: int64(i)})
	}
	n, err := NewNode(Config{ID: "12", Roster: MustRoster(ps), Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	n.Bootstrap("12", MakeTerm(1, 12))
	n.Ready()
	for len(n.Ready().Messages) <= maxIdleMessages {
		n.Tick() // the next heartbeat round: every other member
	}
	rd := n.Ready()
	n.Release()
	if rd.Messages != nil {
		t.Fatalf("after Release the Ready keeps a buffer of %d messages", cap(rd.Messages))
	}
	follower, _ := NewNode(Config{ID: "1", Roster: MustRoster(ps), Mode: View})
	follower.Bootstrap("12", MakeTerm(1, 12))
	follower.Step(Message{Type: MsgPreVote, From: "2", To: "1", Term: MakeTerm(1, 12), Rating: 2, Seq: 1})
	rd = follower.Ready()
	if len(rd.Messages) != 1 {
		t.Fatalf("the follower answered with %d messages, want 1", len(rd.Messages))
	}
	follower.Release()
	if cap(rd.Messages) == 0 {
		t.Fatal("the follower let its one-message buffer go")
	}
}

// sameReady reports whether a and b hand over the same (an empty buffer
// and none are the same).
func sameReady(a, b Ready) bool {
	for _, rd := range []*Ready{&a, &b} {
		if len(rd.Messages) == 0 {
			rd.Messages = nil
		}
		if len(rd.Decisions) == 0 {
			rd.Decisions = nil
		}
	}
	return reflect.DeepEqual(a, b)
}

// A node of a Host gives its Ready, with its small message buffer, back
// to the host once its driver is done with it (Done), and the next node
// of the host that sends takes it: a host of many nodes keeps no Ready
// per node.
func TestHostLendsSmallBuffers(t *testing.T) {
	var ps []Peer
	for i := 1; i <= 3; i++ {
		ps = append(ps, Peer{ID: strconv.Itoa(i), Rating: int64(i)})
	}
	roster := MustRoster(ps)
	h, err := NewHost(Config{Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := h.NewNode("1", roster)
	b, _ := h.NewNode("2", roster)
	answer := func(n *Node) *Message {
		n.Step(Message{Type: MsgPreVote, From: "3", To: n.ID(), Term: MakeTerm(1, 3), Rating: 3, Seq: 1})
		rd := n.Ready()
		if len(rd.Messages) != 1 {
			t.Fatalf("%s answered with %d messages, want 1", n.ID(), len(rd.Messages))
		}
		return &rd.Messages[0]
	}
	first := answer(a)
	a.Release()
	if a.out.rd == nil || len(h.buffers.free) != 0 {
		t.Fatalf("after Release: the node holds no Ready (%v), or the host has %d", a.out.rd == nil, len(h.buffers.free))
	}
	a.Done()
	if a.out.rd != nil || len(h.buffers.free) != 1 {
		t.Fatalf("after Done: the node holds a Ready (%v), the host %d", a.out.rd != nil, len(h.buffers.free))
	}
	if second := answer(b); second != first {
		t.Fatal("the next node to send did not take the host's buffer")
	}
}
