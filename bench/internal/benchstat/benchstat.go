// Package benchstat summarises failover times the same way for every
// benchmark program (coordbench and raftfailover),
// so that their JSON rows compare like for like.
package benchstat

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Percentiles of a set of durations, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// NearestRank returns the q-quantile (0 < q ≤ 1) of sorted by the
// nearest-rank method: the smallest value with at least q of the values at
// or below it. sorted must not be empty.
func NearestRank(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}

// Summarise returns the nearest-rank percentiles of ds (not empty), in
// milliseconds rounded to the microsecond.
func Summarise(ds []time.Duration) Percentiles {
	ms := Milliseconds(ds)
	slices.Sort(ms)
	return Percentiles{NearestRank(ms, .5), NearestRank(ms, .9), NearestRank(ms, .99), ms[len(ms)-1]}
}

// Milliseconds returns ds in milliseconds rounded to the microsecond, in
// their order.
func Milliseconds(ds []time.Duration) []float64 {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = math.Round(float64(d)/float64(time.Microsecond)) / 1000
	}
	return ms
}

// WriteSamples writes the durations to path, in milliseconds, one per line
// (the input of bench/cmd/plot).
func WriteSamples(path string, ds []time.Duration) error {
	var sb strings.Builder
	for _, d := range ds {
		sb.WriteString(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64))
		sb.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}
