package membership

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

func info(name string, m meta) nodeInfo {
	return nodeInfo{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: 7946, Meta: m.encode()}
}

// render prints events as "up:a/3 down:b rating:c/5" for compact checks.
func render(evs []election.Event) string {
	var parts []string
	for _, ev := range evs {
		switch ev.Kind {
		case election.EventPeerUp:
			s := fmt.Sprintf("up:%s/%d", ev.Peer.ID, ev.Peer.Rating)
			if ev.Peer.NonVoter {
				s += "/nv"
			}
			parts = append(parts, s)
		case election.EventPeerDown:
			parts = append(parts, "down:"+ev.Peer.ID)
		case election.EventPeerRating:
			parts = append(parts, fmt.Sprintf("rating:%s/%d", ev.Peer.ID, ev.Peer.Rating))
		}
	}
	return strings.Join(parts, " ")
}

func newTestTable(self string) (*table, *counters) {
	c := &counters{}
	return newTable(self, meta{Boot: 1}, time.Minute, hclog.NewNullLogger(), c), c
}

func TestTableLifecycle(t *testing.T) {
	tb, _ := newTestTable("self")
	now := time.Unix(0, 0)
	steps := []struct {
		name string
		do   func() []election.Event
		want string
	}{
		{"self is not a peer", func() []election.Event { return tb.alive(info("self", meta{Boot: 1}), now) }, ""},
		{"join", func() []election.Event { return tb.alive(info("a", meta{Rating: 3, Boot: 10}), now) }, "up:a/3"},
		{"same meta again", func() []election.Event { return tb.alive(info("a", meta{Rating: 3, Boot: 10}), now) }, ""},
		{"rating", func() []election.Event { return tb.alive(info("a", meta{Rating: 5, Boot: 10}), now) }, "rating:a/5"},
		{"algorithm only", func() []election.Event {
			return tb.alive(info("a", meta{Rating: 5, Boot: 10, Algorithm: "ring"}), now)
		}, ""},
		{"restart: new boot", func() []election.Event { return tb.alive(info("a", meta{Rating: 5, Boot: 11}), now) }, "down:a up:a/5"},
		{"role change", func() []election.Event {
			return tb.alive(info("a", meta{Rating: 5, Boot: 11, NonVoter: true}), now)
		}, "down:a up:a/5/nv"},
		{"leave", func() []election.Event { return tb.leave("a", now) }, "down:a"},
		{"leave again", func() []election.Event { return tb.leave("a", now) }, ""},
		{"leave unknown", func() []election.Event { return tb.leave("zz", now) }, ""},
		{"back", func() []election.Event { return tb.alive(info("a", meta{Rating: 1, Boot: 11}), now) }, "up:a/1"},
	}
	for _, s := range steps {
		if got := render(s.do()); got != s.want {
			t.Fatalf("%s: events %q, want %q", s.name, got, s.want)
		}
	}
}

func TestTableRefusesBadMeta(t *testing.T) {
	tb, c := newTestTable("self")
	now := time.Unix(0, 0)
	bad := nodeInfo{Name: "x", Addr: net.IPv4(127, 0, 0, 2), Meta: []byte{9, 9}}
	if got := render(tb.alive(bad, now)); got != "" {
		t.Fatalf("bad meta admitted: %q", got)
	}
	tb.alive(bad, now) // refused once, counted once
	if _, ok := tb.target("x"); ok || c.refusedMeta.Load() != 1 {
		t.Fatalf("target ok=%v refusedMeta=%d", ok, c.refusedMeta.Load())
	}
	if got := render(tb.alive(info("x", meta{Boot: 2}), now)); got != "up:x/0" {
		t.Fatalf("fixed meta: %q", got)
	}
	if got := render(tb.alive(bad, now)); got != "down:x" {
		t.Fatalf("meta broken again: %q", got)
	}
	if m := tb.members(now); m[1].Name != "x" || m[1].Refused != RefusedMeta || !m[1].Alive {
		t.Fatalf("members: %+v", m)
	}
}

