package core

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// twinNet drives two copies of one cluster with the same inputs: in copy
// a every idle stretch is ticked tick by tick, in copy b it is skipped
// (Skip) up to just below NextDeadline. The ticks in a must change nothing
// but counters (no message, no status change: the deadline was not late),
// and after each stretch the two copies of the node must be equal field by
// field (Skip counted exactly what the ticks did).
type twinNet struct {
	t      *testing.T
	rng    *rand.Rand
	cfg    Config
	roster *Roster
	ids    []string
	a, b   []*Node
	up     []bool
	qa, qb []Message // in flight, the same in both copies
	skips  int       // ticks skipped in b
	// timerSkips: those skipped up to the next timer past the health
	// score's countdown (idleToTimer).
	timerSkips int
	step       int
}

func newTwinNet(t *testing.T, seed uint64) *twinNet {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 3 + rng.IntN(3)
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: strconv.Itoa(i + 1), Rating: int64(rng.IntN(4))}
	}
	if rng.IntN(4) == 0 {
		ps[rng.IntN(n)].NonVoter = true
	}
	cfg := Config{
		Algorithm:         []Algorithm{Bully, Ring, Peterson}[rng.IntN(3)],
		Mode:              []Mode{Textbook, View}[rng.IntN(2)],
		HeartbeatMisses:   2 + rng.IntN(3),
		HeartbeatInterval: 2 + rng.IntN(4),
		StopTimeout:       rng.IntN(2) * 3,
		StartupDelay:      rng.IntN(6),
	}
	if cfg.Mode == View && rng.IntN(2) == 0 {
		cfg.QuorumSize = n
	}
	if rng.IntN(3) == 0 { // the start-up hold (expect.go)
		cfg.ExpectVoters, cfg.ExpectWindow = n, 5+rng.IntN(40)
	}
	w := &twinNet{t: t, rng: rng, cfg: cfg, roster: MustRoster(ps), a: make([]*Node, n), b: make([]*Node, n), up: make([]bool, n)}
	for i, p := range ps {
		w.ids = append(w.ids, p.ID)
		w.boot(i)
	}
	return w
}

func (w *twinNet) boot(i int) {
	c := w.cfg
	c.ID, c.Roster = w.ids[i], w.roster
	var err error
	if w.a[i], err = NewNode(c); err != nil {
		w.t.Fatal(err)
	}
	w.b[i], _ = NewNode(c)
	w.up[i] = true
}

func (w *twinNet) index(id string) int {
	for i, x := range w.ids {
		if x == id {
			return i
		}
	}
	return -1
}

// both runs fn on the two copies of node i and compares what they sent.
func (w *twinNet) both(i int, what string, fn func(*Node)) {
	fn(w.a[i])
	fn(w.b[i])
	if n := w.a[i]; n.statusChanged() && !n.out.statusDirty {
		// Ready builds the status only when statusDirty says a field of
		// it was written: a write that does not say so is lost.
		w.t.Fatalf("step %d, node %s, %s: the status changed from %+v to %+v unflagged", w.step, w.ids[i], what, Status{ID: n.ID(), State: n.out.state, Coordinator: n.out.coordinator, Term: n.out.term, Rating: n.out.rating}, n.Status())
	}
	ma, mb := w.a[i].Ready(), w.b[i].Ready()
	if !reflect.DeepEqual(ma, mb) {
		w.t.Fatalf("step %d, node %s, %s: the copies sent\n%v\nand\n%v", w.step, w.ids[i], what, ma, mb)
	}
	for k := range ma.Messages {
		w.qa = append(w.qa, ma.Messages[k].Clone())
		w.qb = append(w.qb, mb.Messages[k].Clone())
	}
}

