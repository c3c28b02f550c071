package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// maxMs bounds a tick and a message delay (an hour of virtual time), so
// that no arithmetic on them can overflow.
const maxMs = 3_600_000

// Config describes a simulated cluster. Times are virtual milliseconds.
type Config struct {
	// Members in ring (clockwise) order, with ratings. Required.
	Members []core.Peer
	// Names, when set, makes every member host these named elections in
	// one group.Group (named.go): the network then carries the groups'
	// batches, one delivery per batch, and the checker checks every name.
	// Empty: every member is one core.Node, the unnamed election.
	Names []Name
	// Algorithm and Mode of every node.
	Algorithm core.Algorithm
	Mode      core.Mode
	// Core holds the timeouts in ticks (zero fields take core defaults);
	// ID, Roster, Algorithm and Mode are filled in per node.
	Core core.Config
	// TickMs is the virtual length of a tick. Default 10.
	TickMs int64
	// DelayMin and DelayMax bound a message's one-way delay. Default 1-5.
	DelayMin, DelayMax int64
	// Loss, Dup and Reorder are probabilities per message. Reorder sends a
	// message with a delay up to 3 × DelayMax, ignoring the FIFO order.
	Loss, Dup, Reorder float64
	// FIFO keeps per-link order (forced on for the active/relay ring, whose
	// contract needs it; Reorder then does nothing).
	FIFO bool
	// ViewDelayMs: in View mode, a crash or restart reaches every other
	// node's view (PeerDown / PeerUp) this long after it happens, as
	// gossip would. Negative: never (the view is left to the script).
	// Default 0: at once.
	ViewDelayMs int64
	// ViewDelayMaxMs, when above ViewDelayMs, makes each view change take
	// a delay drawn from ViewDelayMs..ViewDelayMaxMs, per observer: slow
	// and uneven membership, as gossip is. Newer news about a member
	// always wins over older news that arrives later.
	ViewDelayMaxMs int64
	// SendGapUs (without names: a group's batches leave at once, one
	// packet per destination): a node's messages leave one after another, this many µs
	// apart (the i-th of one Ready departs i × SendGapUs later, rounded
	// down to the ms), as a runtime that opens a TCP connection per
	// message sends a broadcast to n members over n × its cost. 0: all
	// at once.
	SendGapUs int64
	// HeartbeatsAtOnce: with SendGapUs, heartbeats, their acks and the
	// messages marked core.Message.BestEffort or Unordered leave at once, outside the
	// queue; only the other messages (the i-th of them i × SendGapUs
	// later) wait their turn, as the runtime sends the former by UDP and
	// the latter by TCP, a connection each.
	HeartbeatsAtOnce bool
	// HeartbeatDetector turns on the followers' heartbeat failure detector.
	// Off, only nodes told to Detect (or a view PeerDown) notice a failure,
	// which is what the message-count experiments assume.
	HeartbeatDetector bool
	// Seed seeds the network's randomness.
	Seed uint64
	// Trace, when set, receives a line for every send, delivery, drop and
	// state change.
	Trace func(string)
	// dense ticks every live node at every tick of its phase, as the
	// simulator did before it was event-driven: the reference that the
	// event-driven run must match, trace for trace (tests only).
	dense bool
}

