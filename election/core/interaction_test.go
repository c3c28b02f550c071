package core_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/coordelect/coordelect/election/core"
)

// TestInteraction runs the interaction tests in testdata/interaction: a
// handful of core.Node driven through the exported API only (NewNode, Tick,
// Advance, Step, PeerUp/PeerDown, Ready, Status, Hold, Resign, TransferTo,
// ...) over a tiny in-test network that delivers only when told to, in the
// manner of etcd raft's interaction tests. Regenerate the expected output
// with
//
//	go test ./election/core -run TestInteraction -rewrite
//
// and review the diff: every change must be one the core's parts promise.
//
// The commands (arguments in brackets are optional; IDs are the roster's):
//
//	nodes ids=(1,2,3) [ratings=(...)] [nonvoters=(...)] [alg=bully|ring|peterson]
//	      [mode=textbook|view] [coordinator=ID] [preempt=always|margin|never]
//	      [bootstrap] [INT-SETTING=N ...]
//	    Builds the nodes (one roster, ratings default to the numeric ID).
//	    coordinator=ID settles them with Node.Bootstrap in term 1.ID (a
//	    majority's lease just granted). INT-SETTING is one of the Config
//	    timings named in intSettings (quorum=, heartbeat=, misses=, lease=,
//	    ...). Prints every node's status.
//	tick [n=1] [nodes=(...)]
//	    Ticks the nodes (default: every live one) n times, one tick at a
//	    time, and queues what they send. Delivers nothing.
//	advance n=K [nodes=(...)]
//	    Node.Advance(K): the nodes' loops ran K ticks late.
//	deliver [from=ID] [to=ID] [type=TYPE] [drop]
//	    Steps (or, with drop, discards) the messages in flight that match,
//	    in the order they were sent; what the receivers send in answer
//	    stays in flight.
//	stabilize [drop=(TYPE,...)]
//	    Delivers everything in flight, answers included, until nothing is
//	    left; messages of the types named are lost. No tick passes.
//	run n=N [drop=(TYPE,...)] [delay=D [slow=(TYPE,...)]] [verbose]
//	    N times: tick every live node, then deliver what is due, answers
//	    included. Messages take no time, but those sent during the run
//	    of the slow types (default: all) take D ticks; what is not due
//	    when the run ends stays in flight. Shows only status changes and
//	    counts unless verbose.
//	partition ids=(...) | cut from=ID to=ID | heal
//	    partition cuts every link between the nodes named and the others,
//	    cut the one link from one node to another (one way); messages
//	    across a cut are lost when delivered. heal mends every cut.
//	crash node=ID
//	    The node stops: it ticks no more and messages to it are lost.
//	peer-down id=ID [nodes=(...)] | peer-up id=ID [nodes=(...)]
//	    The nodes' views (default: every other live node's) lose or regain
//	    member id (View mode).
//	resign node=ID | transfer node=ID to=ID | complete-handoff node=ID
//	set-rating node=ID rating=R
//	    The API call of that name on the node (Resign, TransferTo,
//	    CompleteHandoff, SetRating); an error it returns is printed.
//	status
//	    Every node's status, with its lease, hold, isolation and hand-off.
//	hold [nodes=(...)]
//	    Node.Hold and Node.Startup of the nodes (default: all).
//
// Output: "> t=T WHO EVENT" heads what one event into one node produced,
// T the node's own tick count; below it, indented, the messages it sent
// ("from->to type term=E.T field=value ...", every non-zero field of
// core.Message but From, To, Type, Term and Rating, by reflection), a line
// "ID: STATE [coord=C] term=E.T [electing]" when the node's status changed,
// and a line "ID: counts ..." when it counted an election, a miss, a
// deposition or a drop.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata/interaction", func(t *testing.T, path string) {
		e := &env{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			e.out.Reset()
			if err := e.handle(td); err != nil {
				return "error: " + err.Error() + "\n"
			}
			if e.out.Len() == 0 {
				return "ok\n"
			}
			return e.out.String()
		})
	})
}

// env is the network of nodes one test file drives.
type env struct {
	ids      []string // roster order
	nodes    map[string]*core.Node
	roster   *core.Roster
	crashed  map[string]bool
	side     map[string]bool    // one side of a partition; nil when healed
	cuts     map[[2]string]bool // links cut one way, from → to
	inflight []flight
	clock    int                   // run's ticks: when a delayed message falls due
	shown    map[string]string     // the status line each node last printed
	quiet    bool                  // run: no message lines
	lose     map[core.MsgType]bool // run, stabilize: messages of these types are lost
	delay    int                   // run: ticks a message of a slow type takes
	slow     map[core.MsgType]bool // run: the types delay applies to (nil: all)
	out      strings.Builder
}

