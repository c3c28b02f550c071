package metrics_test

import (
	"fmt"
	"log"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/metrics"
)

// A Recorder per node, on a registry of the service's own (never the
// global one). Handed to election.Config.Recorder, it receives an Update
// after every change of its Elector; here one Update stands for the one an
// Elector hands over when its node becomes coordinator in term 1.1.
func Example() {
	reg := prometheus.NewRegistry() // served on /metrics by promhttp.HandlerFor(reg, ...)
	rec, err := metrics.New(reg, metrics.WithNode("orders-1"))
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Unregister()
	// ec := election.Config{Transport: node, Recorder: rec}

	term := uint64(core.MakeTerm(1, 1)) // epoch 1, won by the node of tag 1
	rec.Record(election.Update{
		State: core.StateCoordinator, StateChanged: true,
		Term: term, TermChanged: true,
		Leader: election.Leadership{Coordinator: "orders-1", Term: term, IsSelf: true}, LeaderChanged: true,
	})

	families, err := reg.Gather() // sorted by name
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "coordelect_is_coordinator", "coordelect_term":
			m := f.GetMetric()[0]
			fmt.Printf("%s{%s=%q} %s\n", f.GetName(), m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(),
				strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64))
		}
	}
	// Output:
	// coordelect_is_coordinator{node="orders-1"} 1
	// coordelect_term{node="orders-1"} 4294967297
}