// idle runs a stretch of k ticks of node i that reaches no deadline.
func (w *twinNet) idle(i int) {
	a, b := w.a[i], w.b[i]
	d := b.NextDeadline() - b.Now()
	if a.NextDeadline() != b.NextDeadline() || d < 1 {
		w.t.Fatalf("step %d, node %s: deadlines %d and %d at tick %d", w.step, w.ids[i], a.NextDeadline(), b.NextDeadline(), b.Now())
	}
	if tm := b.NextTimer(); tm <= b.Now() || b.det.health == 0 && tm != b.NextDeadline() {
		w.t.Fatalf("step %d, node %s: next timer %d, deadline %d, health %d at tick %d", w.step, w.ids[i], tm, b.NextDeadline(), b.det.health, b.Now())
	}
	if d == 1 {
		return
	}
	if b.det.health > 0 && w.rng.IntN(2) == 0 {
		w.idleToTimer(i)
		return
	}
	k := 1 + w.rng.IntN(min(d-1, 200))
	before := a.Status()
	for j := 0; j < k; j++ {
		a.Tick()
		if a.HasReady() || a.Status() != before {
			w.t.Fatalf("step %d, node %s (%v %v): tick %d of %d before the deadline %d (from tick %d) sent %v, status %+v -> %+v",
				w.step, w.ids[i], w.cfg.Algorithm, w.cfg.Mode, j+1, k, b.NextDeadline(), b.Now(), a.queued(), before, a.Status())
		}
	}
	b.Skip(k)
	w.skips += k
	if got, want := b.NextDeadline(), b.now+b.ticksToDeadline(); got != want { // kept, and still right
		w.t.Fatalf("step %d, node %s (%v %v): after Skip(%d) the kept deadline is %d, the deadline %d", w.step, w.ids[i], w.cfg.Algorithm, w.cfg.Mode, k, got, want)
	}
	if diff := deepDiff(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "Node", map[[2]uintptr]bool{}); diff != "" {
		w.t.Fatalf("step %d, node %s (%v %v): %d ticks and Skip(%d) differ: %s", w.step, w.ids[i], w.cfg.Algorithm, w.cfg.Mode, k, k, diff)
	}
}

// idleToTimer runs node i up to just below its next timer (NextTimer) while
// its health score is above 0: past the score's own countdowns, which may
// lower the score but must send nothing and change nothing else (the
// runtime's loop does not watch every tick before a timer that is further
// off than a sample period, election/wake.go). Copy b skips the ticks.
func (w *twinNet) idleToTimer(i int) {
	a, b := w.a[i], w.b[i]
	k := min(b.NextTimer()-b.Now()-1, 200)
	if k < 1 {
		return
	}
	before := a.Status()
	for j := 0; j < k; j++ {
		a.Tick()
		if a.HasReady() || a.Status() != before {
			w.t.Fatalf("step %d, node %s (%v %v): tick %d of %d before the next timer %d (from tick %d, health %d) sent %v, status %+v -> %+v",
				w.step, w.ids[i], w.cfg.Algorithm, w.cfg.Mode, j+1, k, b.NextTimer(), b.Now(), b.det.health, a.queued(), before, a.Status())
		}
	}
	b.Skip(k)
	w.skips += k
	w.timerSkips += k
	if diff := deepDiff(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "Node", map[[2]uintptr]bool{}); diff != "" {
		w.t.Fatalf("step %d, node %s (%v %v): %d ticks and Skip(%d) differ: %s", w.step, w.ids[i], w.cfg.Algorithm, w.cfg.Mode, k, k, diff)
	}
}

// run plays a random schedule: ticks (a stretch to just below the
// deadline, one tick, or a late step of several), deliveries in random order with loss and
// duplication, crashes and restarts, detections, view changes,
// resignations, transfers, rating changes and completed hand-offs.
func (w *twinNet) run(steps int) {
	n := len(w.ids)
	for w.step = 0; w.step < steps; w.step++ {
		i := w.rng.IntN(n)
		switch r := w.rng.IntN(100); {
		case r < 30:
			if w.up[i] {
				w.idle(i)
			}
		case r < 50:
			if !w.up[i] {
				break
			}
			if w.rng.IntN(8) == 0 {
				// A driver whose loop ran late (the runtime's advance).
				k := 2 + w.rng.IntN(30)
				w.both(i, "late", func(x *Node) { x.Advance(k) })
			} else {
				w.both(i, "tick", (*Node).Tick)
			}
		case r < 85:
			w.deliver()
		case r < 87:
			w.up[i] = false // crash
		case r < 89:
			if !w.up[i] {
				w.boot(i)
			}
		case r < 91:
			if w.up[i] {
				w.both(i, "detect", (*Node).Detect)
			}
		case r < 94:
			j := w.ids[w.rng.IntN(n)]
			if w.up[i] {
				if w.rng.IntN(2) == 0 {
					w.both(i, "down "+j, func(x *Node) { x.PeerDown(j) })
				} else {
					p, _ := w.roster.Get(j)
					w.both(i, "up "+j, func(x *Node) { x.PeerUp(p) })
				}
			}
		case r < 96:
			if w.up[i] {
				j := w.ids[w.rng.IntN(n)]
				resign := w.rng.IntN(2) == 0
				w.both(i, "resign/transfer", func(x *Node) {
					if resign {
						x.Resign()
					} else {
						x.TransferTo(j)
					}
				})
			}
		case r < 98:
			if w.up[i] {
				rt := int64(w.rng.IntN(4))
				j := w.ids[w.rng.IntN(n)]
				w.both(i, "rating", func(x *Node) {
					if j == x.ID() {
						x.SetRating(rt)
					} else {
						x.PeerRating(j, rt)
					}
				})
			}
		default:
			if w.up[i] {
				w.both(i, "complete hand-off", (*Node).CompleteHandoff)
			}
		}
	}
}