// flight is a message on its way: run delivers it once clock reaches due;
// deliver and stabilize deliver it whenever.
type flight struct {
	m   core.Message
	due int
}

func (e *env) handle(td *datadriven.TestData) error {
	c, ok := commands[td.Cmd]
	switch {
	case !ok:
		return fmt.Errorf("unknown command %q (want one of %s)", td.Cmd, strings.Join(slices.Sorted(maps.Keys(commands)), ", "))
	case td.Cmd != "nodes" && e.nodes == nil:
		return fmt.Errorf("%s: no nodes yet", td.Cmd)
	}
	a := argsOf(td)
	for k := range a {
		if !slices.Contains(c.keys, k) {
			return fmt.Errorf("%s: unknown argument %q (want some of %s)", td.Cmd, k, strings.Join(c.keys, ", "))
		}
	}
	return c.fn(e, a)
}

// command is one command's handler and the argument keys it takes: any
// other key is an error, so that a misspelt one cannot pass unnoticed.
type command struct {
	fn   func(*env, args) error
	keys []string
}

var commands = map[string]command{
	"nodes": {(*env).handleNodes, append([]string{"ids", "ratings", "nonvoters", "alg", "mode", "coordinator",
		"preempt", "preempt-margin", "bootstrap"}, slices.Sorted(maps.Keys(intSettings))...)},
	"tick":             {(*env).handleTick, []string{"n", "nodes"}},
	"advance":          {(*env).handleAdvance, []string{"n", "nodes"}},
	"deliver":          {(*env).handleDeliver, []string{"from", "to", "type", "drop"}},
	"stabilize":        {(*env).handleStabilize, []string{"drop"}},
	"run":              {(*env).handleRun, []string{"n", "drop", "delay", "slow", "verbose"}},
	"partition":        {(*env).handlePartition, []string{"ids"}},
	"cut":              {(*env).handleCut, []string{"from", "to"}},
	"heal":             {(*env).handleHeal, nil},
	"crash":            {(*env).handleCrash, []string{"node"}},
	"peer-down":        {(*env).handlePeerDown, []string{"id", "nodes"}},
	"peer-up":          {(*env).handlePeerUp, []string{"id", "nodes"}},
	"resign":           {(*env).handleResign, []string{"node"}},
	"transfer":         {(*env).handleTransfer, []string{"node", "to"}},
	"complete-handoff": {(*env).handleCompleteHandoff, []string{"node"}},
	"set-rating":       {(*env).handleSetRating, []string{"node", "rating"}},
	"status":           {(*env).handleStatus, nil},
	"hold":             {(*env).handleHold, []string{"nodes"}},
}

// args is a command's arguments by key; a bare word has no values.
type args map[string][]string

func argsOf(td *datadriven.TestData) args {
	a := args{}
	for _, c := range td.CmdArgs {
		a[c.Key] = c.Vals
	}
	return a
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) str(k, def string) string {
	if v := a[k]; len(v) > 0 {
		return v[0]
	}
	return def
}

func (a args) int(k string, def int) (int, error) {
	v := a[k]
	if len(v) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, fmt.Errorf("%s=%s: want an integer", k, v[0])
	}
	return n, nil
}

// intSettings are the integer Config fields that nodes sets, by argument.
var intSettings = map[string]func(*core.Config) *int{
	"quorum":       func(c *core.Config) *int { return &c.QuorumSize },
	"heartbeat":    func(c *core.Config) *int { return &c.HeartbeatInterval },
	"misses":       func(c *core.Config) *int { return &c.HeartbeatMisses },
	"lease":        func(c *core.Config) *int { return &c.QuorumLease },
	"max-lease":    func(c *core.Config) *int { return &c.QuorumLeaseMax },
	"lease-margin": func(c *core.Config) *int { return &c.LeaseMargin },
	"startup":      func(c *core.Config) *int { return &c.StartupDelay },
	"answer":       func(c *core.Config) *int { return &c.AnswerTimeout },
	"wait":         func(c *core.Config) *int { return &c.CoordinatorTimeout },
	"rtt":          func(c *core.Config) *int { return &c.RoundTrip },
	"expect":       func(c *core.Config) *int { return &c.ExpectVoters },
	"expect-ticks": func(c *core.Config) *int { return &c.ExpectWindow },
	"solo":         func(c *core.Config) *int { return &c.SoloDelay },
	"handoff":      func(c *core.Config) *int { return &c.StopTimeout },
}

