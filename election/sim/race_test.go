//go:build race

package sim

// raceEnabled: the race detector slows the simulator several times over;
// the largest simulated clusters run without it (go test ./election/sim).
const raceEnabled = true
