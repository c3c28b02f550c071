package election_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// Bad frames sent into a live cluster, from a plain memberlist member that
// holds the cluster's key (so its packets get through, but it is no
// coordelect member): truncated, wrong version, oversized (its own
// reason, too_large), from an
// unknown sender, addressed to another incarnation, and a well-formed
// COORDINATOR that impersonates n1 with a stale term. Each is dropped and
// counted by reason (the stale term passes membership and the state
// machine ignores it); no node changes coordinator, term or state, and
// every elector keeps running.
//
// (The rings and the core's handling of every stale message are tested in
// election/core; this is the path end to end, over real sockets.)
func TestMemberlistBadFramesDroppedAndCounted(t *testing.T) {
	var recs []*staleCounter // one per elector, in start order
	c := newRealCluster(t, func(cfg *election.Config) {
		recs = append(recs, &staleCounter{})
		cfg.Recorder = recs[len(recs)-1]
	})
	c.key = []byte("0123456789abcdef")
	all := c.startN(3)
	_, term := c.await(all, "n3", 0, 15*time.Second)
	target := c.nodes["n2"]
	before, statusBefore, staleBefore := target.mem.Stats(), target.el.Status(), recs[1].stale.Load()
	raw := startRawMember(t, c.key, c.seeds[0])
	to := rawPeer(t, raw, "n2")

	n1Boot, n2Boot := c.nodes["n1"].mem.BootID(), target.mem.BootID()
	frame := func(h membership.Header, m core.Message) []byte {
		b, err := membership.AppendFrame(nil, h, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	coord := core.Message{Type: core.MsgCoordinator, From: "n1", To: "n2", Coordinator: "n1",
		Term: core.MakeTerm(core.Term(term).Epoch()-1, core.Tag("n1"))}
	good := frame(membership.Header{FromBoot: n1Boot, ToBoot: n2Boot}, coord)
	sends := map[membership.DropReason][][]byte{
		membership.DropMalformed:     {good[:len(good)-3], bytes.Repeat([]byte{0xff}, 64)}, // truncated, not a frame
		membership.DropTooLarge:      {append(append([]byte{}, good...), make([]byte, membership.MaxFrameSize)...)},
		membership.DropVersion:       {append([]byte{good[0], good[1] + 1}, good[2:]...)},
		membership.DropUnknownSender: {frame(membership.Header{FromBoot: 1, ToBoot: n2Boot}, core.Message{Type: core.MsgElection, From: "raw", To: "n2"})},
		membership.DropStale: {frame(membership.Header{FromBoot: n1Boot - 1, ToBoot: n2Boot}, coord), // an earlier n1
			frame(membership.Header{FromBoot: n1Boot, ToBoot: n2Boot + 1}, coord)}, // a later n2
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
	waitCounted(t, target.mem, before, sends)
	waitFor(t, "n2's state machine to drop the stale COORDINATOR", func() bool { return recs[1].stale.Load() > staleBefore })
	c.await(all, "n3", term-1, time.Second)
	if _, tm, _ := target.el.Leader(); tm != term {
		t.Fatalf("n2's term moved from %d to %d", term, tm)
	}
	if st := target.el.Status(); st.State != statusBefore.State || st.Coordinator != statusBefore.Coordinator {
		t.Fatalf("n2 went from %+v to %+v", statusBefore, st)
	}
}

// staleCounter counts the messages an elector dropped for a stale term.
type staleCounter struct {
	election.NopRecorder
	stale atomic.Uint64
}

func (r *staleCounter) MessagesDropped(reason string, n uint64) {
	if reason == core.DropStaleTerm.String() {
		r.stale.Add(n)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %s within 10 s", what)
		}
	}
}

// waitCounted waits until n's drop counters rose by the frames sent for
// each reason.
func waitCounted(t *testing.T, n *membership.Node, before membership.Stats, sends map[membership.DropReason][][]byte) {
	t.Helper()
	counted := func() bool {
		s := n.Stats()
		for r, frames := range sends {
			if s.Dropped[r]-before.Dropped[r] != uint64(len(frames)) {
				return false
			}
		}
		return true
	}
	waitFor(t, fmt.Sprintf("drops by reason (before %v)", before.Dropped), counted)
	if s := n.Stats(); !counted() {
		t.Fatalf("drops by reason: before %v, now %v", before.Dropped, s.Dropped)
	}
}

// startRawMember starts a plain memberlist member (no coordelect metadata)
// with key and joins seed.
func startRawMember(t *testing.T, key []byte, seed string) *memberlist.Memberlist {
	t.Helper()
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "raw", "127.0.0.1", 0, 0
	mc.SecretKey, mc.Logger = key, log.New(io.Discard, "", 0)
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
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		for _, m := range ml.Members() {
			if m.Name == name {
				return m
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("raw member never saw %s", name)
		}
	}
}