func (e *env) handleNodes(a args) error {
	base, err := baseConfig(a)
	if err != nil {
		return err
	}
	roster, err := buildRoster(a)
	if err != nil {
		return err
	}
	*e = env{nodes: map[string]*core.Node{}, roster: roster,
		crashed: map[string]bool{}, shown: map[string]string{}}
	for _, p := range roster.Members() {
		cfg := base
		cfg.ID, cfg.Roster = p.ID, roster
		n, err := core.NewNode(cfg)
		if err != nil {
			return err
		}
		e.ids, e.nodes[p.ID] = append(e.ids, p.ID), n
		e.shown[p.ID] = statusLine(n.Status(), n.Electing())
	}
	if c := a.str("coordinator", ""); c != "" {
		if _, ok := e.nodes[c]; !ok {
			return fmt.Errorf("coordinator=%s: not a member", c)
		}
		for _, id := range e.ids {
			e.nodes[id].Bootstrap(c, core.MakeTerm(1, core.Tag(c)))
			e.collect(id, "bootstrap")
		}
		e.inflight = e.inflight[:0] // a settled cluster: nothing is on its way
		e.out.Reset()
	}
	return e.handleStatus(a)
}

func baseConfig(a args) (core.Config, error) {
	var cfg core.Config // zero timings take their defaults in NewNode
	var err error
	if cfg.Algorithm, err = core.ParseAlgorithm(a.str("alg", "bully")); err != nil {
		return cfg, err
	}
	switch m := a.str("mode", "view"); m {
	case "view":
		cfg.Mode = core.View
	case "textbook":
		cfg.Mode = core.Textbook
	default:
		return cfg, fmt.Errorf("mode=%s: want view or textbook", m)
	}
	switch p := a.str("preempt", "always"); p {
	case "always":
		cfg.Preemption = core.PreemptAlways
	case "margin":
		cfg.Preemption = core.PreemptMargin
	case "never":
		cfg.Preemption = core.PreemptNever
	default:
		return cfg, fmt.Errorf("preempt=%s: want always, margin or never", p)
	}
	m, err := a.int("preempt-margin", 0)
	if err != nil {
		return cfg, err
	}
	cfg.PreemptMargin, cfg.Bootstrap = int64(m), a.has("bootstrap")
	for k, field := range intSettings {
		if p := field(&cfg); a.has(k) {
			if *p, err = a.int(k, 0); err != nil {
				return cfg, err
			}
		}
	}
	return cfg, nil
}

func buildRoster(a args) (*core.Roster, error) {
	ids, ratings := a["ids"], a["ratings"]
	if len(ids) == 0 {
		return nil, fmt.Errorf("ids=(...) is required")
	}
	if len(ratings) > 0 && len(ratings) != len(ids) {
		return nil, fmt.Errorf("ratings=%v: want one per id", ratings)
	}
	peers := make([]core.Peer, len(ids))
	for i, id := range ids {
		src := id
		if len(ratings) > 0 {
			src = ratings[i]
		}
		r, err := strconv.ParseInt(src, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rating of %s = %q: want an integer", id, src)
		}
		peers[i] = core.Peer{ID: id, Rating: r, NonVoter: slices.Contains(a["nonvoters"], id)}
	}
	return core.NewRoster(peers)
}

// targets returns the nodes named by key (a list), or every live node.
func (e *env) targets(a args, key string) ([]string, error) {
	ids, ok := a[key]
	if !ok {
		return slices.DeleteFunc(slices.Clone(e.ids), func(id string) bool { return e.crashed[id] }), nil
	}
	for _, id := range ids {
		if _, ok := e.nodes[id]; !ok {
			return nil, fmt.Errorf("%s: %s is not a node", key, id)
		}
	}
	return ids, nil
}

// node returns the node named by key.
func (e *env) node(a args, key string) (string, *core.Node, error) {
	id := a.str(key, "")
	n, ok := e.nodes[id]
	if !ok {
		return "", nil, fmt.Errorf("%s=%s: not a node", key, id)
	}
	return id, n, nil
}

func (e *env) handleTick(a args) error {
	k, err := a.int("n", 1)
	if err != nil {
		return err
	}
	ids, err := e.targets(a, "nodes")
	if err != nil {
		return err
	}
	for range k {
		e.tick(ids)
	}
	return nil
}

