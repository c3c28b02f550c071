package group

import (
	"errors"
	"fmt"
	"slices"

	"github.com/coordelect/coordelect/election/core"
)

// Options configure one name of a Group.
type Options struct {
	// Placement ranks the name's candidates. Default PlaceRating.
	Placement Placement
	// Abstain: this member does not stand for the name. It follows the
	// name's coordinator as a non-voter (core.Peer.NonVoter): it reports
	// the coordinator, never stands, and, with the quorum guard, does not
	// acknowledge heartbeats (it is no part of the name's majority).
	// Default false: the member stands, unless its core.Config's Roster
	// marks it NonVoter (then it stands for no name).
	Abstain bool
	// QuorumSize is the quorum guard's size for this name: the number of
	// members that stand for it (core.Config.QuorumSize). 0: the group's
	// core.Config.QuorumSize.
	QuorumSize int
}

func (o Options) validate() error {
	var errs []error
	if o.Placement >= numPlacements {
		errs = append(errs, fmt.Errorf("group: Options.Placement = %v: want PlaceRating or PlaceSpread", o.Placement))
	}
	if o.QuorumSize < 0 {
		errs = append(errs, fmt.Errorf("group: Options.QuorumSize = %d: must be 0 (the group's) or the name's number of candidates", o.QuorumSize))
	}
	return errors.Join(errs...)
}

// Group hosts the named elections of one member: each name is a
// core.Node, fed by the group. See the package documentation for the
// contract. A Group is not safe for concurrent use; one goroutine owns
// it, as a core.Node's owner does.
type Group struct {
	cfg core.Config // every name's node's configuration but Roster and QuorumSize; defaults filled in
	now int         // ticks since New
	// hosts build the names' nodes, which share their configuration and
	// Ready buffers: one per QuorumSize that names run with (0: cfg's).
	hosts map[int]*core.Host

	// The membership, shared by every name. members is append-only
	// (a member's index never changes; selfIndex is this member); ring
	// is the ring order the names' rosters take (core.Roster's order:
	// the initial roster's, then each newcomer before the first member
	// with a greater ID).
	members   []member
	memberIdx map[string]int32
	ring      []int32
	version   uint64 // counts membership changes, liveness included (shared)

	names   map[string]*entry
	list    []*entry                   // the names in the order they were added
	abstain map[string]map[string]bool // name -> peers that do not stand for it (PeerCandidate)
	// abstainPeak is the most names abstain has held since it was made
	// (shrinkAbstain).
	abstainPeak int

	// shared is the base roster (base), built for the membership
	// version sharedAt from the members baseRing: the roster of the
	// PlaceRating names whose candidacies are the members' own (no
	// Abstain anywhere), whose nodes share it until their view changes
	// (core copies it then), and the member list that every name's
	// roster shares (core.Roster.WithRatings).
	shared         *core.Roster
	sharedAt       uint64
	baseRing       []int32
	scratchRatings []int64
	scratchFlags   []bool

	spread     int  // the names under PlaceSpread
	unbuilt    int  // names added whose node is not built yet (settle)
	placeDirty bool // the spread assignment must be worked out again (place)
	// placeAt is the earliest tick at which the assignment is worked out
	// again (settle, settlePlace): a HeartbeatInterval after the last
	// time, however many changes come in it, or sooner for a name added
	// (Add: before its start-up delay ends).
	placeAt      int
	scratchNames []*entry
	scratchLoad  []int
	scratchStand []bool
	scratchBest  []int32
	// succ holds each member's successors under Spread (place): the
	// members that rank second and on, in each name's own order, for the
	// names assigned to it.
	succ [][]int32

	// touched lists the names called into since the last Ready;
	// allTouched says every name was (a tick).
	touched    []*entry
	allTouched bool
	harvested  []Update // Readies of nodes that were replaced or removed since the last Ready

	out         outbox
	counts      Counters // since the last Ready
	rd          Ready
	updatesPeak int // the high-water mark of rd.Updates (fit)
	// readies are the copies of the nodes' Readies that rd.Updates
	// point to, but for the harvested ones (collect).
	readies []core.Ready
}

// member is what the group knows of a member.
type member struct {
	id       string
	rating   int64
	nonVoter bool // stands for no name
	alive    bool
}

// selfIndex is this member's index in Group.members.
const selfIndex = 0

// entry is one name.
type entry struct {
	name string
	hash uint64 // spreadHash(name, ""): the name's order in place
	node *core.Node
	opts Options
	// assigned is the member the spread assignment gives the name's
	// first place to (place); -1: none, or not spread.
	assigned int32

	touched bool
	removed bool
	// recreate: this member's candidacy changed (SetCandidate); the node
	// is built anew once its hand-off, if any, is over.
	recreate bool

	// hb is the name's heartbeat rounds as the batching sees them
	// (ready.go): nil until its node first queues a heartbeat or is asked
	// for a round (beats), which only a member that leads the name does;
	// nil means the zero heartbeats.
	hb *heartbeats
}

