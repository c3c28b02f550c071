package membership

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// Bad frames sent into a live keyed cluster, from a plain memberlist
// member that holds the cluster's key (so its packets get through, but it
// is no coordelect member): truncated, wrong version, oversized (its own
// reason, too_large), from an unknown sender, addressed to another
// incarnation, and a well-formed COORDINATOR that impersonates n1 with a
// stale term. Each is dropped and counted by reason (the stale term passes
// membership and the state machine drops it); no node changes
// coordinator, term or state, and every elector keeps running.
//
// (The rings and the core's handling of every stale message are tested in
// election/core; this is the path end to end, over real sockets.)
func TestBadFramesDroppedAndCounted(t *testing.T) {
	checkLeaks(t)
	key := []byte("0123456789abcdef")
	vs, term := voters(t, 3, func(c *Config) { c.SecretKey = key })
	n1, target := vs[0], vs[1]
	before, statusBefore := target.Stats(), target.el.Status()
	staleTerm := func() uint64 { return target.drops.get(core.DropStaleTerm) }
	staleBefore := staleTerm()
	raw := rawMember(t, n1.Addr(), key)
	to := rawPeer(t, raw, "n2")

	n1Boot, n2Boot := n1.BootID(), target.BootID()
	frame := func(h frameHeader, m core.Message) []byte {
		b, err := appendFrame(nil, h, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	coord := core.Message{Type: core.MsgCoordinator, From: "n1", To: "n2", Coordinator: "n1",
		Term: core.MakeTerm(core.Term(term).Epoch()-1, core.Tag("n1"))}
	good := frame(frameHeader{FromBoot: n1Boot, ToBoot: n2Boot}, coord)
	sends := map[DropReason][][]byte{
		DropMalformed:     {good[:len(good)-3], bytes.Repeat([]byte{0xff}, 64)}, // truncated, not a frame
		DropTooLarge:      {append(append([]byte{}, good...), make([]byte, MaxFrameSize)...)},
		DropVersion:       {append([]byte{good[0], good[1] + 1}, good[2:]...)},
		DropUnknownSender: {frame(frameHeader{FromBoot: 1, ToBoot: n2Boot}, core.Message{Type: core.MsgElection, From: "raw", To: "n2"})},
		DropStale: {frame(frameHeader{FromBoot: n1Boot - 1, ToBoot: n2Boot}, coord), // an earlier n1
			frame(frameHeader{FromBoot: n1Boot, ToBoot: n2Boot + 1}, coord)}, // a later n2
	}
	for _, frames := range sends {
		for _, b := range frames {
			if err := raw.SendReliable(to, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := raw.SendReliable(to, good); err != nil { // stale term: passes membership
		t.Fatal(err)
	}
	counted := func() bool {
		s := target.Stats()
		for r, frames := range sends {
			if s.Dropped[r]-before.Dropped[r] != uint64(len(frames)) {
				return false
			}
		}
		return true
	}
	if !waitUntil(waitTimeout, counted) || !counted() {
		t.Fatalf("drops by reason: before %v, now %v; sent %s", before.Dropped, target.Stats().Dropped, sentByReason(sends))
	}
	if !waitUntil(waitTimeout, func() bool { return staleTerm() > staleBefore }) {
		t.Fatal("n2's state machine did not drop the stale COORDINATOR")
	}
	steady(t, vs, "n3", term, 500*time.Millisecond)
	if st := target.el.Status(); st.State != statusBefore.State || st.Coordinator != statusBefore.Coordinator {
		t.Fatalf("n2 went from %+v to %+v", statusBefore, st)
	}
}

// sentByReason is how many frames were sent for each reason.
func sentByReason(sends map[DropReason][][]byte) string {
	out := ""
	for r, frames := range sends {
		out += fmt.Sprintf("%v:%d ", r, len(frames))
	}
	return out
}

// Without the key, a forged plaintext COORDINATOR sent straight to a
// member's UDP port never reaches membership: memberlist drops the packet
// before decrypting anything, so no coordelect counter moves and the
// cluster keeps its coordinator and term.
func TestPlaintextFrameIgnored(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 2, func(c *Config) { c.SecretKey = []byte("0123456789abcdef") })
	n1, n2 := vs[0], vs[1]
	before := n1.Stats()
	b, err := appendFrame(nil, frameHeader{FromBoot: n2.BootID(), ToBoot: n1.BootID()},
		core.Message{Type: core.MsgCoordinator, From: "n2", To: "n1", Coordinator: "n2", Term: core.MakeTerm(core.Term(term).Epoch()+5, core.Tag("n2"))})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := sendUDP(n1.Addr(), b); err != nil {
			t.Fatal(err)
		}
	}
	// Let heartbeats flow for a while: the forged term must not appear.
	steady(t, vs, "n2", term, time.Second)
	if after := n1.Stats(); after.Dropped != before.Dropped {
		t.Fatalf("membership saw the forged packets: drops %v -> %v", before.Dropped, after.Dropped)
	}
}
