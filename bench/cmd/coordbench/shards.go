package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/election/core"
)

// shardedCluster is benchCluster spread over -procs processes: member i
// (rating i) runs in shard (i−1) mod K, a 'coordbench shard' child of this
// process (shard.go). The parent starts the members in the same order and
// with the same pauses as benchCluster, draws each one's seeds among the
// members started (whatever their process), and drives the same failover
// rounds. Each process has its own Go runtime, heap, collector and
// scheduler: a 1,000-member cluster in one process has one heap of about a
// gigabyte to mark and 16,000 goroutines on one run queue. With -netns
// each shard also runs in a network namespace of its own, joined to the
// others by a veth pair on a bridge, so that the members' packets cross
// real interfaces instead of one loopback.
type shardedCluster struct {
	opts   benchOptions
	log    hclog.Logger
	rng    *rand.Rand
	shards []*shardProc
	// addrs[i] is member i+1's address while it runs, "" otherwise.
	addrs []string
	// net is the namespaces' bridge, when -netns.
	net *netnsSet

	mu      sync.Mutex
	looks   []shardLook   // by shard
	changed chan struct{} // capacity 1: a look arrived
	// err is the first failed request of a method that cannot return one
	// (Elections, Messages); the run reports it at its end.
	err error
	// counted is every member's messages sent at the last Messages call;
	// takenAt, those at the last TakeOut (for Detail).
	counted, takenAt map[string][core.NumMsgTypes]uint64
}

// shardProc is one shard process.
type shardProc struct {
	cmd     *exec.Cmd
	in      *json.Encoder
	stdin   io.Closer
	replies chan shardLine // closed when its stdout ends
	done    chan struct{}  // closed when the process has been waited for
	werr    error          // Wait's error, after done
}

func newShardedCluster(o benchOptions, log hclog.Logger) *shardedCluster {
	return &shardedCluster{opts: o, log: log, rng: rand.New(rand.NewPCG(o.seed, 19)),
		addrs: make([]string, o.n), looks: make([]shardLook, o.procs), changed: make(chan struct{}, 1)}
}

// shardOf is the shard member name (1..n) runs in.
func (c *shardedCluster) shardOf(i int) int { return (i - 1) % len(c.shards) }

// spawn starts the shard processes.
func (c *shardedCluster) spawn() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if c.opts.netns {
		if c.net, err = newNetns(c.opts.procs); err != nil {
			return err
		}
	}
	for j := range c.opts.procs {
		bind := "127.0.0.1"
		args := []string{self}
		if c.net != nil {
			bind = c.net.addr(j)
			args = append([]string{"ip", "netns", "exec", c.net.name(j)}, args...)
		}
		args = append(args, "shard", "-n", strconv.Itoa(c.opts.n), "-profile", c.opts.profile,
			"-compress="+strconv.FormatBool(c.opts.compress), "-voters", strconv.Itoa(c.opts.voters),
			"-quorum", strconv.Itoa(c.opts.quorum), "-algorithm", c.opts.alg.String(), "-bind", bind,
			"-health", c.opts.health.String(), "-index", strconv.Itoa(j+1), "-logtop", strconv.Itoa(c.opts.logTop))
		if c.opts.pprof != "" && c.net == nil { // a namespace's loopback is not the parent's
			addr, err := shardPprof(c.opts.pprof, j)
			if err != nil {
				return err
			}
			args = append(args, "-pprof", addr)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr // the shards log only warnings
		cmd.Env = append(os.Environ(), shardEnv+"=1")
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting shard %d: %w", j, err)
		}
		p := &shardProc{cmd: cmd, in: json.NewEncoder(in), stdin: in, replies: make(chan shardLine, 1), done: make(chan struct{})}
		c.shards = append(c.shards, p)
		go c.read(j, p, out)
	}
	return nil
}

// shardPprof is the -pprof address of shard j (0-based) when the parent
// serves on addr: the port j+1 above the parent's.
func shardPprof(addr string, j int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("-pprof %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 || p+j+1 > 65535 {
		return "", fmt.Errorf("-pprof %q with -procs: want a fixed port the shards' ports (the next %d) follow", addr, j+1)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+j+1)), nil
}