// beats returns e's heartbeats, making them if need be.
func (e *entry) beats() *heartbeats {
	if e.hb == nil {
		e.hb = new(heartbeats)
	}
	return e.hb
}

// offPhase reports heartbeats.offPhase.
func (e *entry) offPhase() bool { return e.hb != nil && e.hb.offPhase }

// New returns a group with no names for the member cfg.ID, which knows
// the members in cfg.Roster (their ratings are their own; NonVoter means
// a member stands for no name). Every name's node runs with cfg, but for
// its Roster (the members with their ratings for that name) and, if its
// Options say, its QuorumSize. cfg is validated as core.NewNode does.
func New(cfg core.Config) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host, err := core.NewHost(cfg) // fills in the defaults
	if err != nil {
		return nil, err
	}
	host.SetClock(0)
	g := &Group{cfg: host.Config(), hosts: map[int]*core.Host{0: host}, memberIdx: make(map[string]int32, cfg.Roster.Len()),
		names: make(map[string]*entry), abstain: make(map[string]map[string]bool)}
	g.cfg.ID = cfg.ID
	self, _ := cfg.Roster.Get(cfg.ID)
	g.members = append(g.members, member{id: self.ID, rating: self.Rating, nonVoter: self.NonVoter, alive: true})
	g.memberIdx[self.ID] = selfIndex
	for i := 0; i < cfg.Roster.Len(); i++ {
		p := cfg.Roster.At(i)
		if p.ID != cfg.ID {
			g.memberIdx[p.ID] = int32(len(g.members))
			g.members = append(g.members, member{id: p.ID, rating: p.Rating, nonVoter: p.NonVoter, alive: true})
		}
		g.ring = append(g.ring, g.memberIdx[p.ID])
	}
	return g, nil
}

// addMember appends p to the members, alive, and inserts it in the ring
// before the first member with a greater ID.
func (g *Group) addMember(p core.Peer) int {
	i := len(g.members)
	g.members = append(g.members, member{id: p.ID, rating: p.Rating, nonVoter: p.NonVoter, alive: true})
	g.memberIdx[p.ID] = int32(i)
	at := slices.IndexFunc(g.ring, func(j int32) bool { return core.CompareID(p.ID, g.members[j].id) < 0 })
	if at < 0 {
		at = len(g.ring)
	}
	g.ring = slices.Insert(g.ring, at, int32(i))
	g.version++
	return i
}

// ID returns this member's ID.
func (g *Group) ID() string { return g.cfg.ID }

// Now returns the ticks the group has counted since New.
func (g *Group) Now() int { return g.now }

// Config returns the core configuration every name runs with (defaults
// filled in; Roster nil: each name has its own).
func (g *Group) Config() core.Config { return g.cfg }

// Len returns the number of names.
func (g *Group) Len() int { return len(g.list) }

// Names returns the names, in the order they were added.
func (g *Group) Names() []string {
	out := make([]string, len(g.list))
	for i, e := range g.list {
		out[i] = e.name
	}
	return out
}

// Has reports whether the group hosts name.
func (g *Group) Has(name string) bool { return g.names[name] != nil }

// Node returns name's node, or nil, for reading (Status, LeaseEnd,
// Roster, ...). Calls that change it go through With, so that the group
// collects what it queues.
func (g *Group) Node(name string) *core.Node {
	if e := g.names[name]; e != nil {
		g.settle()
		return e.node
	}
	return nil
}

// Options returns the options name runs with.
func (g *Group) Options(name string) (Options, bool) {
	if e := g.names[name]; e != nil {
		return e.opts, true
	}
	return Options{}, false
}

// With calls f with name's node, for a local request (Resign,
// TransferTo, CompleteHandoff, VerifyRound, Detect): the next Ready
// carries what it queued. It returns f's error, or an error naming the
// name if the group does not host it.
func (g *Group) With(name string, f func(n *core.Node) error) error {
	e := g.names[name]
	if e == nil {
		return fmt.Errorf("group: name %q: not in this group", name)
	}
	g.settle()
	g.touch(e)
	return f(e.node)
}

// VerifyRound has name's node send a heartbeat round now
// (core.Node.VerifyRound: a VerifyLeader's) and returns its number, 0
// when the node leads with no lease to confirm. The round goes with the
// next Ready, not at the next round instant: its caller waits for its
// acks.
func (g *Group) VerifyRound(name string) (uint64, error) {
	e := g.names[name]
	if e == nil {
		return 0, fmt.Errorf("group: name %q: not in this group", name)
	}
	g.settle()
	g.touch(e)
	seq := e.node.VerifyRound()
	if seq != 0 {
		e.beats().asked = true
	}
	return seq, nil
}

