//go:build race

package e2e

// raceEnabled: this test binary has the race detector, so the demo it
// drives is built with it too.
const raceEnabled = true