// Sim is a simulated cluster.
type Sim struct {
	cfg    Config
	roster *core.Roster
	host   *core.Host // builds the nodes (without names; with names each group has its own)
	rng    *rand.Rand
	now    int64
	seq    uint64
	queue  *eventQueue
	nodes  []*simNode
	// cores holds each node's state machine (nodes[i].node) in a slice of
	// its own, for prefetchNode.
	cores []*core.Node
	group map[string]int // partition group; absent = 0
	// ring, when set, is a majorities-ring partition: each node reaches
	// only the nodes within reach places of it on this ring.
	ring  map[string]int
	reach int
	// blocked links, one way: from -> to. The value says whether the
	// block also shows in the two nodes' membership views.
	blocked map[[2]string]bool
	// viewSeq: per (observer, subject) pair, the sequence number of the
	// newest view event applied, so that older news arriving later (with
	// uneven view delays) is ignored.
	viewSeq map[[2]int]uint64
	// viewUntil is the latest time a scheduled view change arrives: the
	// membership has converged after it.
	viewUntil int64
	// Forged counts frames injected by Forge.
	Forged uint64
	// names are the named elections (Config.Names; nil: one unnamed
	// election); nameIdx indexes them by name, nameAbstain holds each
	// one's abstaining members.
	names       []Name
	nameIdx     map[string]int
	nameAbstain []map[string]bool
	// batches holds the batches in flight, by slot (an evBatch event's
	// msg.Seq); freeBatch lists the free slots.
	batches   []group.Batch
	freeBatch []uint64
	// groups holds each member's group, by node index, with names (the
	// simNodes' node is nil then).
	groups []*memberGroup
	// BatchesSent counts the batches (packets) handed to the network,
	// with names.
	BatchesSent uint64
	// sendGap delays the message being sent by its place in its node's
	// Ready (Config.SendGapUs).
	sendGap int64
	lastAt  map[int64]int64 // FIFO: per link (from<<32 | to), the last arrival time
	links   []linkSet       // FIFO: per receiver, its links in use (fifo); made at the first use
	// Sent counts every message handed to the network, by type, including
	// those to crashed or cut-off nodes.
	Sent     [core.NumMsgTypes]uint64
	Lost     uint64 // lost to Loss, crashes and partitions
	triggers []Trigger
	check    *Checker
	inFlight [core.NumMsgTypes]int
	// inFlightAll sums inFlight.
	inFlightAll int
	stopped     bool // a runaway storm stopped the run (see runaway)
	// stallEnd: per stalled node (by index), the virtual ms it resumes at.
	stallEnd map[int32]int64
	// Ticks are event-driven: a node is ticked only when a timer of its
	// own can fire (core.Node.NextDeadline). Each node ticks at a phase
	// (an offset within TickMs); a phase counts its ticks, and a node's
	// ticks since it last took an input are applied at its next input at
	// once (core.Node.Skip). One tick event per phase, not per node.
	phases []phase
	due    []int
	nextTo int // the node find tries first
}

// simNode is a node as the simulator runs it. The fields read at every
// input come first, in one cache line (the slab of simNodes is page
// aligned and a simNode is 5 lines): a heartbeat round to 10,000 members
// touches little of each.
type simNode struct {
	node  *core.Node
	idx   int32 // index in Sim.nodes
	phase int32 // index in Sim.phases
	inc   int64 // incarnation: bumped by every restart
	// synced is the phase tick up to which the node has been ticked (or
	// skipped); wake is the phase tick at which it is next due (0: none).
	synced, wake int
	// The highest term the checker saw the node hold in an incarnation.
	termCheck
	up bool
	// leads: the node's last Ready said it is coordinator (last.State),
	// which the checker looks at after every input.
	leads bool
	// quiet: messages were delivered to the node that left nothing to
	// hand over but counts (core.Node.HasReady), which wait in its Ready
	// (takeQuiet).
	quiet bool
	// stalled: the node's process does not run (Stall); its ticks wait
	// and its inputs are held until it resumes.
	stalled bool

	id   string
	last core.Status // the status of the node's last Ready
	// counted sums the Counters of the node's Readies since it last
	// started (Counted).
	counted core.Counters
}

