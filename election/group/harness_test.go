package group

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// cluster is an in-memory network of groups, one per member, driven by a
// shared tick count: every tick each live group ticks, then batches are
// delivered (FIFO, at once) until none is left. Nothing is random; the
// same calls give the same run.
type cluster struct {
	t      testing.TB
	ids    []string
	groups map[string]*Group
	down   map[string]bool // crashed members: not ticked, their batches lost
	flight []Batch
	now    int
	h      int // HeartbeatInterval
	// packets counts the batches each member sent each destination, per
	// heartbeat interval (tick / h), while counting is on.
	counting bool
	packets  map[link]map[int]*tally
	pairs    int // pairs sent while counting
	// unknown counts the pairs each member dropped for a name it does not
	// host.
	unknown map[string]uint64
	// elections counts the elections started while counting.
	elections uint64
	// onUpdate, if set, sees every name's Ready that a member hands over.
	onUpdate func(member string, u Update)
}

// tally counts a link's packets in one interval: all of them, those
// carrying heartbeats, and those carrying heartbeat acks.
type tally struct{ all, heartbeats, acks int }

type link struct{ from, to string }

func memberID(i int) string { return "m" + fmt.Sprintf("%02d", i) }

func jobName(i int) string { return "job-" + strconv.Itoa(i) }

// newCluster builds n members (weights all 1) with the core defaults in
// View mode, changed by tweak, and no names.
func newCluster(t testing.TB, n int, tweak func(*core.Config)) *cluster {
	t.Helper()
	peers := make([]core.Peer, n)
	for i := range peers {
		peers[i] = core.Peer{ID: memberID(i), Rating: 1}
	}
	roster := core.MustRoster(peers)
	c := &cluster{t: t, groups: map[string]*Group{}, down: map[string]bool{}, packets: map[link]map[int]*tally{}, unknown: map[string]uint64{}}
	for _, p := range peers {
		cfg := core.DefaultConfig()
		cfg.ID, cfg.Roster, cfg.Mode = p.ID, roster, core.View
		if tweak != nil {
			tweak(&cfg)
		}
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.ids = append(c.ids, p.ID)
		c.groups[p.ID] = g
		c.h = g.Config().HeartbeatInterval
	}
	return c
}