func (e *env) tick(ids []string) {
	for _, id := range ids {
		if !e.crashed[id] {
			e.nodes[id].Tick()
			e.collect(id, "tick")
		}
	}
}

func (e *env) handleAdvance(a args) error {
	k, err := a.int("n", 1)
	if err != nil {
		return err
	}
	ids, err := e.targets(a, "nodes")
	if err != nil {
		return err
	}
	for _, id := range ids {
		e.nodes[id].Advance(k)
		e.collect(id, fmt.Sprintf("advance %d", k))
	}
	return nil
}

func (e *env) handleDeliver(a args) error {
	var typ core.MsgType
	if s := a.str("type", ""); s != "" {
		var err error
		if typ, err = msgType(s); err != nil {
			return err
		}
	}
	from, to, drop := a.str("from", ""), a.str("to", ""), a.has("drop")
	match := func(m core.Message) bool {
		return (from == "" || m.From == from) && (to == "" || m.To == to) && (typ == 0 || m.Type == typ)
	}
	var picked []core.Message
	rest := e.inflight[:0:0]
	for _, f := range e.inflight {
		if match(f.m) {
			picked = append(picked, f.m)
		} else {
			rest = append(rest, f)
		}
	}
	e.inflight = rest
	if len(picked) == 0 {
		e.line("no messages")
	}
	for _, m := range picked {
		if drop {
			e.line("dropped: " + describe(m))
			continue
		}
		e.deliver(m)
	}
	return nil
}

// deliver steps m into its receiver, unless the receiver is down or a cut
// lies between them.
func (e *env) deliver(m core.Message) {
	n, ok := e.nodes[m.To]
	switch {
	case !ok || e.crashed[m.To]:
		e.lost(m, "down")
	case e.side != nil && e.side[m.From] != e.side[m.To] || e.cuts[[2]string{m.From, m.To}]:
		e.lost(m, "cut")
	case e.lose[m.Type]:
		e.lost(m, "drop")
	default:
		n.Step(m)
		e.collect(m.To, describe(m))
	}
}

func (e *env) lost(m core.Message, why string) {
	if !e.quiet {
		e.line(fmt.Sprintf("lost (%s): %s", why, describe(m)))
	}
}

func (e *env) handleStabilize(a args) error {
	if err := e.setLose(a); err != nil {
		return err
	}
	defer func() { e.lose = nil }()
	return e.stabilize(true)
}

// setLose reads drop=(type,...): the message types lost while the command
// runs.
func (e *env) setLose(a args) error {
	e.lose = nil
	for _, s := range a["drop"] {
		t, err := msgType(s)
		if err != nil {
			return err
		}
		if e.lose == nil {
			e.lose = map[core.MsgType]bool{}
		}
		e.lose[t] = true
	}
	return nil
}

func msgType(s string) (core.MsgType, error) {
	i := slices.IndexFunc(core.MsgTypes(), func(t core.MsgType) bool { return t.String() == s })
	if i < 0 {
		return 0, fmt.Errorf("type %q: not a message type", s)
	}
	return core.MsgTypes()[i], nil
}

// stabilize delivers, in the order sent, every message in flight that is
// due by the clock (all of them when all is set), answers included, until
// none is left.
func (e *env) stabilize(all bool) error {
	for steps := 0; ; steps++ {
		i := slices.IndexFunc(e.inflight, func(f flight) bool { return all || f.due <= e.clock })
		if i < 0 {
			return nil
		}
		if steps > 10000 {
			return fmt.Errorf("still %d messages in flight after 10000 deliveries", len(e.inflight))
		}
		m := e.inflight[i].m
		e.inflight = slices.Delete(e.inflight, i, i+1)
		e.deliver(m)
	}
}