// Add starts an election named name, with this member standing for it
// unless opts.Abstain. Its node starts as core.NewNode's does (asleep:
// it listens for a coordinator for StartupDelay, then elects).
func (g *Group) Add(name string, opts Options) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return fmt.Errorf("group: name %q: %w", name, err)
	}
	if g.names[name] != nil {
		return fmt.Errorf("group: name %q: already in this group", name)
	}
	if _, err := g.host(opts.QuorumSize); err != nil {
		return fmt.Errorf("group: name %q: Options.QuorumSize = %d: %w", name, opts.QuorumSize, err)
	}
	// The node is built by the next settle, with the spread assignment
	// of then (settle).
	e := &entry{name: name, hash: spreadHash(name, ""), opts: opts, assigned: -1}
	g.unbuilt++
	g.names[name] = e
	g.list = append(g.list, e)
	if opts.Placement == PlaceSpread {
		g.spread++
		g.placeDirty = true
		// Due before the name's start-up delay ends, so that its node
		// elects with the assignment that takes it in (settle).
		g.placeAt = min(g.placeAt, g.now+max(g.cfg.StartupDelay-1, 0))
	}
	g.touch(e)
	return nil
}

// Remove ends the election named name. If this member leads it, it
// resigns first and completes the hand-off at once (the caller says, by
// removing the name, that the work the leadership guarded has stopped):
// the next Ready carries the resignation and the name's last Update.
func (g *Group) Remove(name string) error {
	e := g.names[name]
	if e == nil {
		return fmt.Errorf("group: name %q: not in this group", name)
	}
	g.settle()
	_ = e.node.Resign() // ErrNotLeader, ErrNoSuccessor: nothing to hand over
	e.node.CompleteHandoff()
	g.harvest(e)
	e.removed = true
	delete(g.names, name)
	g.list = slices.DeleteFunc(g.list, func(x *entry) bool { return x == e })
	if e.opts.Placement == PlaceSpread {
		g.spread--
		g.placeDirty = true
	}
	return nil
}

// SetCandidate says whether this member stands for name from now on.
// The core fixes a node's own candidacy when it is built, so a change
// builds the name's node anew, as a member that restarts: a coordinator
// that stops standing resigns first (the successor is the next candidate
// by rating) and is rebuilt once its hand-off is over. The new node
// learns the current coordinator and term from its heartbeats, as a
// restarted member does.
func (g *Group) SetCandidate(name string, stand bool) error {
	e := g.names[name]
	if e == nil {
		return fmt.Errorf("group: name %q: not in this group", name)
	}
	if e.opts.Abstain == !stand {
		return nil
	}
	g.settle()
	e.opts.Abstain = !stand
	if !stand {
		_ = e.node.Resign() // ErrNotLeader, ErrNoSuccessor: nothing to hand over
	}
	e.recreate = true
	g.touch(e)
	if e.opts.Placement == PlaceSpread {
		g.placeDirty = true
	}
	g.rebuildIfReady(e)
	return nil
}

// rebuildIfReady builds e's node anew if its candidacy changed and no
// hand-off is pending.
func (g *Group) rebuildIfReady(e *entry) {
	if !e.recreate || e.node.HandoffPending() {
		return
	}
	g.harvest(e)
	node, err := g.newNode(e)
	if err != nil {
		return // the configuration was valid when e was added, and membership changes keep it so
	}
	e.recreate = false
	e.node = node
	e.hb = nil
	g.touch(e)
}

// newNode builds e's node: the group's configuration with e's roster
// (the members this member's view holds alive, or every known member
// in Textbook mode, in ring order, rated for e) and e's QuorumSize.
func (g *Group) newNode(e *entry) (*core.Node, error) {
	h, err := g.host(e.opts.QuorumSize)
	if err != nil {
		return nil, err
	}
	r, err := g.roster(e)
	if err != nil {
		return nil, err
	}
	return h.NewNode(g.cfg.ID, r)
}

// host returns the host of the nodes that run with quorum size q (0: the
// group's), made at the first call for q.
func (g *Group) host(q int) (*core.Host, error) {
	if h := g.hosts[q]; h != nil {
		return h, nil
	}
	cfg := g.cfg
	cfg.QuorumSize = q
	h, err := core.NewHost(cfg)
	if err != nil {
		return nil, err
	}
	h.SetClock(g.now)
	g.hosts[q] = h
	return h, nil
}

// setClock tells the hosts the group's clock (core.Host.SetClock), whenever
// it moves and before the nodes hear of it: the names' heartbeat
// rotations number the intervals on it.
func (g *Group) setClock() {
	for _, h := range g.hosts {
		h.SetClock(g.now)
	}
}