// add adds names to every member.
func (c *cluster) add(opts Options, names ...string) {
	c.t.Helper()
	for _, id := range c.ids {
		for _, name := range names {
			if err := c.groups[id].Add(name, opts); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	c.deliver()
}

// addStaggered adds names to every member a few at each tick over
// spread ticks, so that their elections end, and their heartbeat rounds
// run, at different phases.
func (c *cluster) addStaggered(opts Options, spread int, names ...string) {
	c.t.Helper()
	for k := range spread {
		for i := k; i < len(names); i += spread {
			for _, id := range c.ids {
				if err := c.groups[id].Add(names[i], opts); err != nil {
					c.t.Fatal(err)
				}
			}
		}
		c.deliver()
		c.tick()
	}
}

// tick moves every live member one tick on and delivers what follows.
func (c *cluster) tick() {
	c.now++
	for _, id := range c.ids {
		if !c.down[id] {
			c.groups[id].Tick()
		}
	}
	c.deliver()
}

func (c *cluster) run(ticks int) {
	for range ticks {
		c.tick()
	}
}

// deliver takes every live group's Ready and delivers its batches until
// nothing is in flight.
func (c *cluster) deliver() {
	for {
		for _, id := range c.ids {
			if !c.down[id] {
				c.take(c.groups[id])
			}
		}
		if len(c.flight) == 0 {
			return
		}
		fl := c.flight
		c.flight = nil
		for _, b := range fl {
			if !c.down[b.To] {
				c.groups[b.To].Step(b)
			}
		}
	}
}

func (c *cluster) take(g *Group) {
	rd := g.Ready()
	for _, b := range rd.Batches {
		if b.From != g.ID() {
			c.t.Fatalf("batch from %s in %s's Ready", b.From, g.ID())
		}
		if c.counting {
			l := link{b.From, b.To}
			if c.packets[l] == nil {
				c.packets[l] = map[int]*tally{}
			}
			tl := c.packets[l][c.now/c.h]
			if tl == nil {
				tl = &tally{}
				c.packets[l][c.now/c.h] = tl
			}
			tl.all++
			hb, ack := 0, 0
			for _, p := range b.Pairs {
				switch p.Msg.Type {
				case core.MsgHeartbeat:
					hb = 1
				case core.MsgHeartbeatAck:
					ack = 1
				}
			}
			tl.heartbeats += hb
			tl.acks += ack
			c.pairs += len(b.Pairs)
		}
		c.flight = append(c.flight, b.Clone())
	}
	if rd.Misaddressed != 0 {
		c.t.Fatalf("%s dropped %+v", g.ID(), rd.Counters)
	}
	c.unknown[g.ID()] += rd.UnknownName
	if c.onUpdate != nil {
		for _, u := range rd.Updates {
			c.onUpdate(g.ID(), u)
		}
	}
	if c.counting {
		for _, u := range rd.Updates {
			c.elections += u.Ready.ElectionsStarted
		}
	}
}

// crash stops member id; every survivor's membership reports it dead in
// one call, as memberlist's would.
func (c *cluster) crash(id string) {
	c.down[id] = true
	for _, o := range c.ids {
		if !c.down[o] {
			c.groups[o].PeerDown(id)
		}
	}
	c.deliver()
}

// live returns the members that have not crashed.
func (c *cluster) live() []string {
	var out []string
	for _, id := range c.ids {
		if !c.down[id] {
			out = append(out, id)
		}
	}
	return out
}

// leader returns the coordinator every live member reports for name, and
// an error unless they all report the same one, it is live, and exactly
// one live member is in state coordinator.
func (c *cluster) leader(name string) (string, error) {
	var lead string
	coordinators := 0
	for i, id := range c.live() {
		st := c.groups[id].Node(name).Status()
		if i == 0 {
			lead = st.Coordinator
		}
		if st.Coordinator != lead {
			return "", fmt.Errorf("%s: %s reports %q, %s reports %q", name, c.live()[0], lead, id, st.Coordinator)
		}
		if st.State == core.StateCoordinator {
			coordinators++
		}
	}
	switch {
	case lead == "":
		return "", fmt.Errorf("%s: no coordinator", name)
	case c.down[lead]:
		return "", fmt.Errorf("%s: coordinator %s is down", name, lead)
	case coordinators != 1:
		return "", fmt.Errorf("%s: %d members in state coordinator", name, coordinators)
	}
	return lead, nil
}

// settle runs until every name has one agreed coordinator, at most limit
// ticks, and returns the ticks it took.
func (c *cluster) settle(names []string, limit int) int {
	c.t.Helper()
	for t := 0; ; t++ {
		var err error
		for _, name := range names {
			if _, err = c.leader(name); err != nil {
				break
			}
		}
		if err == nil {
			for _, id := range c.live() {
				if c.groups[id].placeDirty {
					err = fmt.Errorf("%s's spread assignment waits", id)
					break
				}
			}
		}
		if err == nil {
			return t
		}
		if t == limit {
			c.t.Fatalf("not settled after %d ticks: %v", limit, err)
		}
		c.tick()
	}
}

// leaders returns the leader of each name.
func (c *cluster) leaders(names []string) map[string]string {
	out := map[string]string{}
	for _, name := range names {
		l, err := c.leader(name)
		if err != nil {
			c.t.Fatal(err)
		}
		out[name] = l
	}
	return out
}

// loads counts the names each live member leads.
func (c *cluster) loads(leaders map[string]string) map[string]int {
	out := map[string]int{}
	for _, id := range c.live() {
		out[id] = 0
	}
	for _, l := range leaders {
		out[l]++
	}
	return out
}

func maxMean(loads map[string]int) (int, float64) {
	mx, sum := 0, 0
	for _, k := range loads {
		mx, sum = max(mx, k), sum+k
	}
	return mx, float64(sum) / float64(len(loads))
}

func names(e int) []string {
	out := make([]string, e)
	for i := range out {
		out[i] = jobName(i)
	}
	return out
}
