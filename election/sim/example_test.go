package sim_test

import (
	"fmt"
	"log"
	"strconv"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/sim"
)

// Five bully nodes in virtual time: the coordinator crashes, the
// survivors' heartbeat detectors notice, and they settle on the
// highest-rated survivor. The checker ran after every event; the same
// seed gives the same run.
func Example() {
	var members []core.Peer
	for i := 1; i <= 5; i++ {
		members = append(members, core.Peer{ID: strconv.Itoa(i), Rating: int64(i)})
	}
	s, err := sim.New(sim.Config{Members: members, Algorithm: core.Bully, Mode: core.View, HeartbeatDetector: true, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Bootstrap("5"); err != nil { // 5 leads, everyone follows
		log.Fatal(err)
	}
	if err := s.Crash("5"); err != nil {
		log.Fatal(err)
	}
	settled := s.Settle(30_000) // up to 30 s of virtual time
	st, _ := s.Agreement()
	fmt.Println("settled:", settled, "coordinator:", st.Coordinator, "violations:", len(s.Checker().Violations))
	// Output: settled: true coordinator: 4 violations: 0
}

// A scenario, as `demo sim -script FILE` runs it (docs/scenarios.md):
// the same cluster, the coordinator crashed, and a check that every live
// node agrees on the highest-rated one within 5 s of virtual time.
func ExampleRunScriptResult() {
	res, err := sim.RunScriptResult(`
cluster algorithm=bully ids=(1,2,3,4,5) mode=view detector=on coordinator=5 seed=1
crash 5
check max=5000
`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("violations:", len(res.Violations))
	// Output: violations: 0
}