func (e *env) handleRun(a args) error {
	k, err := a.int("n", 1)
	if err != nil {
		return err
	}
	if err := e.setLose(a); err != nil {
		return err
	}
	if e.delay, err = a.int("delay", 0); err != nil {
		return err
	}
	e.slow = nil
	for _, s := range a["slow"] {
		t, err := msgType(s)
		if err != nil {
			return err
		}
		if e.slow == nil {
			e.slow = map[core.MsgType]bool{}
		}
		e.slow[t] = true
	}
	e.quiet = !a.has("verbose")
	defer func() { e.quiet, e.lose, e.delay, e.slow = false, nil, 0, nil }()
	for range k {
		e.clock++
		live, _ := e.targets(args{}, "")
		e.tick(live)
		if err := e.stabilize(false); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) handlePartition(a args) error {
	ids, err := e.targets(a, "ids")
	if err != nil {
		return err
	}
	e.side = map[string]bool{}
	for _, id := range ids {
		e.side[id] = true
	}
	return nil
}

func (e *env) handleCut(a args) error {
	from, _, err := e.node(a, "from")
	if err != nil {
		return err
	}
	to, _, err := e.node(a, "to")
	if err != nil {
		return err
	}
	if e.cuts == nil {
		e.cuts = map[[2]string]bool{}
	}
	e.cuts[[2]string{from, to}] = true
	return nil
}

func (e *env) handleHeal(args) error { e.side, e.cuts = nil, nil; return nil }

func (e *env) handleCrash(a args) error {
	id, _, err := e.node(a, "node")
	if err != nil {
		return err
	}
	e.crashed[id] = true
	return nil
}

// viewers returns the nodes whose view a peer-down or peer-up of id
// changes: those named by nodes=, else every other live node.
func (e *env) viewers(a args) (string, []string, error) {
	id, _, err := e.node(a, "id")
	if err != nil {
		return "", nil, err
	}
	ids, err := e.targets(a, "nodes")
	return id, slices.DeleteFunc(ids, func(v string) bool { return v == id }), err
}

func (e *env) handlePeerDown(a args) error {
	id, ids, err := e.viewers(a)
	if err != nil {
		return err
	}
	for _, v := range ids {
		e.nodes[v].PeerDown(id)
		e.collect(v, "peer-down "+id)
	}
	return nil
}

func (e *env) handlePeerUp(a args) error {
	id, ids, err := e.viewers(a)
	if err != nil {
		return err
	}
	p, _ := e.roster.Get(id)
	for _, v := range ids {
		e.nodes[v].PeerUp(p)
		e.collect(v, "peer-up "+id)
	}
	return nil
}

// call runs one API call of the node named by node= and prints its error.
func (e *env) call(a args, what string, fn func(*core.Node) error) error {
	id, n, err := e.node(a, "node")
	if err != nil {
		return err
	}
	if err := fn(n); err != nil {
		e.line(fmt.Sprintf("%s: %s: %v", id, what, err))
	}
	e.collect(id, what)
	return nil
}

func (e *env) handleResign(a args) error {
	return e.call(a, "resign", (*core.Node).Resign)
}

func (e *env) handleTransfer(a args) error {
	to := a.str("to", "")
	return e.call(a, "transfer to "+to, func(n *core.Node) error { return n.TransferTo(to) })
}

func (e *env) handleCompleteHandoff(a args) error {
	return e.call(a, "complete-handoff", func(n *core.Node) error { n.CompleteHandoff(); return nil })
}

func (e *env) handleSetRating(a args) error {
	r, err := a.int("rating", 0)
	if err != nil {
		return err
	}
	return e.call(a, fmt.Sprintf("set-rating %d", r), func(n *core.Node) error { n.SetRating(int64(r)); return nil })
}

// collect takes the node's Ready after an event, queues its messages and
// prints what it produced under a header naming the event.
func (e *env) collect(id, event string) {
	n := e.nodes[id]
	rd := n.Ready()
	var lines []string
	for _, m := range rd.Messages {
		due := e.clock
		if e.slow == nil || e.slow[m.Type] {
			due += e.delay
		}
		e.inflight = append(e.inflight, flight{m: m.Clone(), due: due})
		if !e.quiet {
			lines = append(lines, describe(m))
		}
	}
	if l := statusLine(rd.Status, rd.Electing); l != e.shown[id] {
		e.shown[id] = l
		lines = append(lines, l)
	}
	if c := countsLine(rd); c != "" {
		lines = append(lines, id+": counts "+c)
	}
	if len(lines) == 0 && (e.quiet || event == "tick") {
		return // a tick that did nothing, or a quiet run's delivery
	}
	fmt.Fprintf(&e.out, "> t=%d %s %s\n", n.Now(), id, event)
	for _, l := range lines {
		e.out.WriteString("  " + l + "\n")
	}
}

func (e *env) line(s string) { e.out.WriteString(s + "\n") }

func statusLine(s core.Status, electing bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.ID, s.State)
	if s.Coordinator != "" {
		fmt.Fprintf(&b, " coord=%s", s.Coordinator)
	}
	fmt.Fprintf(&b, " term=%s", s.Term)
	if electing {
		b.WriteString(" electing")
	}
	return b.String()
}