// roster builds e's roster: the base roster (base) when e's ratings and
// candidacies are the members' own, else one of the same members, in
// the same order, rated for e, which shares its member list.
func (g *Group) roster(e *entry) (*core.Roster, error) {
	base, err := g.base()
	if err != nil {
		return nil, err
	}
	if e.opts.Placement == PlaceRating && !e.opts.Abstain && len(g.abstain[e.name]) == 0 {
		return base, nil
	}
	ratings, nonVoter := g.scratchRatings[:0], g.scratchFlags[:0]
	abstain := g.abstain[e.name]
	for _, i := range g.baseRing {
		ratings = append(ratings, g.rating(e, int(i)))
		nonVoter = append(nonVoter, !g.stands(e, int(i), abstain))
	}
	g.scratchRatings, g.scratchFlags = ratings, nonVoter
	return base.WithRatings(ratings, nonVoter)
}

// base returns the roster a name's node starts with when its ratings
// and candidacies are the members' own: the members this member's view
// holds alive (every known member in Textbook mode) in ring order, for
// the current membership version. A new version whose members are the
// same (a rating or a candidacy changed) shares the previous one's
// member list.
func (g *Group) base() (*core.Roster, error) {
	if g.shared != nil && g.sharedAt == g.version {
		return g.shared, nil
	}
	var ring []int32
	for _, i := range g.ring {
		if g.cfg.Mode != core.View || g.members[i].alive {
			ring = append(ring, i)
		}
	}
	peers := make([]core.Peer, len(ring))
	for k, i := range ring {
		m := &g.members[i]
		peers[k] = core.Peer{ID: m.id, Rating: m.rating, NonVoter: m.nonVoter}
	}
	var r *core.Roster
	var err error
	if g.shared != nil && slices.Equal(ring, g.baseRing) {
		ratings, nonVoter := make([]int64, len(ring)), make([]bool, len(ring))
		for k, p := range peers {
			ratings[k], nonVoter[k] = p.Rating, p.NonVoter
		}
		r, err = g.shared.WithRatings(ratings, nonVoter)
	} else {
		r, err = core.NewRoster(peers)
	}
	if err != nil {
		return nil, err
	}
	g.shared, g.sharedAt, g.baseRing = r, g.version, ring
	return r, nil
}

// peer is member i as e's node sees it: rated for e, a non-voter unless
// it stands for e.
func (g *Group) peer(e *entry, i int) core.Peer {
	return core.Peer{ID: g.members[i].id, Rating: g.rating(e, i), NonVoter: !g.stands(e, i, g.abstain[e.name])}
}

// harvest takes e's node's Ready (messages into the outbox, the Ready
// into the next group Ready's Updates) before the node is replaced or
// dropped.
func (g *Group) harvest(e *entry) {
	rd := e.node.Ready()
	g.queueMessages(e, rd.Messages)
	e.node.Release()
	g.harvested = append(g.harvested, Update{Name: e.name, Ready: rd})
}

// touch notes that e was called into: the next Ready asks its node.
func (g *Group) touch(e *entry) {
	if !e.touched && !g.allTouched {
		e.touched = true
		g.touched = append(g.touched, e)
	}
}

// settle builds the nodes of the names added since the last call, before
// any input and before a node is read. The spread assignment is brought
// up to date by Ready, Skip and Advance, and here, once it is due
// (placeIfDue): a burst of adds (a service that starts with a thousand
// names), of membership events (a joining member learns every other at
// once) or of candidacy statements (members that start with many names)
// then costs one assignment, not one each. Each costs a rendezvous hash
// per name and candidate. Until then the names keep the previous
// assignment, which is as good as it was before the change. A name added
// in between is built with its plain SpreadRatings (no first place, no
// successors), and the assignment that takes it in is due one tick
// before its start-up delay ends (Add), so that its node elects with the
// ratings that assignment tells it (reassign). The members agree again
// once each has placed.
func (g *Group) settle() {
	if g.unbuilt == 0 {
		return
	}
	g.placeIfDue()
	for _, e := range g.list {
		if e.node == nil {
			node, err := g.newNode(e)
			if err != nil {
				panic(fmt.Sprintf("group: name %q: %v", e.name, err)) // Add and PeerUp keep the inputs valid
			}
			e.node = node
			g.touch(e)
		}
	}
	g.unbuilt = 0
}

// settlePlace is settle with the spread assignment brought up to date,
// if it is due.
func (g *Group) settlePlace() {
	g.placeIfDue()
	g.settle()
}

// placeIfDue works the spread assignment out again if a change waits for
// it and its tick (placeAt) has come.
func (g *Group) placeIfDue() {
	if g.placeDirty && g.now >= g.placeAt {
		g.place()
	}
}
