package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// testNet is a tiny deterministic network for the ring algorithms: one
// queue delivered in order (so every link is FIFO), messages to crashed
// nodes lost but counted as sent, as the simulator counts them. With rng
// set it delivers a random queued message instead, keeping per-link order
// if fifo is set.
type testNet struct {
	tb     testing.TB
	roster *Roster
	ids    []string
	nodes  map[string]*Node
	down   map[string]bool
	queue  []Message
	head   int
	sent   [NumMsgTypes]int
	// counts keeps what each node counted in the Readies taken so far
	// (since its last restart).
	counts map[string]*Counters
	// observe, when set, sees every message a node sends.
	observe func(Message)
	rng     *rand.Rand
	fifo    bool
	// copies, when set, says how many copies of a message the network
	// delivers: 0 loses it, 2 duplicates it.
	copies func(Message) int
}

// testCfg is the tests' node configuration: no heartbeat failure detector
// (only Detect or the view notices a failure, as in the message-count
// experiments).
func testCfg(alg Algorithm, mode Mode) Config {
	return Config{Algorithm: alg, Mode: mode, HeartbeatMisses: 1 << 20}
}

func newTestNet(tb testing.TB, cfg Config, members []Peer) *testNet {
	tb.Helper()
	r, err := NewRoster(members)
	if err != nil {
		tb.Fatal(err)
	}
	w := &testNet{tb: tb, roster: r, nodes: make(map[string]*Node, len(members)), down: map[string]bool{},
		counts: make(map[string]*Counters, len(members))}
	for _, p := range members {
		c := cfg
		c.ID, c.Roster = p.ID, r
		n, err := NewNode(c)
		if err != nil {
			tb.Fatal(err)
		}
		w.ids = append(w.ids, p.ID)
		w.nodes[p.ID] = n
		w.counts[p.ID] = &Counters{}
	}
	return w
}

// members returns n peers "1".."n" in ring order; rating(i) rates the i-th.
func members(n int, rating func(i int) int64) []Peer {
	out := make([]Peer, n)
	for i := range out {
		out[i] = Peer{ID: strconv.Itoa(i + 1), Rating: rating(i)}
	}
	return out
}

func (w *testNet) flush(id string) {
	rd := w.nodes[id].Ready()
	w.counts[id].Add(&rd.Counters)
	for _, m := range rd.Messages {
		w.sent[m.Type]++
		if w.observe != nil {
			w.observe(m)
		}
		k := 1
		if w.copies != nil {
			k = w.copies(m)
		}
		for c := 0; c < k; c++ {
			if c > 0 {
				m = m.Clone() // a duplicate must not share the list
			}
			w.queue = append(w.queue, m)
		}
	}
}

// maxDeliveries bounds one deliver call: a message storm (messages that
// never stop) fails the test instead of eating the machine's memory.
const maxDeliveries = 1 << 22

// deliver runs the network until no message is queued.
func (w *testNet) deliver() {
	for k := 0; w.head < len(w.queue); k++ {
		if k == maxDeliveries {
			w.tb.Fatalf("message storm: %d deliveries and %d still queued\n%s", k, len(w.queue)-w.head, w.dump())
		}
		if w.head > 1<<16 && w.head > len(w.queue)/2 {
			w.queue = w.queue[:copy(w.queue, w.queue[w.head:])]
			w.head = 0
		}
		m := w.pop()
		if !w.down[m.To] {
			w.nodes[m.To].Step(m)
			w.flush(m.To)
		}
	}
	w.queue, w.head = w.queue[:0], 0
}

// deliverUntil delivers in order until the next queued message satisfies
// stop (it stays queued) or nothing is left.
func (w *testNet) deliverUntil(stop func(Message) bool) {
	for w.head < len(w.queue) && !stop(w.queue[w.head]) {
		m := w.pop()
		if !w.down[m.To] {
			w.nodes[m.To].Step(m)
			w.flush(m.To)
		}
	}
}

func (w *testNet) pop() Message {
	if w.rng == nil {
		m := w.queue[w.head]
		w.queue[w.head] = Message{}
		w.head++
		return m
	}
	i := w.head + w.rng.IntN(len(w.queue)-w.head)
	if w.fifo {
		i = w.firstOnLink(i)
	}
	m := w.queue[i]
	copy(w.queue[w.head+1:i+1], w.queue[w.head:i])
	w.head++
	return m
}