func (w *twinNet) deliver() {
	if len(w.qa) == 0 {
		return
	}
	k := w.rng.IntN(len(w.qa))
	if w.rng.IntN(4) > 0 {
		k = 0 // mostly in order
	}
	ma, mb := w.qa[k], w.qb[k]
	switch r := w.rng.IntN(20); {
	case r == 0: // lost
	case r == 1: // duplicated: deliver a copy, keep the message
		w.stepBoth(ma.Clone(), mb.Clone())
		return
	default:
		w.stepBoth(ma, mb)
	}
	w.qa = append(w.qa[:k], w.qa[k+1:]...)
	w.qb = append(w.qb[:k], w.qb[k+1:]...)
}

func (w *twinNet) stepBoth(ma, mb Message) {
	i := w.index(ma.To)
	if i < 0 || !w.up[i] {
		return
	}
	w.a[i].Step(ma)
	w.b[i].Step(mb)
	w.both(i, "step "+ma.Type.String()+" from "+ma.From, func(*Node) {})
}

// TestNextDeadlineAgainstTicks: for random schedules of every algorithm
// and mode, with and without the quorum guard and the start-up hold, late
// steps (Advance by more than a tick) among the inputs, the ticks before
// NextDeadline do nothing but count, and Skip counts exactly as they do.
func TestNextDeadlineAgainstTicks(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	skipped := map[string]int{}
	timerSkips := 0
	for seed := range seeds {
		w := newTwinNet(t, uint64(seed))
		w.run(3000)
		skipped[fmt.Sprintf("%v/%v/q%d", w.cfg.Algorithm, w.cfg.Mode, w.cfg.QuorumSize)] += w.skips
		timerSkips += w.timerSkips
	}
	if timerSkips == 0 {
		t.Error("no stretch ran past a health countdown to the next timer: NextTimer was not checked")
	}
	t.Logf("ticks skipped past a health countdown: %d", timerSkips)
	for k, v := range skipped {
		if v == 0 {
			t.Errorf("%s: no tick was ever skipped: the test checked nothing", k)
		}
	}
	t.Logf("ticks skipped: %v", skipped)
}

// TestSkipPastDeadlineTicks: Skip beyond the deadline is k Ticks, messages
// included.
func TestSkipPastDeadlineTicks(t *testing.T) {
	mk := func() *Node {
		n, err := NewNode(Config{ID: "1", Roster: MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}}), Mode: View})
		if err != nil {
			t.Fatal(err)
		}
		n.Bootstrap("1", MakeTerm(1, Tag("1")))
		n.Ready()
		return n
	}
	a, b := mk(), mk()
	if d := a.NextDeadline() - a.Now(); d != a.cfg.HeartbeatInterval {
		t.Fatalf("a coordinator's deadline is %d ticks away, want its heartbeat interval %d", d, a.cfg.HeartbeatInterval)
	}
	k := 3*a.cfg.HeartbeatInterval + 1
	var ticked []Message
	for range k {
		a.Tick()
		ticked = append(ticked, a.Ready().Messages...)
	}
	b.Skip(k)
	if skipped := b.Ready().Messages; !reflect.DeepEqual(ticked, skipped) || len(ticked) != 3 {
		t.Fatalf("%d ticks sent %v; Skip(%d) sent %v", k, ticked, k, skipped)
	}
	a.Ready() // the hand-overs were split differently: end both on an empty one
	b.Ready()
	if diff := deepDiff(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "Node", map[[2]uintptr]bool{}); diff != "" {
		t.Fatal(diff)
	}
}

