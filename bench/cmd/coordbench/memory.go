package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/bench/internal/failover"
)

const benchMemorySynopsis = `usage: coordbench memory [flags]

Measures the live heap (runtime.ReadMemStats after two GCs; the median of
7 readings 200 ms apart), the goroutine stacks and the goroutines of -n members
in this process, in three steps: bare memberlist nodes (memberlist.Create
with the profile's defaults, joined), then membership.Node members without
electors, then the same members with an elector each. Prints one JSON
object; per-node figures are differences from the heap before the step,
divided by -n. With -memprofile FILE it also writes heap profiles (every
allocation of 4 KiB or more sampled, so the runs that write them are slower
and are not the figures): FILE.bare with the bare memberlist nodes, FILE with
the members and their electors, each after the step's readings; 'go tool
pprof -sample_index=inuse_space -diff_base FILE.bare FILE' shows where the
bytes above bare memberlist go.`

// memoryFlags are memory's own flags.
type memoryFlags struct {
	memprofile string // -memprofile
	skipBare   bool   // -skip-bare
}

func parseBenchMemory(args []string, stdout io.Writer) (benchOptions, memoryFlags, error) {
	var mf memoryFlags
	o, err := parseBench("memory", 50, benchMemorySynopsis, args, stdout, func(fs *flag.FlagSet, o *benchOptions) {
		fs.DurationVar(&o.quiet, "settle", 3*time.Second, "how long each step runs before the heap is read")
		fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound of the wait for the electors to agree")
		fs.StringVar(&mf.memprofile, "memprofile", "", "write heap profiles to FILE.bare (bare memberlist) and FILE (members with electors)")
		resultsFlag(fs, &o.results)
		fs.BoolVar(&mf.skipBare, "skip-bare", false,
			"leave the bare memberlist step out (its figures and above_memberlist print 0): on a loaded machine its start, every node joining the first, is the slowest part from n = 300 on")
	}, func(o *benchOptions) error {
		if o.quiet < 0 {
			return usagef("-settle %v: want 0 or more", o.quiet)
		}
		return nil
	})
	return o, mf, err
}

// memProfileRate is runtime.MemProfileRate with -memprofile: fine enough
// that allocations of a few hundred bytes per member show up at n = 100.
const memProfileRate = 4096

