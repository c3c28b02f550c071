package sim

import (
	"strconv"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// BenchmarkSimBullyView10000: a whole failover of 10,000 simulated nodes in
// view mode, every survivor detecting (the demo sim -n 10000 -view case).
func BenchmarkSimBullyView10000(b *testing.B) {
	const n = 10000
	var all []string
	for i := 1; i < n; i++ {
		all = append(all, strconv.Itoa(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := New(Config{Members: members(n), Algorithm: core.Bully, Mode: core.View, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		s.CrashBefore(strconv.Itoa(n))
		s.Bootstrap(s.Highest())
		for _, id := range all {
			s.Detect(id)
		}
		if !s.Settle(60_000) {
			b.Fatal("no agreement")
		}
		b.ReportMetric(float64(s.ElectionMessages()), "msgs/op")
	}
}