// shardEnv is set in a shard's environment: a test binary that finds it
// runs coordbench's main instead of its tests (main_test.go).
const shardEnv = "COORDBENCH_SHARD"

// read reads shard j's lines: looks go to c.looks, answers to p.replies.
func (c *shardedCluster) read(j int, p *shardProc, out io.Reader) {
	defer func() {
		close(p.replies)
		p.werr = p.cmd.Wait()
		close(p.done)
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l shardLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			c.log.Error("shard wrote a bad line", "shard", j, "line", sc.Text(), "error", err)
			continue
		}
		if !l.Re {
			c.setLook(j, l.Look)
			continue
		}
		p.replies <- l
	}
}

// request sends cmd to shard j and returns its answer.
func (c *shardedCluster) request(j int, cmd shardCmd) (shardLine, error) {
	p := c.shards[j]
	if err := p.in.Encode(cmd); err != nil {
		return shardLine{}, fmt.Errorf("shard %d: %s: %w", j, cmd.Op, err)
	}
	t := time.NewTimer(c.opts.timeout)
	defer t.Stop()
	select {
	case l, ok := <-p.replies:
		if !ok {
			<-p.done
			return shardLine{}, fmt.Errorf("shard %d ended (%v) before answering %s", j, p.werr, cmd.Op)
		}
		if l.Err != "" {
			return l, fmt.Errorf("shard %d: %s %s: %s", j, cmd.Op, cmd.Name, l.Err)
		}
		return l, nil
	case <-t.C:
		return shardLine{}, fmt.Errorf("shard %d did not answer %s in %v", j, cmd.Op, c.opts.timeout)
	}
}

// seeds draws up to three running members other than name to join.
func (c *shardedCluster) seeds(name int) []string {
	var up []string
	for i, a := range c.addrs {
		if a != "" && i+1 != name {
			up = append(up, a)
		}
	}
	var out []string
	for len(out) < 3 && len(up) > 0 {
		i := c.rng.IntN(len(up))
		out = append(out, up[i])
		up[i] = up[len(up)-1]
		up = up[:len(up)-1]
	}
	return out
}

// startMember starts member name in its shard.
func (c *shardedCluster) startMember(name int) error {
	l, err := c.request(c.shardOf(name), shardCmd{Op: "start", Name: strconv.Itoa(name), Seeds: c.seeds(name), Elector: !c.opts.bare})
	if err != nil {
		return err
	}
	c.addrs[name-1] = l.Addr
	return nil
}

// start spawns the shards and starts the members, highest rating first,
// as benchCluster.start does, and waits until all follow the top one.
func (c *shardedCluster) start(ctx context.Context) error {
	if err := c.spawn(); err != nil {
		c.stop()
		return err
	}
	for k := 1; k <= c.opts.n; k++ {
		name := c.opts.n + 1 - k
		if err := c.startMember(name); err != nil {
			c.stop()
			return fmt.Errorf("starting member %d of %d: %w", k, c.opts.n, err)
		}
		if err := failover.Pause(ctx, c.opts.startPause(k)); err != nil {
			c.stop()
			return err
		}
		if k%50 == 0 && k < c.opts.n {
			sent, _ := c.sent()
			c.log.Info("starting", "members", k, "of", c.opts.n, "processes", len(c.shards),
				"elections", c.electionsStarted(), "messages", sent.election(), "by_type", sent.String())
		}
	}
	if c.opts.bare {
		c.log.Info("started without electors", "members", c.opts.n, "processes", len(c.shards))
		return nil
	}
	if _, err := c.waitAgreement(ctx, c.topName(), ""); err != nil {
		c.stop()
		return err
	}
	sent, _ := c.sent()
	c.log.Info("started", "members", c.opts.n, "processes", len(c.shards), "elections", c.electionsStarted(),
		"messages", sent.election(), "by_type", sent.String())
	return nil
}

