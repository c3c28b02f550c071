package benchstat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNearestRank(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		vals []float64
		q    float64
		want float64
	}{
		{[]float64{7}, .5, 7}, {[]float64{7}, .99, 7},
		{ten, .5, 5}, {ten, .9, 9}, {ten, .99, 10}, {ten, 1, 10}, {ten, .01, 1},
		{[]float64{1, 2, 3, 4}, .5, 2},
	} {
		if got := NearestRank(c.vals, c.q); got != c.want {
			t.Errorf("NearestRank(%v, %v) = %v, want %v", c.vals, c.q, got, c.want)
		}
	}
	p := Summarise([]time.Duration{3 * time.Millisecond, time.Millisecond, 2500 * time.Microsecond})
	if p != (Percentiles{P50: 2.5, P90: 3, P99: 3, Max: 3}) {
		t.Errorf("Summarise = %+v", p)
	}
}

func TestWriteSamples(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.txt")
	if err := WriteSamples(path, []time.Duration{1500 * time.Microsecond, 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "1.500\n2000.000\n"; got != want {
		t.Errorf("samples file %q, want %q", got, want)
	}
}