// countsLine names what the node counted that a test asserts: elections
// (with the cause of the last started), heartbeat misses, depositions and
// drops by reason. Received messages are left out: the deliveries show them.
func countsLine(rd *core.Ready) string {
	var f []string
	add := func(name string, v uint64) {
		if v > 0 {
			f = append(f, fmt.Sprintf("%s=%d", name, v))
		}
	}
	add("started", rd.ElectionsStarted)
	if rd.ElectionsStarted > 0 {
		f = append(f, "cause="+rd.Cause.String())
	}
	add("restarted", rd.ElectionsRestarted)
	add("won", rd.ElectionsWon)
	add("lost", rd.ElectionsLost)
	add("misses", rd.HeartbeatMisses)
	add("deposed", rd.Deposed)
	for r, v := range rd.Dropped {
		add("dropped-"+core.DropReason(r).String(), v)
	}
	return strings.Join(f, " ")
}

// describeOrder is the order in which describe prints the fields of
// core.Message it names; any other field follows in declaration order.
var describeOrder = []string{"Coordinator", "Initiator", "List", "Value",
	"Lap", "Index", "Phase", "Phases", "Lag", "PromiseLeft", "Preempt",
	"Confirmed", "Granted", "Transfer", "Abdicated", "Released", "BestEffort", "Unordered",
	"Every", "Lease", "Seq"}

// describe formats a message: sender, receiver, type and term, then every
// other non-zero field of core.Message by its lower-cased name (by
// reflection, so that the output names whatever fields the message has),
// in describeOrder.
func describe(m core.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s->%s %s term=%s", m.From, m.To, m.Type, m.Term)
	v := reflect.ValueOf(m)
	fields := make([]reflect.StructField, 0, v.NumField())
	for _, name := range describeOrder {
		if f, ok := v.Type().FieldByName(name); ok {
			fields = append(fields, f)
		}
	}
	for i := range v.NumField() {
		if f := v.Type().Field(i); !slices.Contains(describeOrder, f.Name) {
			fields = append(fields, f)
		}
	}
	for _, f := range fields {
		val := v.FieldByIndex(f.Index)
		switch f.Name {
		case "Type", "From", "To", "Term", "Rating":
			continue
		}
		if !f.IsExported() || val.IsZero() {
			continue
		}
		name := strings.ToLower(f.Name)
		switch x := val.Interface().(type) {
		case bool:
			b.WriteString(" " + name)
		case []core.Peer:
			ids := make([]string, len(x))
			for j, p := range x {
				ids[j] = p.ID
			}
			fmt.Fprintf(&b, " %s=(%s)", name, strings.Join(ids, ","))
		case core.Rank:
			fmt.Fprintf(&b, " %s=%d/%s", name, x.Rating, x.ID)
		default:
			fmt.Fprintf(&b, " %s=%v", name, x)
		}
	}
	return b.String()
}

func (e *env) handleStatus(args) error {
	for _, id := range e.ids {
		n := e.nodes[id]
		s := n.Status()
		line := fmt.Sprintf("%s t=%d", statusLine(s, n.Electing()), n.Now())
		if end, ok := n.LeaseEnd(); ok {
			line += fmt.Sprintf(" lease-end=%d ask=%d", end, n.LeaseAsk())
		}
		if h := n.Hold(); h.Reason != core.HoldNone {
			line += " " + holdText(h)
		}
		if n.Isolated() {
			line += " isolated"
		}
		if n.HandoffPending() {
			line += " handoff-pending"
		}
		if e.crashed[id] {
			line += " crashed"
		}
		e.line(line)
	}
	return nil
}

func holdText(h core.Hold) string {
	if h.Reason == core.HoldNone {
		return "hold=none"
	}
	s := fmt.Sprintf("hold=%s voters=%d", h.Reason, h.Voters)
	if h.Need > 0 {
		s += fmt.Sprintf(" need=%d", h.Need)
	}
	if h.Until > 0 {
		s += fmt.Sprintf(" until=%d", h.Until)
	}
	return s
}

func (e *env) handleHold(a args) error {
	ids, err := e.targets(a, "nodes")
	if err != nil {
		return err
	}
	for _, id := range ids {
		n := e.nodes[id]
		st := n.Startup()
		line := fmt.Sprintf("%s: t=%d %s startup:", id, n.Now(), holdText(n.Hold()))
		if st.Holding {
			line += " holding"
		}
		if st.Short {
			line += " short"
		}
		e.line(fmt.Sprintf("%s voters=%d expect=%d", line, st.Voters, st.Expect))
	}
	return nil
}