func (c *shardedCluster) topName() string { return strconv.Itoa(c.opts.n) }

// agreement reports, from the shards' latest looks, whether every running
// member reports the same coordinator and term, which, and when the last
// shard came to it.
func (c *shardedCluster) agreement() (coord string, at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var term uint64
	first := true
	for _, l := range c.looks {
		if l.Running == 0 {
			continue
		}
		if !l.Agreed || !first && (l.Coord != coord || l.Term != term) {
			return "", time.Time{}, false
		}
		if first {
			coord, term, first = l.Coord, l.Term, false
		}
		if t := time.Unix(0, l.At); t.After(at) {
			at = t
		}
	}
	return coord, at, !first
}

// watch has every shard write its looks as they change (on), or stop.
// The answers carry each shard's summary as it is now (with the time it
// became so), which becomes the shard's look.
func (c *shardedCluster) watch(on bool) error {
	return c.ask(shardCmd{Op: "watch", On: on})
}

// refresh reads every shard's summary as it is now.
func (c *shardedCluster) refresh() error { return c.ask(shardCmd{Op: "look"}) }

// ask sends cmd, whose answer carries a look, to every shard.
func (c *shardedCluster) ask(cmd shardCmd) error {
	for j := range c.shards {
		l, err := c.request(j, cmd)
		if err != nil {
			return err
		}
		c.setLook(j, l.Look)
	}
	return nil
}

// setLook keeps shard j's look (if l is not nil) and wakes waitAgreement.
func (c *shardedCluster) setLook(j int, l *shardLook) {
	if l == nil {
		return
	}
	c.mu.Lock()
	c.looks[j] = *l
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// waitAgreement waits until every running member reports the same
// coordinator (want, if not empty; not not, if not empty) and returns when
// the last shard came to it. The shards watch their members meanwhile
// (TakeOut has them watch already before the crash, so that the time of
// every change after it is the shard's own).
func (c *shardedCluster) waitAgreement(ctx context.Context, want, not string) (time.Time, error) {
	if err := c.watch(true); err != nil {
		return time.Time{}, err
	}
	defer func() { c.keep(c.watch(false)) }()
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	for {
		coord, at, ok := c.agreement()
		if ok && (want == "" || coord == want) && (not == "" || coord != not) {
			return at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no agreement (want %q; %s): %w", want, c.reports(), ctx.Err())
		case <-c.changed:
		}
	}
}

// reports describes the shards' looks, e.g. "shard 0: 250 running, agreed
// on 1000/term; shard 1: 250 running, not agreed".
func (c *shardedCluster) reports() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := ""
	for j, l := range c.looks {
		if j > 0 {
			s += "; "
		}
		if l.Agreed {
			s += fmt.Sprintf("shard %d: %d running, agreed on %s/%s", j, l.Running, l.Coord, core.Term(l.Term))
		} else {
			s += fmt.Sprintf("shard %d: %d running, not agreed", j, l.Running)
		}
	}
	return s
}

// counts asks every shard for its counts.
func (c *shardedCluster) counts() (byNode map[string][core.NumMsgTypes]uint64, started, misses uint64, err error) {
	byNode = map[string][core.NumMsgTypes]uint64{}
	for j := range c.shards {
		l, err := c.request(j, shardCmd{Op: "counts"})
		if err != nil {
			return nil, 0, 0, err
		}
		for name, v := range l.Sent {
			var a [core.NumMsgTypes]uint64
			copy(a[:], v)
			byNode[name] = a
		}
		started, misses = started+l.Started, misses+l.Misses
	}
	return byNode, started, misses, nil
}

// keep records the first error of a method that cannot return it.
func (c *shardedCluster) keep(err error) {
	if err != nil && c.err == nil {
		c.err = err
		c.log.Error("shard request failed", "error", err)
	}
}

// sent sums the messages every member has sent, by type.
func (c *shardedCluster) sent() (sentCounts, error) {
	byNode, _, _, err := c.counts()
	return sumSent(byNode), err
}

