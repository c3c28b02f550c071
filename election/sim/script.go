package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// Script runs the scenario language (docs/scenarios.md): one command per
// line with key=value arguments, as parsed by cockroachdb/datadriven. Each
// command returns the trace of what happened while it ran.
type Script struct {
	sim  *Sim
	out  strings.Builder
	last string // what "@coord" last resolved to; "@last" names it
	// names are the names declared before "cluster", which it builds the
	// cluster with.
	names []Name
	// dense: tick every node at every tick (Config.dense; tests only).
	dense bool
}

// Sim returns the cluster the script built (nil before "cluster").
func (sc *Script) Sim() *Sim { return sc.sim }

// Exec runs one command and returns its output.
func (sc *Script) Exec(cmd string, args []datadriven.CmdArg) (string, error) {
	sc.out.Reset()
	if cmd != "cluster" && cmd != "name" && cmd != "names" && sc.sim == nil {
		return "", fmt.Errorf("%s: no cluster yet (start with \"cluster\")", cmd)
	}
	fn, ok := commands[cmd]
	if !ok {
		return "", fmt.Errorf("unknown command %q (want one of %s)", cmd, strings.Join(commandNames(), ", "))
	}
	if err := fn(sc, argMap(args)); err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	return sc.out.String(), nil
}

// ExecLine parses and runs one command line.
func (sc *Script) ExecLine(line string) (string, error) {
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil {
		return "", err
	}
	if cmd == "" {
		return "", nil
	}
	return sc.Exec(cmd, args)
}

var commands map[string]func(*Script, args) error

func init() {
	commands = map[string]func(*Script, args) error{
		"cluster": (*Script).cluster, "crash": (*Script).crash, "restart": (*Script).restart,
		"partition": (*Script).partition, "heal": (*Script).heal, "detect": (*Script).detect,
		"resign": (*Script).resign, "rating": (*Script).rating, "network": (*Script).network,
		"deliver": (*Script).deliver, "advance": (*Script).advance, "stabilize": (*Script).stabilize,
		"status": (*Script).status, "messages": (*Script).messages, "check": (*Script).checkCmd,
		"block": (*Script).block, "stall": (*Script).stall, "forge": (*Script).forge, "isolate": (*Script).isolate, "views": (*Script).views,
		"name": (*Script).name, "names": (*Script).namesCmd,
	}
}

func commandNames() []string { return slices.Sorted(maps.Keys(commands)) }

func (sc *Script) trace(line string) { sc.out.WriteString(line + "\n") }

// cluster algorithm=bully ids=(1,2,3) [ratings=(...)] [mode=textbook|view]
// [seed=N] [delay=MIN-MAX] [loss=P] [dup=P] [reorder=P] [tick=MS]
// [coordinator=ID|highest|none] [detector=on|off] [quorum=S]
// [view-delay=MS] [nonvoters=(...)] [answer=T] [wait=T'] [heartbeat=H]
// [misses=K]
func (sc *Script) cluster(a args) error {
	cfg, err := clusterConfig(a)
	if err != nil {
		return err
	}
	cfg.Trace, cfg.dense = sc.trace, sc.dense
	cfg.Names, sc.names = sc.names, nil
	s, err := New(cfg)
	if err != nil {
		return err
	}
	sc.sim = s
	for _, k := range a.kv["skip"] {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("skip=%s: unknown property (want some of %s)", k, strings.Join(Kinds, ", "))
		}
		if s.check.Skip == nil {
			s.check.Skip = map[string]bool{}
		}
		s.check.Skip[k] = true
	}
	switch c := a.str("coordinator", "highest"); {
	case c == "none":
	case c == "highest":
		err = s.Bootstrap(s.Highest())
	case s.named():
		err = fmt.Errorf("coordinator=%s: with names, want highest (each name's own) or none", c)
	default:
		err = s.Bootstrap(c)
	}
	if err != nil {
		return err
	}
	s.ResetCounts()
	return sc.status(a)
}