// core.Tag("5") == core.Tag("05") == core.Tag("005") == 5, and
// core.CompareID orders them "5" < "005" < "05".
func TestTableTagCollisions(t *testing.T) {
	tb, c := newTestTable("self")
	now := time.Unix(0, 0)
	steps := []struct {
		do   func() []election.Event
		want string
		// collided is how many live members wait refused for a tag after
		// the step (promote scans only when some do).
		collided int
	}{
		{func() []election.Event { return tb.alive(info("05", meta{Boot: 1}), now) }, "up:05/0", 0},
		// A lower ID with the same tag displaces the holder everywhere.
		{func() []election.Event { return tb.alive(info("005", meta{Boot: 2}), now) }, "down:05 up:005/0", 1},
		{func() []election.Event { return tb.alive(info("5", meta{Boot: 3}), now) }, "down:005 up:5/0", 2},
		{func() []election.Event { return tb.alive(info("05", meta{Rating: 9, Boot: 1}), now) }, "", 2},
		// The holder leaves: the lowest refused one takes the tag.
		{func() []election.Event { return tb.leave("5", now) }, "down:5 up:005/0", 1},
		{func() []election.Event { return tb.leave("05", now) }, "", 0},
	}
	for i, s := range steps {
		if got := render(s.do()); got != s.want {
			t.Fatalf("step %d: events %q, want %q", i, got, s.want)
		}
		if tb.collided != s.collided {
			t.Fatalf("step %d: %d members counted refused for a tag, want %d", i, tb.collided, s.collided)
		}
	}
	if n := c.refusedTag.Load(); n != 2 {
		t.Fatalf("refusedTag = %d, want 2 (05 and 005, each once)", n)
	}
}

func TestTableRefusesOwnTag(t *testing.T) {
	tb, c := newTestTable("7")
	if got := render(tb.alive(info("07", meta{Boot: 2}), time.Unix(0, 0))); got != "" || c.refusedTag.Load() != 1 {
		t.Fatalf("events %q, refusedTag %d", got, c.refusedTag.Load())
	}
}

func TestTablePruneAndMembers(t *testing.T) {
	tb, _ := newTestTable("self")
	t0 := time.Unix(0, 0)
	tb.alive(info("b", meta{Rating: 2, Boot: 5, Algorithm: "ring"}), t0)
	tb.alive(info("a", meta{Boot: 6, NonVoter: true}), t0)
	tb.leave("a", t0)
	var names []string
	for _, m := range tb.members(t0) {
		names = append(names, fmt.Sprintf("%s:%v:%v:%v", m.Name, m.Alive, m.Voter, m.Self))
	}
	if want := []string{"a:false:false:false", "b:true:true:false", "self:true:true:true"}; !slices.Equal(names, want) {
		t.Fatalf("members %v, want %v", names, want)
	}
	if n := len(tb.members(t0.Add(time.Minute + 1))); n != 2 {
		t.Fatalf("members lists a member departed longer than forget: %d", n)
	}
	if gone := tb.prune(t0.Add(time.Minute)); len(gone) != 0 {
		t.Fatalf("pruned too early: %v", gone)
	}
	if gone := tb.prune(t0.Add(time.Minute + 1)); !slices.Equal(gone, []string{"a"}) {
		t.Fatalf("pruned %v, want [a]", gone)
	}
	if b := tb.members(t0)[0]; b.Addr != "127.0.0.1:7946" || b.Algorithm != "ring" || b.BootID != 5 {
		t.Fatalf("member b: %+v", b)
	}
}

