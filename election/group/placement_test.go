package group

import (
	"math"
	"strconv"
	"testing"
)

// log2Q32 is log2 rounded down to 32 fractional bits: exact at powers of
// two, within 2^-32 of math.Log2 elsewhere (up to float64's own error).
func TestLog2Q32(t *testing.T) {
	for _, x := range []uint64{1, 2, 3, 5, 7, 10, 1000, 1 << 20, 1<<32 + 1, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		got := float64(log2Q32(x)) / (1 << 32)
		want := math.Log2(float64(x))
		if math.Abs(got-want) > 3e-9 {
			t.Errorf("log2Q32(%d) = %.12f, want %.12f", x, got, want)
		}
	}
	for k := range 64 {
		if got := log2Q32(1 << k); got != uint64(k)<<32 {
			t.Errorf("log2Q32(2^%d) = %#x, want %#x", k, got, uint64(k)<<32)
		}
	}
}

// SpreadRating's values are part of the contract between members (every
// member must compute the same): these must not change between builds
// or platforms. They equal floor(w * 2^16 / -log2(u)) computed in
// floating point (u = (spreadHash | 1) / 2^64), which the test checks
// too, to a relative 1e-9.
func TestSpreadRatingStable(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		rating   int64
		want     int64
	}{
		{"default", "m00", 1, 50184},
		{"default", "m01", 1, 20941},
		{"job-0", "m00", 1, 211453},
		{"job-0", "m00", 5, 1057269},
		{"job-0", "m00", MaxWeight, 221725529855},
		{"job-0", "m00", MaxWeight + 1, 221725529855},
		{"job-0", "m00", -7, 211453},
		{"shard/17", "10.0.0.7:7946", 3, 473637},
	} {
		if got := SpreadRating(tc.name, tc.id, tc.rating); got != tc.want {
			t.Errorf("SpreadRating(%q, %q, %d) = %d, want %d", tc.name, tc.id, tc.rating, got, tc.want)
		}
		u := float64(spreadHash(tc.name, tc.id)|1) / (1 << 64)
		float := float64(Weight(tc.rating)) * (1 << 16) / -math.Log2(u)
		if math.Abs(float-float64(tc.want)) > 1+1e-9*float {
			t.Errorf("SpreadRating(%q, %q, %d): the float formula gives %.1f, the table %d", tc.name, tc.id, tc.rating, float, tc.want)
		}
	}
}

// Weight clamps a rating to [1, MaxWeight].
func TestWeight(t *testing.T) {
	for _, tc := range []struct{ rating, want int64 }{
		{math.MinInt64, 1}, {-1, 1}, {0, 1}, {1, 1}, {7, 7}, {MaxWeight, MaxWeight}, {MaxWeight + 1, MaxWeight}, {math.MaxInt64, MaxWeight},
	} {
		if got := Weight(tc.rating); got != tc.want {
			t.Errorf("Weight(%d) = %d, want %d", tc.rating, got, tc.want)
		}
	}
}

// Plain rendezvous ranks a member first for its weight's share of the
// names: members of weights 1, 2, 3 and 4 lead 10%, 20%, 30% and 40% of
// 20,000 names, within 1.5 points.
func TestSpreadRatingWeights(t *testing.T) {
	weights := []int64{1, 2, 3, 4}
	first := make([]int, len(weights))
	const e = 20000
	for i := range e {
		name := "name-" + strconv.Itoa(i)
		best, bestR := 0, int64(-1)
		for m, w := range weights {
			if r := SpreadRating(name, "m"+strconv.Itoa(m), w); r > bestR {
				best, bestR = m, r
			}
		}
		first[best]++
	}
	for m, w := range weights {
		share, want := float64(first[m])/e, float64(w)/10
		if math.Abs(share-want) > 0.015 {
			t.Errorf("member of weight %d ranks first for %.3f of the names, want %.2f", w, share, want)
		}
	}
}

// Names differ from one another: ValidateName's table.
func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{DefaultName, true}, {"job-1", true}, {"shard/17", true}, {"ümlaut", true}, {string(make([]byte, MaxNameLen)), false},
		{"", false}, {"tab\there", false}, {"nl\n", false}, {"\x7f", false}, {"\xff", false}, {"\u0085", false},
		{"a" + string(make([]byte, 0)), true},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	long := ""
	for range MaxNameLen {
		long += "x"
	}
	if err := ValidateName(long); err != nil {
		t.Errorf("a name of MaxNameLen bytes: %v", err)
	}
	if err := ValidateName(long + "x"); err == nil {
		t.Errorf("a name of MaxNameLen+1 bytes was accepted")
	}
}