// New builds a cluster in which every node is up and asleep (it will elect
// after its start-up window); Bootstrap settles it first instead.
func New(cfg Config) (*Sim, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	roster, err := core.NewRoster(cfg.Members)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &Sim{cfg: cfg, roster: roster, queue: &eventQueue{}, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		group: map[string]int{}, lastAt: map[int64]int64{}, viewSeq: map[[2]int]uint64{}}
	if s.host, err = core.NewHost(s.coreConfig("")); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s.check = newChecker(s)
	if len(cfg.Names) > 0 {
		if err := s.checkNames(cfg.Names); err != nil {
			return nil, err
		}
		for _, nm := range cfg.Names {
			s.appendName(nm)
		}
		s.cfg.Names = nil // s.names holds them, with those added later
	}
	// Each node ticks at a random phase of the tick interval.
	offsets := make([]int64, len(cfg.Members))
	ids := map[int64]int{}
	for i := range offsets {
		offsets[i] = s.rng.Int64N(cfg.TickMs)
		ids[offsets[i]] = 0
	}
	for off := range ids {
		s.phases = append(s.phases, phase{offset: off})
	}
	slices.SortFunc(s.phases, func(a, b phase) int { return cmp.Compare(a.offset, b.offset) })
	for i, p := range s.phases {
		ids[p.offset] = i
	}
	// Every node is due once booted: each phase's wake heap gets room
	// for its nodes at once, not by doubling.
	perPhase := make([]int, len(s.phases))
	for _, off := range offsets {
		perPhase[ids[off]]++
	}
	for i, k := range perPhase {
		s.phases[i].wakes = make(wakeQueue, 0, k)
	}
	s.nodes = make([]*simNode, 0, len(cfg.Members))
	s.cores = make([]*core.Node, len(cfg.Members))
	if s.named() {
		s.groups = make([]*memberGroup, len(cfg.Members))
		slab := make([]simNode, len(cfg.Members))
		for i, p := range cfg.Members {
			sn := &slab[i]
			*sn = simNode{idx: int32(i), id: p.ID, phase: int32(ids[offsets[i]])}
			s.nodes = append(s.nodes, sn)
			if err := s.bootGroup(sn); err != nil {
				return nil, err
			}
		}
		for i, p := range s.phases {
			s.schedule(event{at: p.offset, kind: evTick, node: int32(i)})
		}
		return s, nil
	}
	// The simNodes and the state machines are built in a slice each,
	// which the kernel backs with huge pages where it can: at n =
	// 1,000,000 they are 0.3 and 1.2 GB, whose first touch in 4-KB pages
	// cost more than building the nodes (core.Host.InitNode).
	slab := make([]simNode, len(cfg.Members))
	adviseHuge(unsafe.Pointer(unsafe.SliceData(slab)), uintptr(len(slab))*unsafe.Sizeof(slab[0]))
	cores := make([]core.Node, len(cfg.Members))
	adviseHuge(unsafe.Pointer(unsafe.SliceData(cores)), uintptr(len(cores))*unsafe.Sizeof(cores[0]))
	for i, p := range cfg.Members {
		sn := &slab[i]
		*sn = simNode{idx: int32(i), id: p.ID, phase: int32(ids[offsets[i]])}
		s.nodes = append(s.nodes, sn)
		if err := s.bootIn(sn, &cores[i]); err != nil {
			return nil, err
		}
	}
	for i, p := range s.phases {
		s.schedule(event{at: p.offset, kind: evTick, node: int32(i)})
	}
	return s, nil
}

func (c *Config) fill() error {
	if len(c.Members) == 0 {
		return fmt.Errorf("sim: Config.Members is empty: want at least one member")
	}
	if c.TickMs == 0 {
		c.TickMs = 10
	}
	if c.DelayMin == 0 && c.DelayMax == 0 {
		c.DelayMin, c.DelayMax = 1, 5
	}
	if c.ViewDelayMaxMs < 0 || c.ViewDelayMaxMs > maxMs || c.ViewDelayMs > maxMs {
		return fmt.Errorf("sim: ViewDelayMs = %d, ViewDelayMaxMs = %d: want at most %d", c.ViewDelayMs, c.ViewDelayMaxMs, maxMs)
	}
	if c.TickMs < 1 || c.TickMs > maxMs || c.DelayMin < 0 || c.DelayMax < c.DelayMin || c.DelayMax > maxMs {
		return fmt.Errorf("sim: TickMs = %d, delay = %d-%d: want 1 <= TickMs <= %d and 0 <= min <= max <= %d",
			c.TickMs, c.DelayMin, c.DelayMax, maxMs, maxMs)
	}
	if c.SendGapUs < 0 || c.SendGapUs > 1_000_000 {
		return fmt.Errorf("sim: SendGapUs = %d: want 0 to 1000000 (1 s per message)", c.SendGapUs)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", c.Loss}, {"Dup", c.Dup}, {"Reorder", c.Reorder}} {
		if p.v < 0 || p.v > 1 {
			return fmt.Errorf("sim: Config.%s = %v: want a probability in [0, 1]", p.name, p.v)
		}
	}
	if c.Algorithm == core.Peterson {
		c.FIFO = true
	}
	return nil
}