// The table counts its departed members and knows when the first is due
// to be forgotten, so that prune and departed (after every batch of
// messages, twice a second) do nothing while nobody departed or nobody is
// due, and forget each member once its time has come, also after it came
// back and departed again. liveAddrs finds live members by address.
func TestTableDepartedBookkeeping(t *testing.T) {
	tb, _ := newTestTable("self")
	t0 := time.Unix(100, 0)
	mk := func(name string, port uint16) nodeInfo {
		i := info(name, meta{Boot: 1, Algorithm: "bully"})
		i.Port = port
		return i
	}
	for i, name := range []string{"a", "b", "c"} {
		tb.alive(mk(name, uint16(7000+i)), t0)
	}
	if len(tb.left) != 0 || tb.departed(3) != nil || tb.prune(t0.Add(time.Hour)) != nil {
		t.Fatalf("nobody departed: gone %d, departed %v", len(tb.left), tb.departed(3))
	}
	live := tb.liveAddrs([]string{"127.0.0.1:7000", "127.0.0.1:7002", "127.0.0.1:7999", "[::ffff:127.0.0.1]:7001"})
	if !live["127.0.0.1:7000"] || !live["127.0.0.1:7002"] || live["127.0.0.1:7999"] || !live["[::ffff:127.0.0.1]:7001"] {
		t.Fatalf("liveAddrs %v", live)
	}
	tb.leave("a", t0)
	tb.leave("b", t0.Add(10*time.Second))
	if got := tb.departed(3); !slices.Equal(got, []string{"127.0.0.1:7001", "127.0.0.1:7000"}) {
		t.Fatalf("departed %v, want b then a", got)
	}
	if live := tb.liveAddrs([]string{"127.0.0.1:7000"}); live["127.0.0.1:7000"] {
		t.Fatal("liveAddrs holds a departed member alive")
	}
	tb.alive(mk("a", 7000), t0.Add(20*time.Second)) // a is back
	if len(tb.left) != 1 {
		t.Fatalf("gone %d after a came back, want 1", len(tb.left))
	}
	if gone := tb.prune(t0.Add(time.Minute + 5*time.Second)); gone != nil {
		t.Fatalf("pruned %v before b was due", gone)
	}
	tb.leave("a", t0.Add(30*time.Second))
	if gone := tb.prune(t0.Add(time.Minute + 11*time.Second)); !slices.Equal(gone, []string{"b"}) {
		t.Fatalf("pruned %v, want [b]", gone)
	}
	if gone := tb.prune(t0.Add(time.Minute + 29*time.Second)); gone != nil {
		t.Fatalf("pruned %v before a was due again", gone)
	}
	if gone := tb.prune(t0.Add(time.Minute + 31*time.Second)); !slices.Equal(gone, []string{"a"}) {
		t.Fatalf("pruned %v, want [a]", gone)
	}
	if len(tb.left) != 0 || tb.departed(3) != nil {
		t.Fatalf("after pruning all: gone %d, departed %v", len(tb.left), tb.departed(3))
	}
}

// In a cluster of at most four members every member acts on news all of
// them have (a departed member to re-join); in a larger one about four
// do: here 1,000 members, 100,000 draws, about 400 turns.
func TestTakesTurn(t *testing.T) {
	tb, _ := newTestTable("self")
	n := &Node{table: tb}
	for i := range 3 {
		tb.alive(info(fmt.Sprint("p", i), meta{Boot: 1, Algorithm: "bully"}), time.Unix(0, 0))
	}
	for range 100 {
		if !n.takesTurn() {
			t.Fatal("a member of a 4-member cluster skipped its turn")
		}
	}
	for i := 3; i < 999; i++ {
		tb.alive(info(fmt.Sprint("p", i), meta{Boot: 1, Algorithm: "bully"}), time.Unix(0, 0))
	}
	turns := 0
	for range 100_000 {
		if n.takesTurn() {
			turns++
		}
	}
	if turns < 250 || turns > 600 {
		t.Fatalf("%d turns in 100,000 draws at n = 1,000, want about 400", turns)
	}
}

// TestTableAlgorithmAndPayload: an entry leaves out an Algorithm equal to
// this node's and an empty payload (entry.rare), and lists both as the
// member published them.
func TestTableAlgorithmAndPayload(t *testing.T) {
	c := &counters{}
	tb := newTable("self", meta{Boot: 1, Algorithm: "bully", Payload: "mine"}, time.Minute, hclog.NewNullLogger(), c)
	t0 := time.Unix(0, 0)
	tb.alive(info("a", meta{Boot: 2, Algorithm: "bully"}), t0)
	tb.alive(info("b", meta{Boot: 3, Algorithm: "bully", Payload: "pb"}), t0)
	tb.alive(info("c", meta{Boot: 4, Algorithm: "ring"}), t0)
	if tb.get("a").rare != nil {
		t.Fatalf("a's entry keeps its Algorithm: %+v", tb.get("a").rare)
	}
	var got []string
	for _, m := range tb.members(t0) {
		got = append(got, m.Name+":"+m.Algorithm+":"+m.Payload)
	}
	if want := []string{"a:bully:", "b:bully:pb", "c:ring:", "self:bully:mine"}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if p, ok := tb.payload("b"); !ok || p != "pb" {
		t.Fatalf("payload(b) = %q, %v", p, ok)
	}
	tb.alive(info("b", meta{Boot: 3, Algorithm: "bully"}), t0) // payload cleared
	if p, _ := tb.payload("b"); p != "" || tb.get("b").rare != nil {
		t.Fatalf("cleared payload: %q, rare %+v", p, tb.get("b").rare)
	}
}

