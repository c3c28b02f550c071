package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/coordelect/coordelect/election/core"
)

// Script runs the scenario language (docs/scenarios.md): one command per
// line with key=value arguments, as parsed by cockroachdb/datadriven. Each
// command returns the trace of what happened while it ran.
type Script struct {
	sim *Sim
	out strings.Builder
}

// Sim returns the cluster the script built (nil before "cluster").
func (sc *Script) Sim() *Sim { return sc.sim }

// Exec runs one command and returns its output.
func (sc *Script) Exec(cmd string, args []datadriven.CmdArg) (string, error) {
	sc.out.Reset()
	if cmd != "cluster" && sc.sim == nil {
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
	}
}

func commandNames() []string {
	var out []string
	for k := range commands {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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
	cfg.Trace = sc.trace
	s, err := New(cfg)
	if err != nil {
		return err
	}
	sc.sim = s
	switch c := a.str("coordinator", "highest"); c {
	case "none":
	case "highest":
		err = s.Bootstrap(s.Highest())
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
	if cfg.DelayMin, cfg.DelayMax, err = a.span("delay", 1, 5); err != nil {
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
	var seed, tick, vd int
	for k, p := range map[string]*int{"seed": &seed, "tick": &tick, "view-delay": &vd} {
		if *p, err = a.int(k, 0); err != nil {
			return cfg, err
		}
	}
	cfg.Seed, cfg.TickMs, cfg.ViewDelayMs = uint64(seed), int64(tick), int64(vd)
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
func (sc *Script) resign(a args) error  { return sc.each(a, sc.sim.Resign) }

// detect ID... | detect all
func (sc *Script) detect(a args) error {
	if len(a.positional) == 1 && a.positional[0] == "all" {
		for _, id := range sc.sim.IDs() {
			if sc.sim.Up(id) {
				if err := sc.sim.Detect(id); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return sc.each(a, sc.sim.Detect)
}

func (sc *Script) each(a args, fn func(string) error) error {
	if len(a.positional) == 0 {
		return fmt.Errorf("name at least one node")
	}
	for _, id := range a.positional {
		if err := fn(id); err != nil {
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
	return sc.sim.SetRating(a.positional[0], r)
}

// network loss=P dup=P reorder=P
func (sc *Script) network(a args) error {
	vals := [3]float64{}
	for i, k := range []string{"loss", "dup", "reorder"} {
		v, err := a.float(k)
		if err != nil {
			return err
		}
		vals[i] = v
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

// check [highest] [max=MS]: liveness within the bound, and every violation.
func (sc *Script) checkCmd(a args) error {
	ms, err := a.int("max", 60_000)
	if err != nil {
		return err
	}
	highest := len(a.positional) > 0 && a.positional[0] == "highest"
	sc.sim.Checker().CheckLiveness(int64(ms), highest)
	if v := sc.sim.Checker().Violations; len(v) > 0 {
		for _, line := range v {
			sc.trace("violation: " + line)
		}
		return nil
	}
	sc.trace("ok")
	return nil
}

// status: one line per node.
func (sc *Script) status(args) error {
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
	sc.trace(b.String())
	return nil
}