// boot (re)creates a node's state machine (with names, its group): a
// restart loses all state.
func (s *Sim) boot(sn *simNode) error {
	if s.named() {
		return s.bootGroup(sn)
	}
	return s.bootIn(sn, new(core.Node))
}

// bootIn is boot building the state machine in n (core.Host.InitNode).
func (s *Sim) bootIn(sn *simNode, n *core.Node) error {
	if err := s.host.InitNode(n, sn.id, s.roster); err != nil {
		return fmt.Errorf("sim: node %s: %w", sn.id, err)
	}
	sn.node, sn.up = n, true
	s.cores[sn.idx] = n
	sn.last, sn.counted, sn.leads, sn.quiet = n.Status(), core.Counters{}, false, false
	// A node (re)started now has had none of its phase's ticks so far.
	// (No restart happens while a phase's nodes are being ticked: only
	// crashes do, through triggers.)
	sn.synced, sn.wake = s.phases[sn.phase].ticks, 0
	s.reschedule(sn)
	return nil
}

// Bootstrap settles the cluster before the run: every node follows
// coordinator in term 1.coordinator's tag, as if it had won an election.
// With names, every name follows its own highest-ranked candidate
// instead, and coordinator must be Highest().
func (s *Sim) Bootstrap(coordinator string) error {
	if _, ok := s.find(coordinator); !ok {
		return fmt.Errorf("sim: bootstrap coordinator %q is not a member", coordinator)
	}
	if s.named() {
		if coordinator != s.Highest() {
			return fmt.Errorf("sim: bootstrap coordinator %q: with names each name starts with its own highest candidate", coordinator)
		}
		s.bootstrapNames()
		return nil
	}
	t := core.MakeTerm(1, core.Tag(coordinator))
	for _, sn := range s.nodes {
		if sn.up {
			s.input(sn).Bootstrap(coordinator, t)
			s.flush(sn)
		}
	}
	return nil
}

// Highest returns the ID of the highest-ranked voter (the highest-ranked
// member when every member is a non-voter): the one a settled cluster
// follows. With names: the first name's highest-ranked candidate.
func (s *Sim) Highest() string {
	if s.named() {
		return s.highestFor(0)
	}
	for i := s.roster.Len() - 1; i >= 0; i-- {
		if p := s.roster.ByRank(i); !p.NonVoter {
			return p.ID
		}
	}
	return s.roster.ByRank(s.roster.Len() - 1).ID
}

// Now is the virtual time in milliseconds.
func (s *Sim) Now() int64 { return s.now }

// Node returns a node's state machine (nil if id is unknown, or with
// names: see NodeOf), brought up to the present: to read, not to feed
// (inputs go through the Sim, which then knows to tick the node when its
// timers come due).
func (s *Sim) Node(id string) *core.Node {
	if sn, ok := s.find(id); ok {
		if sn.up {
			s.sync(sn)
		}
		return sn.node
	}
	return nil
}

// Counted returns what node id has counted since it last started (drops
// by reason, elections, heartbeat misses...): the Counters of the Readies
// the simulator has taken from it.
func (s *Sim) Counted(id string) core.Counters {
	if sn, ok := s.find(id); ok {
		s.takeQuiet(sn)
		return sn.counted
	}
	return core.Counters{}
}

// Up reports whether a node is running.
func (s *Sim) Up(id string) bool { sn, ok := s.find(id); return ok && sn.up }

// IDs returns the members' IDs in ring order.
func (s *Sim) IDs() []string {
	out := make([]string, len(s.nodes))
	for i, sn := range s.nodes {
		out[i] = sn.id
	}
	return out
}

// Checker returns the safety and liveness checker.
func (s *Sim) Checker() *Checker { return s.check }

// tracing reports whether trace lines are wanted: the callers on hot paths
// ask first, so that a run without a trace does not build (and box) the
// arguments of lines nobody reads.
func (s *Sim) tracing() bool { return s.cfg.Trace != nil }

func (s *Sim) tracef(format string, args ...any) {
	if s.cfg.Trace != nil {
		s.cfg.Trace(fmt.Sprintf("%6dms  ", s.now) + fmt.Sprintf(format, args...))
	}
}

func (s *Sim) schedule(e event) {
	if s.stopped {
		return
	}
	s.seq++
	e.seq = s.seq
	s.queue.push(e)
}