// firstOnLink returns the oldest queued message on the link of queue[i].
func (w *testNet) firstOnLink(i int) int {
	for j := w.head; j < i; j++ {
		if w.queue[j].From == w.queue[i].From && w.queue[j].To == w.queue[i].To {
			return j
		}
	}
	return i
}

// tick advances every running node by one tick, then delivers.
func (w *testNet) tick() {
	for _, id := range w.ids {
		if !w.down[id] {
			w.nodes[id].Tick()
			w.flush(id)
		}
	}
	w.deliver()
}

func (w *testNet) detect(ids ...string) {
	for _, id := range ids {
		w.nodes[id].Detect()
		w.flush(id)
	}
}

// crash stops ids; in View mode every other node's view learns it.
func (w *testNet) crash(ids ...string) {
	for _, id := range ids {
		w.down[id] = true
	}
	for _, id := range ids {
		for _, o := range w.ids {
			if !w.down[o] && w.nodes[o].cfg.Mode == View {
				w.nodes[o].PeerDown(id)
				w.flush(o)
			}
		}
	}
}

// config is the configuration node id was built with (its Config, with
// the roster the net started with).
func (w *testNet) config(id string) Config {
	c := w.nodes[id].Config()
	c.Roster = w.roster
	return c
}

// restart brings a crashed node back with no state; in View mode it learns
// who is down (as a memberlist join would tell it) and the others that it
// is up.
func (w *testNet) restart(id string) {
	n, err := NewNode(w.config(id))
	if err != nil {
		w.tb.Fatal(err)
	}
	w.nodes[id], w.down[id], w.counts[id] = n, false, &Counters{}
	if n.cfg.Mode != View {
		return
	}
	for _, o := range w.ids {
		if w.down[o] {
			n.PeerDown(o)
		}
	}
	p, _ := w.roster.Get(id)
	for _, o := range w.ids {
		if o != id && !w.down[o] {
			w.nodes[o].PeerUp(p)
			w.flush(o)
		}
	}
}

// bootstrap settles every node under coordinator in term 1.
func (w *testNet) bootstrap(coordinator string) {
	for _, id := range w.ids {
		w.nodes[id].Bootstrap(coordinator, MakeTerm(1, Tag(coordinator)))
		w.flush(id)
	}
	w.deliver()
	w.sent = [NumMsgTypes]int{}
}

// agreed reports the coordinator every running node follows, in one term,
// with no election running; ok is false otherwise.
func (w *testNet) agreed() (c string, t Term, ok bool) { return w.agreedExcept("") }

// settle ticks until the running nodes agree; it fails the test after
// maxTicks.
func (w *testNet) settle(maxTicks int) (string, Term) {
	w.tb.Helper()
	w.deliver()
	for i := 0; ; i++ {
		if c, t, ok := w.agreed(); ok {
			return c, t
		}
		if i == maxTicks {
			w.tb.Fatalf("no agreement after %d ticks:\n%s", maxTicks, w.dump())
		}
		w.tick()
	}
}

func (w *testNet) dump() string {
	out := ""
	for _, id := range w.ids {
		s := w.nodes[id].Status()
		out += fmt.Sprintf("  %s down=%v state=%s coordinator=%q term=%s electing=%v\n",
			id, w.down[id], s.State, s.Coordinator, s.Term, w.nodes[id].Electing())
	}
	return out
}

// highestLive is the highest-ranked voter that is up, other than except.
func (w *testNet) highestLive(except ...string) string {
	for k := w.roster.Len() - 1; k >= 0; k-- {
		if p := w.roster.ByRank(k); !p.NonVoter && !w.down[p.ID] && !slices.Contains(except, p.ID) {
			return p.ID
		}
	}
	return ""
}

// total returns what node id has counted since it last started: the
// Readies taken and what the next one holds.
func (w *testNet) total(id string) Counters {
	c := *w.counts[id]
	n := w.nodes[id]
	if !n.out.handed && n.out.rd != nil {
		c.Add(&n.out.rd.Counters)
	}
	c.Received[MsgHeartbeat] += uint64(n.out.heartbeats)
	return c
}

func (w *testNet) counter(f func(*Counters) uint64) uint64 {
	var sum uint64
	for _, id := range w.ids {
		c := w.total(id)
		sum += f(&c)
	}
	return sum
}