func clusterConfig(a args) (Config, error) {
	var cfg Config
	var err error
	if cfg.Algorithm, err = core.ParseAlgorithm(a.str("algorithm", "bully")); err != nil {
		return cfg, err
	}
	if cfg.Members, err = a.members(); err != nil {
		return cfg, err
	}
	switch m := a.str("mode", "textbook"); m {
	case "textbook":
	case "view":
		cfg.Mode = core.View
	default:
		return cfg, fmt.Errorf("mode=%s: want textbook or view", m)
	}
	if cfg.DelayMin, cfg.DelayMax, _, err = a.delay("delay"); err != nil {
		return cfg, err
	}
	cfg.HeartbeatDetector = a.str("detector", "off") == "on"
	ints := map[string]*int{"answer": &cfg.Core.AnswerTimeout, "wait": &cfg.Core.CoordinatorTimeout,
		"heartbeat": &cfg.Core.HeartbeatInterval, "misses": &cfg.Core.HeartbeatMisses, "quorum": &cfg.Core.QuorumSize}
	for k, p := range ints {
		if *p, err = a.int(k, 0); err != nil {
			return cfg, err
		}
	}
	var seed, tick int
	for k, p := range map[string]*int{"seed": &seed, "tick": &tick} {
		if *p, err = a.int(k, 0); err != nil {
			return cfg, err
		}
	}
	cfg.Seed, cfg.TickMs = uint64(seed), int64(tick)
	if v, ok := a.kv["view-delay"]; ok && strings.Contains(v[0], "-") && !strings.HasPrefix(v[0], "-") {
		if cfg.ViewDelayMs, cfg.ViewDelayMaxMs, err = a.span("view-delay", 0, 0); err != nil {
			return cfg, err
		}
	} else {
		vd, err := a.int("view-delay", 0)
		if err != nil {
			return cfg, err
		}
		cfg.ViewDelayMs = int64(vd)
	}
	for k, p := range map[string]*float64{"loss": &cfg.Loss, "dup": &cfg.Dup, "reorder": &cfg.Reorder} {
		if *p, err = a.float(k); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// crash ID [on=TYPE] [nth=N]: now, or when ID is about to send its Nth
// message of TYPE.
func (sc *Script) crash(a args) error {
	id, err := a.pos(0)
	if err != nil {
		return err
	}
	id = sc.resolve(id)
	on := a.str("on", "")
	if on == "" {
		return sc.sim.Crash(id)
	}
	t, err := parseMsgType(on)
	if err != nil {
		return err
	}
	nth, err := a.int("nth", 1)
	if err != nil {
		return err
	}
	if err := sc.sim.CrashOn(Trigger{Node: id, Type: t, Nth: nth}); err != nil {
		return err
	}
	sc.trace(fmt.Sprintf("armed: %s crashes before sending %s #%d", id, t, nth))
	return nil
}

func parseMsgType(s string) (core.MsgType, error) {
	for _, t := range core.MsgTypes() {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown message type %q", s)
}

func (sc *Script) restart(a args) error { return sc.each(a, sc.sim.Restart) }

// resign ID... [name=NAME]: with names, every name the node leads (or
// the one named) hands off.
func (sc *Script) resign(a args) error {
	fn, err := sc.perName(a, sc.sim.Resign, func(n *core.Node) { n.Resign() })
	if err != nil {
		return err
	}
	return sc.each(a, fn)
}

// detect ID... | detect all [name=NAME]: with names, every name's node
// (or the named one's) notices.
func (sc *Script) detect(a args) error {
	fn, err := sc.perName(a, sc.sim.Detect, (*core.Node).Detect)
	if err != nil {
		return err
	}
	if len(a.positional) == 1 && a.positional[0] == "all" {
		for _, id := range sc.sim.IDs() {
			if sc.sim.Up(id) {
				if err := fn(id); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return sc.each(a, fn)
}

// perName returns what a per-node command does: all, or, given name=NAME
// (names only), fn on that name's node.
func (sc *Script) perName(a args, all func(string) error, fn func(*core.Node)) (func(string) error, error) {
	name := a.str("name", "")
	if name == "" {
		return all, nil
	}
	if !sc.sim.named() {
		return nil, fmt.Errorf("name=%s: the cluster has no names", name)
	}
	return func(id string) error { return sc.sim.pokeNames(id, name, fn) }, nil
}

func (sc *Script) each(a args, fn func(string) error) error {
	if len(a.positional) == 0 {
		return fmt.Errorf("name at least one node")
	}
	for _, id := range a.positional {
		if err := fn(sc.resolve(id)); err != nil {
			return err
		}
	}
	return nil
}

// partition (1,2) (3,4) | partition ring=(3,1,5,2,4)
func (sc *Script) partition(a args) error {
	if order, ok := a.kv["ring"]; ok {
		return sc.sim.MajoritiesRing(order)
	}
	if len(a.groups) == 0 {
		return fmt.Errorf("give the groups, e.g. partition (1,2) (3,4)")
	}
	return sc.sim.Partition(a.groups...)
}

func (sc *Script) heal(args) error { sc.sim.Heal(); return nil }

// rating ID VALUE
func (sc *Script) rating(a args) error {
	if len(a.positional) != 2 {
		return fmt.Errorf("want: rating ID VALUE")
	}
	r, err := strconv.ParseInt(a.positional[1], 10, 64)
	if err != nil {
		return fmt.Errorf("rating %q: %w", a.positional[1], err)
	}
	return sc.sim.SetRating(sc.resolve(a.positional[0]), r)
}

// network loss=P dup=P reorder=P [delay=MIN-MAX]: the network from now
// on. An absent loss, dup or reorder is 0; an absent delay leaves the
// one-way delay as it is (delay=0: the default 1-5, as in "cluster"), so a
// script can start a slow spell and end it. Messages already in flight
// keep the delay they were sent with.
func (sc *Script) network(a args) error {
	vals := [3]float64{}
	for i, k := range []string{"loss", "dup", "reorder"} {
		v, err := a.float(k)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	lo, hi, setDelay, err := a.delay("delay")
	if err != nil {
		return err
	}
	if setDelay {
		if err := sc.sim.SetDelay(lo, hi); err != nil {
			return err
		}
	}
	sc.sim.SetNetwork(vals[0], vals[1], vals[2])
	return nil
}

// deliver: run until no election message is in flight.
func (sc *Script) deliver(args) error {
	for sc.sim.InFlight() > 0 && sc.sim.Step() {
	}
	return nil
}

// advance ms=N
func (sc *Script) advance(a args) error {
	ms, err := a.int("ms", 0)
	if err != nil || ms <= 0 {
		return fmt.Errorf("want ms=N with N > 0")
	}
	sc.sim.RunFor(int64(ms))
	return nil
}

// stabilize [max=MS]: run until settled.
func (sc *Script) stabilize(a args) error {
	ms, err := a.int("max", 60_000)
	if err != nil {
		return err
	}
	if !sc.sim.Settle(int64(ms)) {
		sc.trace(fmt.Sprintf("not settled after %dms", ms))
	}
	return sc.status(a)
}

// check [highest|majority] [max=MS]: liveness within the bound, and every
// violation. "majority" keeps the partitions: the connected majority must
// elect one of its own (quorum guard only).
func (sc *Script) checkCmd(a args) error {
	ms, err := a.int("max", 60_000)
	if err != nil {
		return err
	}
	what := ""
	if len(a.positional) > 0 {
		what = a.positional[0]
	}
	switch what {
	case "", "highest":
		sc.sim.Checker().CheckLiveness(int64(ms), what == "highest")
	case "majority":
		sc.sim.Checker().CheckMajority(int64(ms))
	default:
		return fmt.Errorf("check %s: want check, check highest or check majority", what)
	}
	if v := sc.sim.Checker().Violations; len(v) > 0 {
		for _, line := range v {
			sc.trace("violation: " + line)
		}
		return nil
	}
	if sc.sim.named() && what != "majority" {
		sc.okNames()
		return nil
	}
	sc.trace("ok")
	return nil
}

// status: one line per node (with names: per name, see statusNames).
func (sc *Script) status(a args) error {
	if sc.sim.named() {
		return sc.statusNames(a)
	}
	sts, up := sc.sim.Statuses()
	for i, st := range sts {
		if !up[i] {
			sc.trace(fmt.Sprintf("%s: down", st.ID))
			continue
		}
		sc.trace(fmt.Sprintf("%s: %s coordinator=%s term=%s", st.ID, st.State, orNone(st.Coordinator), st.Term))
	}
	return nil
}

// messages: counts by type since the cluster was created.
func (sc *Script) messages(args) error {
	s := sc.sim
	var b strings.Builder
	for _, t := range core.MsgTypes() {
		if s.Sent[t] > 0 {
			fmt.Fprintf(&b, "%s=%d ", t, s.Sent[t])
		}
	}
	fmt.Fprintf(&b, "total=%d lost=%d", s.ElectionMessages(), s.Lost)
	if s.named() {
		fmt.Fprintf(&b, " batches=%d", s.BatchesSent)
	}
	sc.trace(b.String())
	return nil
}

// resolve turns "@coord" into the node that leads now: the up coordinator
// with the highest term, else the coordinator most up nodes report, else
// the highest-rated live voter; "@last" into what @coord last named. Other
// names are returned as they are.
func (sc *Script) resolve(id string) string {
	if id == "@last" && sc.last != "" {
		return sc.last
	}
	if id != "@coord" {
		return id
	}
	sc.last = sc.pickCoord()
	return sc.last
}

func (sc *Script) pickCoord() string {
	s := sc.sim
	if s.named() {
		return sc.pickCoordNames()
	}
	best, bestTerm := "", core.Term(0)
	votes := map[string]int{}
	top := ""
	for _, sn := range s.nodes {
		if !sn.up {
			continue
		}
		st := sn.node.Status()
		if st.State == core.StateCoordinator && (best == "" || st.Term > bestTerm) {
			best, bestTerm = sn.id, st.Term
		}
		if c := st.Coordinator; c != "" && s.Up(c) {
			if votes[c]++; top == "" || votes[c] > votes[top] {
				top = c
			}
		}
	}
	switch {
	case best != "":
		return best
	case top != "":
		return top
	case s.highestLiveVoter(0) != "":
		return s.highestLiveVoter(0)
	}
	return s.nodes[0].id
}

// targets resolves a node argument that may be one ID, @coord, all (every
// member but except) or a (a,b) list.
func (sc *Script) targets(a args, key, except string) ([]string, error) {
	v, ok := a.kv[key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("want %s=ID, %s=all or %s=(a,b)", key, key, key)
	}
	if len(v) == 1 && v[0] == "all" {
		var out []string
		for _, id := range sc.sim.IDs() {
			if id != except {
				out = append(out, id)
			}
		}
		return out, nil
	}
	out := make([]string, len(v))
	for i, id := range v {
		out[i] = sc.resolve(id)
	}
	return out, nil
}

// stall ID ms=N: ID's process stops for N virtual ms (Sim.Stall).
func (sc *Script) stall(a args) error {
	id, err := a.pos(0)
	if err != nil {
		return err
	}
	ms, err := a.int("ms", 0)
	if err != nil {
		return err
	}
	return sc.sim.Stall(sc.resolve(id), int64(ms))
}

// block from=ID|all|(..) to=ID|all|(..) [views=off]: drop messages one way
// until heal (a mute node: from=ID to=all; a deaf one: from=all to=ID).
// With views=off membership keeps both ends alive.
func (sc *Script) block(a args) error {
	from, err := sc.targets(a, "from", "")
	if err != nil {
		return err
	}
	except := ""
	if len(from) == 1 {
		except = from[0]
	}
	to, err := sc.targets(a, "to", except)
	if err != nil {
		return err
	}
	if len(to) == 1 && len(from) > 1 {
		from = slices.DeleteFunc(from, func(id string) bool { return id == to[0] })
	}
	quiet := a.str("views", "on") == "off"
	for _, f := range from {
		for _, t := range to {
			if quiet {
				err = sc.sim.BlockQuiet(f, t)
			} else {
				err = sc.sim.Block(f, t)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// isolate ID [keep=K] [views=off]: cut ID off both ways from every member
// but the K live ones that follow it in ring order: a coordinator that
// still reaches a few followers but not the majority. With views=off
// membership keeps everyone alive (memberlist's indirect probes through
// the followers it still reaches).
func (sc *Script) isolate(a args) error {
	id, err := a.pos(0)
	if err != nil {
		return err
	}
	id = sc.resolve(id)
	keep, err := a.int("keep", 0)
	if err != nil {
		return err
	}
	sn, ok := sc.sim.find(id)
	if !ok {
		return fmt.Errorf("unknown node %q", id)
	}
	quiet := a.str("views", "on") == "off"
	n := len(sc.sim.nodes)
	kept := 0
	for i := 1; i < n; i++ {
		o := sc.sim.nodes[(int(sn.idx)+i)%n]
		if kept < keep && o.up {
			kept++
			continue
		}
		block := sc.sim.Block
		if quiet {
			block = sc.sim.BlockQuiet
		}
		if err := block(id, o.id); err != nil {
			return err
		}
		if err := block(o.id, id); err != nil {
			return err
		}
	}
	return nil
}

// views delay=MIN-MAX: membership reports changes after MIN..MAX virtual
// ms from now on (each observer its own draw).
func (sc *Script) views(a args) error {
	lo, hi, err := a.span("delay", 0, 0)
	if err != nil {
		return err
	}
	if hi > maxMs {
		return fmt.Errorf("delay=%d-%d: want at most %d", lo, hi, maxMs)
	}
	sc.sim.SetViewDelay(lo, hi)
	return nil
}

// confirm sets the flag that forge's confirmed asks for on m: a
// heartbeat's or announcement's Confirmed (its coordinator holds its
// lease), a pre-vote answer's Granted, a resign's Transfer.
func confirm(m *core.Message, on bool) {
	switch m.Type {
	case core.MsgPreVoteAck:
		m.Granted = on
	case core.MsgResign:
		m.Transfer = on
	default:
		m.Confirmed = on
	}
}

// forge from=ID to=ID|all|(..) [type=heartbeat] [term=max|foreign|step|E.T]
// [confirmed] [every=MS ms=MS]: frames that no member sent, in from's name.
// term=max is the highest epoch with from's tag; foreign is one epoch above
// the highest term any node holds, with the tag of the member after from in
// ring order (a term that does not name its sender); step is
// core.MaxEpochStep epochs above the term the target holds, with from's tag
// (the largest raise a member makes at once). With every and ms it forges
// a frame to each target every MS virtual ms for ms virtual ms, working the
// term out anew each time, while the cluster runs: a forger at line rate,
// traced as one line at the end.
func (sc *Script) forge(a args) error {
	from := sc.resolve(a.str("from", ""))
	sn, ok := sc.sim.find(from)
	if !ok {
		return fmt.Errorf("from=%s: want a member", from)
	}
	to, err := sc.targets(a, "to", from)
	if err != nil {
		return err
	}
	t, err := parseMsgType(a.str("type", "heartbeat"))
	if err != nil {
		return err
	}
	every, err := a.int("every", 0)
	if err != nil {
		return err
	}
	span, err := a.int("ms", 0)
	if err != nil {
		return err
	}
	ts := a.str("term", "max")
	// The elections forged for: the unnamed one, or every name (or the
	// one name=NAME names).
	els := []int{0}
	if sc.sim.named() {
		els = els[:0]
		for ni, nm := range sc.sim.names {
			if want := a.str("name", ""); want == "" || want == nm.Name {
				els = append(els, ni)
			}
		}
		if len(els) == 0 {
			return fmt.Errorf("name=%s: not a name of the cluster", a.str("name", ""))
		}
	} else if a.str("name", "") != "" {
		return fmt.Errorf("name=%s: the cluster has no names", a.str("name", ""))
	}
	// fixedFor is the term of election ni's frames (not for step).
	fixedFor := func(ni int) core.Term { return 0 }
	switch ts {
	case "max":
		fixed := core.MakeTerm(math.MaxUint32, core.Tag(from))
		fixedFor = func(int) core.Term { return fixed }
	case "foreign":
		fixed := map[int]core.Term{}
		for _, ni := range els {
			var hi core.Term
			for _, o := range sc.sim.nodes {
				if o.up {
					hi = max(hi, sc.sim.nodeOf(o, ni).Status().Term)
				}
			}
			other := sc.sim.nodes[(int(sn.idx)+1)%len(sc.sim.nodes)].id
			fixed[ni] = core.MakeTerm(hi.Epoch()+1, core.Tag(other))
		}
		fixedFor = func(ni int) core.Term { return fixed[ni] }
	case "step":
	default:
		e, g, ok := strings.Cut(ts, ".")
		ev, err1 := strconv.ParseUint(e, 10, 32)
		gv, err2 := strconv.ParseUint(g, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("term=%s: want max, foreign, step or EPOCH.TAG", ts)
		}
		fixed := core.MakeTerm(uint32(ev), uint32(gv))
		fixedFor = func(int) core.Term { return fixed }
	}
	_, confirmed := a.kv["confirmed"]
	confirmed = confirmed || slices.Contains(a.positional, "confirmed")
	round := func(trace bool) (core.Term, error) {
		var term core.Term
		for _, id := range to {
			o, ok := sc.sim.find(id)
			if !ok {
				return term, fmt.Errorf("sim: forge: unknown target %q", id)
			}
			var pairs []group.Pair
			for _, ni := range els {
				term = fixedFor(ni)
				if ts == "step" {
					term = core.MakeTerm(sc.sim.nodeOf(o, ni).Status().Term.Epoch()+core.MaxEpochStep, core.Tag(from))
				}
				p := sc.sim.forgedAs(from, ni)
				m := core.Message{Type: t, From: from, To: id, Term: term, Rating: p.Rating, Value: p.Rank()}
				confirm(&m, confirmed)
				if t == core.MsgHeartbeat || t == core.MsgCoordinator {
					m.Coordinator = from
				}
				if !sc.sim.named() {
					if err := sc.sim.forge(m, trace); err != nil {
						return term, err
					}
					continue
				}
				pairs = append(pairs, group.Pair{Name: sc.sim.names[ni].Name, Msg: m})
			}
			if len(pairs) > 0 {
				sc.sim.forgeBatch(o, group.Batch{From: from, To: id, Pairs: pairs}, trace)
			}
		}
		return term, nil
	}
	if every == 0 && span == 0 {
		_, err := round(true)
		return err
	}
	if every < 1 || span < every || span/every*len(to) > maxForged {
		return fmt.Errorf("every=%d ms=%d: want 1 <= every <= ms, at most %d frames in all", every, span, maxForged)
	}
	frames, last := 0, core.Term(0)
	for at := 0; at < span; at += every {
		if last, err = round(false); err != nil {
			return err
		}
		frames += len(to)
		sc.sim.RunFor(int64(every))
	}
	sc.trace(fmt.Sprintf("%6dms  forged %d frames %s -> %s every %d ms for %d ms, the last term=%s",
		sc.sim.Now(), frames, from, strings.Join(to, ","), every, span, last))
	return nil
}

// maxForged bounds the frames one forge command puts on the network.
const maxForged = 10_000_000