// sumSent sums the members' messages sent, by type.
func sumSent(byNode map[string][core.NumMsgTypes]uint64) sentCounts {
	var s sentCounts
	for _, v := range byNode {
		s = s.plus(v)
	}
	return s
}

func (c *shardedCluster) electionsStarted() uint64 {
	_, started, _, err := c.counts()
	c.keep(err)
	return started
}

func (c *shardedCluster) heartbeatMisses() uint64 {
	_, _, misses, err := c.counts()
	c.keep(err)
	return misses
}

// sentByNode is every member's messages sent, by type.
func (c *shardedCluster) sentByNode() (map[string][core.NumMsgTypes]uint64, error) {
	byNode, _, _, err := c.counts()
	return byNode, err
}

// cpu is the CPU the shard processes have used (/proc/PID/stat).
func (c *shardedCluster) cpu() (time.Duration, error) {
	var ticks uint64
	for _, p := range c.shards {
		t, err := cpuTicks(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	return time.Duration(ticks) * clockTick, nil
}

// memory sums the shards' live heaps (after two collections each),
// goroutine stacks and goroutines.
func (c *shardedCluster) memory() (heap, stacks uint64, goroutines int, err error) {
	for j := range c.shards {
		l, err := c.request(j, shardCmd{Op: "heap"})
		if err != nil {
			return 0, 0, 0, err
		}
		heap, stacks, goroutines = heap+l.Heap, stacks+l.Stacks, goroutines+l.Goroutines
	}
	return heap, stacks, goroutines, nil
}

// stop ends every shard (its members crash) and removes the namespaces.
func (c *shardedCluster) stop() {
	var wg sync.WaitGroup
	for j, p := range c.shards {
		wg.Go(func() {
			_ = p.in.Encode(shardCmd{Op: "stop"})
			_ = p.stdin.Close()
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				c.log.Warn("shard did not stop; killing it", "shard", j)
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		})
	}
	wg.Wait()
	c.shards = nil
	if c.net != nil {
		c.net.remove(c.log)
		c.net = nil
	}
}

// The cluster as the failover driver sees it.
var _ failover.Cluster = (*shardedCluster)(nil)

// Leader names the coordinator every running member reports, which must
// be the top-rated member.
func (c *shardedCluster) Leader() (string, error) {
	if err := c.refresh(); err != nil {
		return "", err
	}
	if coord, _, ok := c.agreement(); !ok || coord != c.topName() {
		return "", fmt.Errorf("coordinator %q, want %s agreed (%s)", coord, c.topName(), c.reports())
	}
	return c.topName(), nil
}

// Elections counts the elections every member has started.
func (c *shardedCluster) Elections() uint64 { return c.electionsStarted() }

// Messages counts the election messages every member has sent.
func (c *shardedCluster) Messages() (uint64, bool) {
	byNode, err := c.sentByNode()
	c.keep(err)
	c.counted = byNode
	return sumSent(byNode).election(), err == nil
}

var _ failover.Detailer = (*shardedCluster)(nil)

// Detail gives the messages by type since the coordinator was taken out,
// and the members that sent them (the most first, at most detailSenders):
// who announced, and whether more than one did.
func (c *shardedCluster) Detail(t0 time.Time) []any {
	byNode, err := c.sentByNode()
	if err != nil {
		return []any{"error", err}
	}
	// When the winner's shard saw it win, and when each shard agreed.
	won, wonAt, agreed := "", time.Duration(0), make([]string, 0, len(c.shards))
	c.mu.Lock()
	for _, l := range c.looks {
		if l.WonAt > 0 && time.Unix(0, l.WonAt).After(t0) {
			won, wonAt = l.Won, time.Unix(0, l.WonAt).Sub(t0)
		}
		agreed = append(agreed, time.Unix(0, l.At).Sub(t0).Round(time.Millisecond).String())
	}
	c.mu.Unlock()
	type sender struct {
		name string
		sent sentCounts
	}
	var total sentCounts
	var senders []sender
	for name, v := range byNode {
		d := sentCounts(v).minus(c.takenAt[name])
		if d.election() > 0 {
			senders = append(senders, sender{name, d})
			total = total.plus(d)
		}
	}
	slices.SortFunc(senders, func(a, b sender) int { return cmp.Compare(b.sent.election(), a.sent.election()) })
	var parts []string
	for _, s := range senders[:min(len(senders), detailSenders)] {
		parts = append(parts, s.name+": "+s.sent.String())
	}
	return []any{"won", won, "won_after", wonAt.Round(time.Millisecond), "shards_agreed_after", strings.Join(agreed, " "),
		"by_type", total.String(), "senders", len(senders), "top_senders", strings.Join(parts, "; ")}
}

// detailSenders is how many senders a round's Detail names.
const detailSenders = 6

// TakeOut crashes the member in its shard.
func (c *shardedCluster) TakeOut(ctx context.Context, name string) error {
	i, err := memberIndex(name, c.opts.n)
	if err != nil {
		return err
	}
	if err := c.watch(true); err != nil {
		return err
	}
	c.takenAt = c.counted // Messages ran just before (failover.round)
	if _, err := c.request(c.shardOf(i), shardCmd{Op: "crash", Name: name}); err != nil {
		return err
	}
	c.addrs[i-1] = ""
	return nil
}

// WaitAgreement waits until the running members agree on a coordinator
// other than not.
func (c *shardedCluster) WaitAgreement(ctx context.Context, not string) (time.Time, error) {
	return c.waitAgreement(ctx, "", not)
}

// BringBack restarts the member on its port and waits until it leads.
func (c *shardedCluster) BringBack(ctx context.Context, name string) error {
	i, err := memberIndex(name, c.opts.n)
	if err != nil {
		return err
	}
	if err := c.startMember(i); err != nil {
		return err
	}
	_, err = c.waitAgreement(ctx, name, "")
	return err
}

// netnsSet is K network namespaces, cb<pid>-<j>, each with an interface
// eth0 at 10.77.0.<j+1>/24 whose veth peer is on one bridge in this
// namespace.
type netnsSet struct {
	prefix string
	bridge string
	k      int
}

// newNetns creates k namespaces (needs root and the ip command).
func newNetns(k int) (*netnsSet, error) {
	pid := os.Getpid()
	s := &netnsSet{prefix: fmt.Sprintf("cb%d-", pid), bridge: fmt.Sprintf("cbbr%d", pid%100000), k: k}
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %v: %w: %s", args, err, out)
		}
		return nil
	}
	steps := [][]string{{"link", "add", s.bridge, "type", "bridge"}, {"link", "set", s.bridge, "up"}}
	for j := range k {
		veth := fmt.Sprintf("cbv%d-%d", pid%100000, j)
		steps = append(steps,
			[]string{"netns", "add", s.name(j)},
			[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", s.name(j)},
			[]string{"link", "set", veth, "master", s.bridge, "up"},
			[]string{"-n", s.name(j), "addr", "add", s.addr(j) + "/24", "dev", "eth0"},
			[]string{"-n", s.name(j), "link", "set", "eth0", "up"},
			[]string{"-n", s.name(j), "link", "set", "lo", "up"})
	}
	for _, st := range steps {
		if err := ip(st...); err != nil {
			s.remove(hclog.NewNullLogger())
			return nil, fmt.Errorf("-netns (needs root and iproute2): %w", err)
		}
	}
	return s, nil
}

func (s *netnsSet) name(j int) string { return s.prefix + strconv.Itoa(j) }
func (s *netnsSet) addr(j int) string { return "10.77.0." + strconv.Itoa(j+1) }

// remove deletes the namespaces (and their veth pairs) and the bridge.
func (s *netnsSet) remove(log hclog.Logger) {
	var errs []error
	for j := range s.k {
		if out, err := exec.Command("ip", "netns", "del", s.name(j)).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s", s.name(j), err, out))
		}
	}
	if out, err := exec.Command("ip", "link", "del", s.bridge).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w: %s", s.bridge, err, out))
	}
	if err := errors.Join(errs...); err != nil {
		log.Debug("removing the namespaces", "error", err)
	}
}