// writeHeapProfile writes the heap profile to file ("": nothing), after
// a collection, so that it holds what is live now.
func writeHeapProfile(file string) error {
	if file == "" {
		return nil
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func runBenchMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, mf, err := parseBenchMemory(args, stdout)
	if err != nil {
		return err
	}
	memprofile := mf.memprofile
	if memprofile != "" {
		runtime.MemProfileRate = memProfileRate
	}
	lg := newBenchLogger(stderr, false)
	rec := startRecording(o.results, "memory", args)
	res := memoryResult{N: o.n, Profile: o.profile, Compress: o.compress}
	if !mf.skipBare {
		bare, err := bareMemberlistHeap(o, memprofile)
		if err != nil {
			return err
		}
		res.MemberlistPerNode, res.MemberlistStackPerNode, res.MemberlistGoroutinesPerNode = bare.heap, bare.stack, bare.goroutines
		lg.Info("bare memberlist", "bytes_per_node", res.MemberlistPerNode)
	}
	c := newBenchCluster(o, lg)
	defer c.stop()
	base := settledHeap(0)
	for k, b := range slices.Backward(c.nodes) {
		if err := c.startNode(b, false); err != nil {
			return err
		}
		if err := failover.Pause(ctx, o.startPause(len(c.nodes)-k)); err != nil {
			return err
		}
	}
	members := settledHeap(o.quiet)
	m := members.minus(base).per(o.n)
	res.MembershipPerNode, res.MembershipStackPerNode, res.MembershipGoroutinesPerNode = m.heap, m.stack, m.goroutines
	for _, b := range slices.Backward(c.nodes) { // highest first, as start does
		if err := c.startElector(b); err != nil {
			return err
		}
		if err := failover.Pause(ctx, o.stagger); err != nil {
			return err
		}
	}
	if _, err := c.waitAgreement(ctx, c.top().name, ""); err != nil {
		return err
	}
	e := settledHeap(o.quiet).minus(members).per(o.n)
	res.ElectorPerNode, res.ElectorStackPerNode, res.ElectorGoroutinesPerNode = e.heap, e.stack, e.goroutines
	if err := writeHeapProfile(memprofile); err != nil {
		return err
	}
	if !mf.skipBare {
		res.AboveMemberlistPerNode = res.MembershipPerNode + res.ElectorPerNode - res.MemberlistPerNode
	}
	lg.Info("membership and electors", "membership_bytes_per_node", res.MembershipPerNode,
		"elector_bytes_per_node", res.ElectorPerNode)
	if memprofile == "" { // a profiled run's figures are not the reference ones
		if err := rec.write(resultsName("memory", o), res); err != nil {
			return err
		}
	}
	return printJSON(stdout, res)
}

// memoryResult is what memory prints, in bytes.
type memoryResult struct {
	N        int    `json:"n"`
	Profile  string `json:"profile"`
	Compress bool   `json:"compress"`
	// MemberlistPerNode: a bare memberlist node.
	MemberlistPerNode int64 `json:"memberlist_bytes_per_node"`
	// MembershipPerNode: a membership.Node (memberlist and the adapter).
	MembershipPerNode int64 `json:"membership_bytes_per_node"`
	// ElectorPerNode: what an elector adds to a membership.Node.
	ElectorPerNode int64 `json:"elector_bytes_per_node"`
	// AboveMemberlistPerNode: adapter and elector above bare memberlist.
	AboveMemberlistPerNode int64 `json:"above_memberlist_bytes_per_node"`
	// The goroutine stacks (runtime.MemStats.StackInuse), which the heap
	// figures leave out, per node.
	MemberlistStackPerNode int64 `json:"memberlist_stack_bytes_per_node"`
	MembershipStackPerNode int64 `json:"membership_stack_bytes_per_node"`
	ElectorStackPerNode    int64 `json:"elector_stack_bytes_per_node"`
	// The goroutines (runtime.NumGoroutine), per node.
	MemberlistGoroutinesPerNode float64 `json:"memberlist_goroutines_per_node"`
	MembershipGoroutinesPerNode float64 `json:"membership_goroutines_per_node"`
	ElectorGoroutinesPerNode    float64 `json:"elector_goroutines_per_node"`
}

// memSample is the live heap and the goroutine stacks, in bytes, and the
// number of goroutines.
type memSample struct{ heap, stack, goroutines int64 }

func (m memSample) minus(o memSample) memSample {
	return memSample{m.heap - o.heap, m.stack - o.stack, m.goroutines - o.goroutines}
}

// perNode is a memSample divided among the nodes.
type perNode struct {
	heap, stack int64
	goroutines  float64 // to two decimals
}

// per divides m among n nodes.
func (m memSample) per(n int) perNode {
	return perNode{m.heap / int64(n), m.stack / int64(n), math.Round(100*float64(m.goroutines)/float64(n)) / 100}
}

// heapSamples is how many readings settledHeap takes; it reports their
// median, so that a push-pull sync or a burst of gossip caught in flight
// by one reading does not count as resident memory.
const heapSamples = 7

// settledHeap waits d, then reads the live heap (after two collections),
// the stacks in use and the number of goroutines heapSamples times, 200 ms
// apart, and returns the median of each.
func settledHeap(d time.Duration) memSample {
	time.Sleep(d)
	heaps, stacks, gs := make([]int64, heapSamples), make([]int64, heapSamples), make([]int64, heapSamples)
	for i := range heapSamples {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heaps[i], stacks[i], gs[i] = int64(ms.HeapAlloc), int64(ms.StackInuse), int64(runtime.NumGoroutine())
	}
	slices.Sort(heaps)
	slices.Sort(stacks)
	slices.Sort(gs)
	return memSample{heaps[heapSamples/2], stacks[heapSamples/2], gs[heapSamples/2]}
}

// bareMemberlistHeap starts o.n bare memberlist nodes on 127.0.0.1 with
// the profile's defaults, each joining the first, and returns their heap
// stacks and goroutines per node; they are shut down before it returns. With
// memprofile it writes the heap profile to memprofile+".bare" first.
func bareMemberlistHeap(o benchOptions, memprofile string) (perNode, error) {
	base := settledHeap(0)
	var nodes []*memberlist.Memberlist
	defer func() {
		for _, m := range nodes {
			_ = m.Shutdown()
		}
	}()
	for i := range o.n {
		mc := memberlistProfile(o.profile)
		mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "m"+strconv.Itoa(i+1), "127.0.0.1", 0, 0
		mc.Logger = log.New(io.Discard, "", 0)
		mc.EnableCompression = o.compress
		m, err := memberlist.Create(mc)
		if err != nil {
			return perNode{}, fmt.Errorf("memberlist %d: %w", i+1, err)
		}
		nodes = append(nodes, m)
		time.Sleep(o.startPause(i + 1))
		if i > 0 {
			if err := joinFirst(m, nodes[0]); err != nil {
				return perNode{}, fmt.Errorf("memberlist %d joining: %w", i+1, err)
			}
		}
	}
	p := settledHeap(o.quiet).minus(base).per(o.n)
	if memprofile != "" {
		if err := writeHeapProfile(memprofile + ".bare"); err != nil {
			return perNode{}, err
		}
	}
	return p, nil
}

// bareJoinTries is how many times a bare memberlist node tries to join the
// first: on a loaded machine, the first node's push-pull of a few hundred
// members sometimes outlasts memberlist's TCP timeout.
const bareJoinTries = 3

// joinFirst joins m to first, trying bareJoinTries times.
func joinFirst(m, first *memberlist.Memberlist) error {
	var err error
	for range bareJoinTries {
		if _, err = m.Join([]string{first.LocalNode().FullAddress().Addr}); err == nil {
			return nil
		}
	}
	return err
}

// memberlistProfile returns memberlist's default configuration of the
// profile the membership package calls name.
func memberlistProfile(name string) *memberlist.Config {
	switch name {
	case "local":
		return memberlist.DefaultLocalConfig()
	case "wan":
		return memberlist.DefaultWANConfig()
	}
	return memberlist.DefaultLANConfig()
}