// TestTableAddresses: the entry keeps an IPv4 address as 4 bytes (from
// either form), an IPv6 one as 16, and none as none.
func TestTableAddresses(t *testing.T) {
	tb, _ := newTestTable("self")
	t0 := time.Unix(0, 0)
	for _, c := range []struct {
		name string
		ip   net.IP
		addr string
		len  int
	}{
		{"a", net.IPv4(10, 0, 0, 1), "10.0.0.1:7000", 4},
		{"b", net.IP{10, 0, 0, 2}, "10.0.0.2:7000", 4},
		{"c", net.ParseIP("2001:db8::1"), "[2001:db8::1]:7000", 16},
		{"d", nil, "", 0},
	} {
		tb.alive(nodeInfo{Name: c.name, Addr: c.ip, Port: 7000, Meta: meta{Boot: 1}.encode()}, t0)
		tg, ok := tb.target(c.name)
		if !ok || len(tg.node.Addr) != c.len || (c.len > 0 && !tg.node.Addr.Equal(c.ip)) || tg.node.Port != 7000 {
			t.Errorf("%s: target %+v, %v", c.name, tg, ok)
		}
		for _, m := range tb.members(t0) {
			if m.Name == c.name && m.Addr != c.addr {
				t.Errorf("%s: listed at %q, want %q", c.name, m.Addr, c.addr)
			}
		}
		tb.leave(c.name, t0)
	}
	if got := tb.departed(10); len(got) != 3 {
		t.Errorf("departed %v: want the three members with an address", got)
	}
}

// TestTableMatchesModel drives the table with random joins, departures
// and prunes among names of which many share a tag ("7", "07", "007"
// ...), as the node does: the guard's side (hold, release) at once, as
// memberlist's callbacks call it, and the table's (alive, leave) later,
// from a queue that the dispatcher drains at random moments. After each
// step it checks every name against a plain model: who is listed, who is
// admitted (the lowest ID among the live members of a tag, none for this
// node's tag), the boot ID the sender would use, the address the guard
// sees for a member memberlist holds, and, once the queue is drained, the
// address listed for every member: memberlist's last.
func TestTableMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2))
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprint(i%60), fmt.Sprintf("%03d", i%60), fmt.Sprint("m", i))
	}
	names = append(names, "0001") // the tag of this node, "1"
	slices.Sort(names)
	names = slices.DeleteFunc(slices.Compact(names), func(n string) bool { return n == "1" })
	tb := newTable("1", meta{Boot: 1}, time.Minute, hclog.NewNullLogger(), &counters{})
	type state struct {
		alive bool
		boot  uint64
		left  time.Time
	}
	model := map[string]*state{} // the table's side: the members it lists
	held := map[string]uint16{}  // memberlist's side: the live members' ports
	last := map[string]uint16{}  // memberlist's last port of every member
	type item struct {
		name  string
		alive bool
		boot  uint64
		port  uint16
	}
	var queue []item
	now := time.Unix(1000, 0)
	for step := range 6000 {
		now = now.Add(time.Second)
		name := names[rng.IntN(len(names))]
		switch rng.IntN(6) {
		case 0, 1: // memberlist: joined or updated
			boot, port := uint64(rng.IntN(3)+1), uint16(7000+rng.IntN(3))
			tb.hold(name, packAddr(net.IPv4(127, 0, 0, 1), port))
			held[name], last[name] = port, port
			queue = append(queue, item{name: name, alive: true, boot: boot, port: port})
		case 2: // memberlist: left
			if _, ok := held[name]; ok {
				tb.release(name)
				delete(held, name)
				queue = append(queue, item{name: name})
			}
		case 3, 4: // the dispatcher: some of the queue
			k := rng.IntN(len(queue) + 1)
			for _, it := range queue[:k] {
				if it.alive {
					i := info(it.name, meta{Boot: it.boot})
					i.Port = it.port
					tb.alive(i, now)
					model[it.name] = &state{alive: true, boot: it.boot}
				} else {
					tb.leave(it.name, now)
					if s := model[it.name]; s != nil && s.alive {
						s.alive, s.left = false, now
					}
				}
			}
			queue = queue[k:]
		case 5:
			tb.prune(now)
			for n, s := range model {
				if !s.alive && now.Sub(s.left) > time.Minute {
					delete(model, n)
				}
			}
		}
		holder := map[uint32]string{}
		for n, s := range model {
			if tag := core.Tag(n); s.alive && tag != core.Tag("1") {
				if h, ok := holder[tag]; !ok || core.CompareID(n, h) < 0 {
					holder[tag] = n
				}
			}
		}
		if tb.size() != len(model)+1 {
			t.Fatalf("step %d: the table lists %d members, the model %d", step, tb.size()-1, len(model))
		}
		for _, n := range names {
			s := model[n]
			tg, ok := tb.target(n)
			want := s != nil && holder[core.Tag(n)] == n
			if ok != want || (ok && tg.boot != s.boot) {
				t.Fatalf("step %d: %s: target %v (boot %d); model %+v, holder %q", step, n, ok, tg.boot, s, holder[core.Tag(n)])
			}
			port, isHeld := held[n]
			if a, ok := tb.heldAddr(n); ok != isHeld || (ok && a.port != port) {
				t.Fatalf("step %d: %s: the guard sees %v at %v; memberlist holds it %v at %d", step, n, ok, a, isHeld, port)
			}
		}
		listed, recent := tb.members(now), 0
		for _, s := range model {
			if s.alive || now.Sub(s.left) <= time.Minute {
				recent++
			}
		}
		if len(listed) != recent+1 {
			t.Fatalf("step %d: members lists %d, the model %d", step, len(listed)-1, recent)
		}
		if len(queue) > 0 {
			continue
		}
		if len(tb.peers) > len(model)+len(held) {
			t.Fatalf("step %d: %d entries for %d listed and %d held members", step, len(tb.peers), len(model), len(held))
		}
		for _, m := range listed {
			if m.Self {
				continue
			}
			if want := fmt.Sprint("127.0.0.1:", last[m.Name]); model[m.Name] == nil || m.Addr != want {
				t.Fatalf("step %d: %s listed at %s, want %s (model %+v)", step, m.Name, m.Addr, want, model[m.Name])
			}
		}
	}
}