// TestSkipForgetsFailedLeads: a guarded coordinator whose leadership lasts
// more than 8 leases forgets its failed leaderships on a tick that sends
// nothing; Skip must too.
func TestSkipForgetsFailedLeads(t *testing.T) {
	roster := MustRoster([]Peer{{ID: "1", Rating: 3}, {ID: "2", Rating: 2}, {ID: "3", Rating: 1}})
	mk := func() *Node {
		n, err := NewNode(Config{ID: "1", Roster: roster, Mode: View, QuorumSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		n.Bootstrap("1", MakeTerm(1, Tag("1")))
		n.guard.failedLeads = 3
		n.Ready()
		return n
	}
	a, b := mk(), mk()
	ack := func(n *Node) {
		for _, m := range n.Ready().Messages {
			if m.Type == MsgHeartbeat {
				p, _ := roster.Get(m.To)
				defer n.Step(Message{Type: MsgHeartbeatAck, From: m.To, To: "1", Term: m.Term, Seq: m.Seq, Rating: p.Rating})
			}
		}
	}
	for a.Now() < 10*a.cfg.QuorumLease {
		d := b.NextDeadline() - b.Now()
		for range d - 1 {
			a.Tick()
		}
		b.Skip(d - 1)
		if diff := deepDiff(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "Node", map[[2]uintptr]bool{}); diff != "" {
			t.Fatalf("%d ticks and Skip(%d) differ: %s", d-1, d-1, diff)
		}
		a.Tick()
		b.Tick()
		ack(a)
		ack(b)
	}
	if a.guard.failedLeads != 0 || a.state != StateCoordinator {
		t.Fatalf("after %d ticks: failed leaderships %d, state %v; want 0 and coordinator", a.Now(), a.guard.failedLeads, a.state)
	}
}

// deepDiff compares two values field by field, unexported fields
// included, and describes the first difference ("" if none). Functions
// are not compared (the ring's link holds a method value), nor are the
// deadline a Node keeps and its algQuiet (caches, which ticks clear and
// Skip keeps: the rest of the node says whether they were right);
// pointers are followed once.
func deepDiff(a, b reflect.Value, path string, seen map[[2]uintptr]bool) string {
	if a.Kind() != b.Kind() {
		return path + ": kinds differ"
	}
	switch a.Kind() {
	case reflect.Func:
		return ""
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil and not nil"
			}
			return ""
		}
		k := [2]uintptr{a.Pointer(), b.Pointer()}
		if k[0] == k[1] || seen[k] {
			return ""
		}
		seen[k] = true
		return deepDiff(a.Elem(), b.Elem(), path, seen)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil and not nil"
			}
			return ""
		}
		if a.Elem().Type() != b.Elem().Type() {
			return path + ": types differ"
		}
		return deepDiff(a.Elem(), b.Elem(), path, seen)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if name := a.Type().Field(i).Name; a.Type() == reflect.TypeFor[Node]() && (name == "deadline" || name == "algQuiet") ||
				a.Type() == reflect.TypeFor[memberList]() && name == "next" { // caches, not state
				continue
			}
			if d := deepDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, seen); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: lengths %d and %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := deepDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), seen); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: sizes %d and %d", path, a.Len(), b.Len())
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() {
				return fmt.Sprintf("%s: key %v missing", path, it.Key())
			}
			if d := deepDiff(it.Value(), bv, fmt.Sprintf("%s[%v]", path, it.Key()), seen); d != "" {
				return d
			}
		}
		return ""
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q and %q", path, a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: %v and %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d and %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf("%s: %d and %d", path, a.Uint(), b.Uint())
		}
	default:
		return path + ": cannot compare kind " + a.Kind().String()
	}
	return ""
}

// BenchmarkSkipFollower: what the event-driven simulator does for an idle
// follower at each input: ask the deadline, skip the ticks before it.
func BenchmarkSkipFollower(b *testing.B) {
	node := benchNode(b, 100, View)
	hb := Message{Type: MsgHeartbeat, From: "100", To: node.ID(), Coordinator: "100", Term: MakeTerm(1, 100), Rating: 100}
	b.ReportAllocs()
	for b.Loop() {
		node.Skip(node.NextDeadline() - node.Now() - 1)
		node.Step(hb)
		node.Ready()
	}
}
