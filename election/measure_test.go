package election_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/hashicorp/memberlist"
)

// measure skips a measurement unless COORDELECT_MEASURE is set: they run
// clusters of thousands of names and print figures, they check nothing
// the other tests do not.
func measure(t *testing.T) {
	if os.Getenv("COORDELECT_MEASURE") == "" {
		t.Skip("a measurement: set COORDELECT_MEASURE=1")
	}
}

// measureNames returns the number of names of a measurement: E, or
// COORDELECT_NAMES.
func measureNames(e int) int {
	if v, err := strconv.Atoi(os.Getenv("COORDELECT_NAMES")); err == nil && v > 0 {
		return v
	}
	return e
}

// liveHeap returns the live heap after two collections.
func liveHeapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMeasureNamedMemory: the memory a name costs each member, in the
// runtime (Elector, group, core nodes, candidacies, observers, one
// callback each), over the in-memory network: the live heap of n
// members running the unnamed election, then with E spread names
// settled and idle long enough for the rosters to give back their spare
// room, divided by n x E. With COORDELECT_HEAP=path it also writes the
// heap profile of each size to path.nN, which records every allocation
// from the names' start on (runtime.MemProfileRate 1):
// go tool pprof -sample_index=inuse_space election.test path.n20.
//
//	COORDELECT_MEASURE=1 go test ./election -run TestMeasureNamedMemory -v
func TestMeasureNamedMemory(t *testing.T) {
	measure(t)
	e := measureNames(1000)
	for _, n := range []int{5, 10, 20} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newNamed(t, peers(n), quiet)
				top := peers(n)[n-1].id
				c.waitAgreed(5*time.Second, top, 0)
				<-time.After(time.Second)
				before := liveHeapNow()
				if os.Getenv("COORDELECT_HEAP") != "" {
					runtime.MemProfileRate = 1 // the profile records every allocation of the names
				}
				names := jobs(e)
				c.addPlain(election.ElectionOptions{Placement: election.PlaceSpread}, names)
				leaders, _ := c.waitAll(60*time.Second, names)
				<-time.After(31 * time.Second) // the rosters give back their room (rosterClipAfter)
				after := liveHeapNow()
				if path := os.Getenv("COORDELECT_HEAP"); path != "" {
					f, err := os.Create(fmt.Sprintf("%s.n%d", path, n))
					if err != nil {
						t.Fatal(err)
					}
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
				for name := range leaders {
					leaders[name], _ = c.agree(name) // the placement settled since the first agreement
				}
				load := perMember(leaders)
				mx := 0
				for _, k := range load {
					mx = max(mx, k)
				}
				t.Logf("n=%d E=%d: %.0f B per name per member (live heap %d -> %d); leaders per member max %d mean %.1f",
					n, e, float64(after-before)/float64(n*e), before, after, mx, float64(e)/float64(n))
				runtime.KeepAlive(c)
			})
		})
	}
}

// TestMeasureIdlePackets: the packets (Send, SendBatch, SendCandidacy
// calls: one frame each on the in-memory network) the busiest member
// sends per second in an idle cluster of n members with E spread names,
// beside the same cluster running the unnamed election alone.
//
//	COORDELECT_MEASURE=1 go test ./election -run TestMeasureIdlePackets -v
func TestMeasureIdlePackets(t *testing.T) {
	measure(t)
	const n, idle = 20, 10 * time.Second
	for _, e := range []int{0, measureNames(1000)} {
		t.Run(fmt.Sprintf("E=%d", e), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newNamed(t, peers(n), quiet)
				top := peers(n)[n-1].id
				c.waitAgreed(5*time.Second, top, 0)
				if e > 0 {
					names := jobs(e)
					c.addPlain(election.ElectionOptions{Placement: election.PlaceSpread}, names)
					c.waitAll(60*time.Second, names)
				}
				<-time.After(2 * time.Second)
				p0 := c.net.SenderPackets()
				<-time.After(idle)
				p1 := c.net.SenderPackets()
				busiest, most := "", 0.0
				total := 0.0
				for id, k := range p1 {
					r := float64(k-p0[id]) / idle.Seconds()
					total += r
					if r > most {
						busiest, most = id, r
					}
				}
				t.Logf("n=%d E=%d: busiest member %s sends %.1f packets/s; all members %.1f/s", n, e, busiest, most, total)
			})
		})
	}
}

