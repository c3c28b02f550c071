package core

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

// TestDeadSetMatchesMap runs random adds and removes on a deadSet (the
// first member inline, a map for the others) and on a plain map, and
// compares every answer: has, remove's report, len and the members that
// all yields.
func TestDeadSetMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for trial := range 200 {
		var d deadSet
		model := map[string]bool{}
		for op := range 40 {
			id := strconv.Itoa(rng.IntN(6))
			if rng.IntN(8) == 0 {
				id = "" // never a member
			}
			if rng.IntN(2) == 0 {
				d.add(id)
				if id != "" {
					model[id] = true
				}
			} else if got, want := d.remove(id), model[id]; got != want {
				t.Fatalf("trial %d op %d: remove(%q) = %v, want %v", trial, op, id, got, want)
			} else {
				delete(model, id)
			}
			for k := range 6 {
				q := strconv.Itoa(k)
				if d.has(q) != model[q] {
					t.Fatalf("trial %d op %d: has(%q) = %v, want %v", trial, op, q, d.has(q), model[q])
				}
			}
			if d.has("") {
				t.Fatalf("trial %d op %d: has(\"\")", trial, op)
			}
			var got []string
			for id := range d.all {
				got = append(got, id)
			}
			sort.Strings(got)
			var want []string
			for id := range model {
				want = append(want, id)
			}
			sort.Strings(want)
			if d.len() != len(model) || len(got) != len(want) {
				t.Fatalf("trial %d op %d: len %d, all %v, want %v", trial, op, d.len(), got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("trial %d op %d: all %v, want %v", trial, op, got, want)
				}
			}
		}
	}
}
