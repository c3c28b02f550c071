package group

import (
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Every name elects exactly one coordinator, and under PlaceRating it is
// the top-rated member for every name (the bully rule, as with one
// election); under PlaceSpread the leaders spread.
func TestElectsOnePerName(t *testing.T) {
	for _, alg := range []core.Algorithm{core.Bully, core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			c := newCluster(t, 5, func(cfg *core.Config) { cfg.Algorithm = alg })
			ns := names(20)
			c.add(Options{Placement: PlaceSpread}, ns...)
			c.settle(ns, 500)
			loads := c.loads(c.leaders(ns))
			for id, k := range loads {
				if k == 0 {
					t.Errorf("%s leads no name: %v", id, loads)
				}
			}
		})
	}
}