// quiet is the configuration of measured members: no logger.
func quiet(cfg *election.Config) { cfg.Logger = nil }

// TestMeasureMemberlistIdlePackets: the election frames (membership
// Stats.Sent: every datagram and stream, a batch split into as many
// datagrams as it fills) the busiest member sends per second in an idle
// cluster of n real members (memberlist on loopback) with E spread
// names, beside the same cluster with the unnamed election alone.
// memberlist's own gossip and probes are not counted. It also logs the
// CPU the process used over the idle window, per member.
// COORDELECT_COMPRESS=0 turns memberlist's compression off.
//
//	COORDELECT_MEASURE=1 go test ./election -run TestMeasureMemberlistIdlePackets -v
func TestMeasureMemberlistIdlePackets(t *testing.T) {
	measure(t)
	n := 10
	if v, err := strconv.Atoi(os.Getenv("COORDELECT_MEMBERS")); err == nil && v > 1 {
		n = v
	}
	const idle = 10 * time.Second
	for _, e := range []int{0, measureNames(1000)} {
		t.Run(fmt.Sprintf("n=%d/E=%d", n, e), func(t *testing.T) {
			c := &realNamed{realCluster: newRealCluster(t, nil), els: map[string]map[string]*election.Election{}}
			if os.Getenv("COORDELECT_COMPRESS") == "0" {
				c.memb = func(m *membership.Config) {
					m.Memberlist = func(mc *memberlist.Config) { mc.EnableCompression = false }
				}
			}
			var ids []string
			for i := 1; i <= n; i++ {
				id := fmt.Sprintf("m%02d", i)
				c.start(id, 1, false)
				ids = append(ids, id)
			}
			names := jobs(e)
			for _, id := range ids {
				c.add(id, election.ElectionOptions{Placement: election.PlaceSpread}, names)
			}
			if e > 0 {
				defer func() {
					for _, id := range ids {
						st := c.nodes[id].mem.Stats()
						t.Logf("%s: sent %d failed %d queue full %d abandoned %d received %d dropped %v reordered %d gaps %d",
							id, st.Sent, st.SendFailed, st.SendQueueFull, st.SendAbandoned, st.Received, st.Dropped, st.Reordered, st.GapsSkipped)
					}
				}()
				c.waitAll(120*time.Second, names, ids)
			}
			<-time.After(3 * time.Second) // the start's traffic is over
			sent := func() map[string]uint64 {
				out := map[string]uint64{}
				for _, id := range ids {
					out[id] = c.nodes[id].mem.Stats().Sent
				}
				return out
			}
			s0 := sent()
			cpu0, cpuOK := processCPU()
			<-time.After(idle)
			s1 := sent()
			cpu1, _ := processCPU()
			busiest, most, total := "", 0.0, 0.0
			for _, id := range ids {
				r := float64(s1[id]-s0[id]) / idle.Seconds()
				total += r
				if r > most {
					busiest, most = id, r
				}
			}
			t.Logf("n=%d E=%d: busiest member %s sends %.1f frames/s; mean %.1f", n, e, busiest, most, total/float64(n))
			if cpuOK {
				t.Logf("n=%d E=%d: the process used %.1f %% of a core per member over the idle window (memberlist compression %v)",
					n, e, 100*(cpu1-cpu0).Seconds()/idle.Seconds()/float64(n), os.Getenv("COORDELECT_COMPRESS") != "0")
			}
		})
	}
}
