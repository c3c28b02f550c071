//go:build race

package election_test

// raceEnabled: the race detector slows every memberlist goroutine several
// times over; tests of many real members in one process scale down.
const raceEnabled = true
