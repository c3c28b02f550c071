package membership

import (
	"bytes"
	"io"
	"log"
	"math"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election/core"
)

// Garbage and oversized frames sent into a running, unkeyed 3-member
// cluster over loopback (on an unkeyed cluster anyone who reaches the port
// can; see docs/security.md), from a raw UDP socket and from a plain
// memberlist member: each is dropped and counted under its own reason
// (malformed, too_large), and the cluster keeps its coordinator and term
// throughout.
func TestForgedFramesDroppedAndCounted(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, nil)
	n1, n2 := vs[0], vs[1]
	raw := rawMember(t, n1.Addr(), nil)
	to := rawPeer(t, raw, "n2")
	frame := func(m core.Message) []byte {
		b, err := appendFrame(nil, frameHeader{FromBoot: n1.BootID(), ToBoot: n2.BootID()}, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	coordinator := frame(core.Message{Type: core.MsgCoordinator, From: "n1", To: "n2", Coordinator: "n3",
		Term: core.Term(term), Rating: 10})
	reliable := func(b []byte) func() error { return func() error { return raw.SendReliable(to, b) } }
	dropped := func(r DropReason) func() uint64 { return func() uint64 { return n2.Stats().Dropped[r] } }
	runForged(t, vs, term, []forged{
		{"garbage datagram", func() error { return sendUDP(n2.Addr(), bytes.Repeat([]byte{0xa5}, 200)) }, dropped(DropMalformed)},
		{"garbage stream", reliable(bytes.Repeat([]byte{0x5a}, 3000)), dropped(DropMalformed)},
		{"oversized datagram", func() error {
			return sendUDP(n2.Addr(), append(append([]byte{}, coordinator...), make([]byte, 60<<10)...))
		},
			dropped(DropMalformed)}, // 60 KiB: under MaxFrameSize, so only its trailing bytes are wrong
		{"oversized stream", reliable(append(append([]byte{}, coordinator...), make([]byte, MaxFrameSize)...)), dropped(DropTooLarge)},
	})
}

// A well-formed HEARTBEAT and COORDINATOR in member n1's name, with n1's
// boot IDs (so membership delivers them), whose term carries another
// member's tag: the state machine drops each one as
// foreign_tag before it looks at the term, and the cluster keeps its
// coordinator and term.
func TestForgedForeignTagDropped(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, nil)
	n1, n2 := vs[0], vs[1]
	raw := rawMember(t, n1.Addr(), nil)
	to := rawPeer(t, raw, "n2")
	foreign := core.MakeTerm(core.Term(term).Epoch()+1, core.Tag("n2")) // n1 claims a term that names n2
	frame := func(typ core.MsgType) []byte {
		b, err := appendFrame(nil, frameHeader{FromBoot: n1.BootID(), ToBoot: n2.BootID()},
			core.Message{Type: typ, From: "n1", To: "n2", Coordinator: "n1", Term: foreign, Rating: 10})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	foreignTag := func() uint64 { return n2.drops.get(core.DropForeignTag) }
	runForged(t, vs, term, []forged{
		{"foreign-tag heartbeat", func() error { return sendUDP(n2.Addr(), frame(core.MsgHeartbeat)) }, foreignTag},
		{"foreign-tag coordinator", func() error { return raw.SendReliable(to, frame(core.MsgCoordinator)) }, foreignTag},
	})
}

// forged is one forged or broken frame: how to send it, and the counter
// that must rise when it is dropped.
type forged struct {
	name    string
	send    func() error
	counted func() uint64
}

// runForged sends each frame in turn, waits until it is counted, and checks
// that the voters still agree on the coordinator of term; then it watches
// them for a while longer.
func runForged(t *testing.T, vs []*voter, term uint64, frames []forged) {
	t.Helper()
	want, _, _ := vs[0].el.Leader()
	for _, c := range frames {
		before := c.counted()
		if err := c.send(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !waitUntil(waitTimeout, func() bool { return c.counted() > before }) {
			t.Fatalf("%s: not counted", c.name)
		}
		if tm, ok := agreed(vs, want); !ok || tm != term {
			t.Fatalf("after the %s: %s", c.name, describe(vs))
		}
	}
	steady(t, vs, want, term, 500*time.Millisecond)
}

// A HEARTBEAT in the coordinator's own name whose term has the largest
// epoch: honest members never get near it, and taking
// it would make the next election wrap the epoch. The frame is well formed
// and from a live member, so membership delivers it; the state machine
// must drop it and keep the term.
func TestForgedMaxEpochTermDropped(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, nil)
	n2, n3 := vs[1], vs[2]
	b, err := appendFrame(nil, frameHeader{FromBoot: n3.BootID(), ToBoot: n2.BootID()},
		core.Message{Type: core.MsgHeartbeat, From: "n3", To: "n2", Coordinator: "n3", Term: core.MakeTerm(math.MaxUint32, core.Tag("n3"))})
	if err != nil {
		t.Fatal(err)
	}
	badTerm := func() uint64 { return n2.drops.get(core.DropBadTerm) }
	before := badTerm()
	if err := sendUDP(n2.Addr(), b); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(waitTimeout, func() bool { return badTerm() > before }) {
		t.Fatal("the frame was not dropped as bad_term")
	}
	steady(t, vs, "n3", term, 500*time.Millisecond)
}

// sendUDP sends frame to addr as one memberlist user-message datagram
// (message type 8, net.go), from a plain UDP socket.
func sendUDP(addr string, frame []byte) error {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	const userMsg = 8
	_, err = conn.Write(append([]byte{userMsg}, frame...))
	return err
}

// rawMember starts a plain memberlist member (no coordelect metadata: the
// cluster refuses it as a peer, but memberlist carries its messages) with
// key (nil: none) and joins seed.
func rawMember(t *testing.T, seed string, key []byte) *memberlist.Memberlist {
	t.Helper()
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "raw", "127.0.0.1", 0, 0
	mc.SecretKey, mc.Logger = key, log.New(io.Discard, "", 0)
	fastTimings(mc)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	if _, err := ml.Join([]string{seed}); err != nil {
		t.Fatal(err)
	}
	return ml
}

// rawPeer waits until the raw member knows name.
func rawPeer(t *testing.T, ml *memberlist.Memberlist, name string) *memberlist.Node {
	t.Helper()
	var node *memberlist.Node
	waitUntil(waitTimeout, func() bool {
		for _, m := range ml.Members() {
			if m.Name == name {
				node = m
			}
		}
		return node != nil
	})
	if node == nil {
		t.Fatalf("the raw member never saw %s", name)
	}
	return node
}