// The entries' slice gives back its spare room once no entry has been
// added for clipAfter, and not before; the entries stay as they were.
func TestTableClip(t *testing.T) {
	tb, _ := newTestTable("self")
	now := time.Unix(0, 0)
	for i := range 100 {
		tb.alive(info(strconv.Itoa(i), meta{Rating: int64(i + 1), Boot: 10}), now)
	}
	if cap(tb.peers) == len(tb.peers) {
		t.Fatalf("cap %d: want spare room after 100 additions", cap(tb.peers))
	}
	tb.clip(now)                                            // sees the additions
	tb.clip(now.Add(clipAfter - 1))                         // too early
	tb.hold("late", packAddr(net.IPv4(127, 0, 0, 2), 7946)) // an addition restarts the wait
	tb.clip(now.Add(clipAfter))
	if cap(tb.peers) == len(tb.peers) {
		t.Fatalf("clipped %v after an addition", clipAfter)
	}
	before := slices.Clone(tb.peers)
	tb.clip(now.Add(2*clipAfter - 1))
	if cap(tb.peers) == len(tb.peers) {
		t.Fatal("clipped before clipAfter had passed since the last addition")
	}
	tb.clip(now.Add(2 * clipAfter))
	if cap(tb.peers) != len(tb.peers) {
		t.Fatalf("len %d cap %d after clipAfter without additions: want no spare room", len(tb.peers), cap(tb.peers))
	}
	if !slices.Equal(tb.peers, before) {
		t.Fatal("clip changed the entries")
	}
	if got := render(tb.alive(info("7", meta{Rating: 8, Boot: 10}), now)); got != "" {
		t.Fatalf("a known member after the clip: events %q, want none", got)
	}
	if got := render(tb.alive(info("new", meta{Rating: 3, Boot: 10}), now)); got != "up:new/3" {
		t.Fatalf("a new member after the clip: events %q, want up:new/3", got)
	}
}
