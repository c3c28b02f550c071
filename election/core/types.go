package core

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// State is a participant's state in the sense of the source texts (docs/algorithms.md):
// sleep (has not taken a step yet), cand (in an election, outcome unknown),
// lost (knows another participant is coordinator) and coordinator. The ring
// algorithms add active and relay for the election phase.
type State uint8

// The states.
const (
	StateSleep State = iota
	StateCandidate
	StateLost
	StateCoordinator
	StateActive
	StateRelay
	numStates
)

var stateNames = [...]string{"sleep", "cand", "lost", "coordinator", "active", "relay"}

// String returns the state's name, as logs and metrics show it: sleep,
// cand, lost, coordinator, active or relay.
func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// States lists every state, in order; metrics use it to keep one-hot gauges.
func States() []State {
	out := make([]State, numStates)
	for i := range out {
		out[i] = State(i)
	}
	return out
}

// Algorithm selects the election algorithm a Node runs.
type Algorithm uint8

// The algorithms. Bully is the default.
const (
	Bully    Algorithm = iota // docs/algorithms.md, bully
	Ring                      // docs/algorithms.md, ring: ring with a list of live members
	Peterson                  // docs/algorithms.md, active/relay ring: active/relay ring, O(n log n)
	numAlgorithms
)

var algorithmNames = [...]string{"bully", "ring", "peterson"}

// String returns the algorithm's name: bully, ring or peterson
// (ParseAlgorithm reads it back); algorithm(N) for an unknown value.
func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return "algorithm(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlgorithm turns "bully", "ring" or "peterson" into an Algorithm.
func ParseAlgorithm(s string) (Algorithm, error) {
	for i, n := range algorithmNames {
		if s == n {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want bully, ring or peterson)", s)
}

// Mode says what a node knows about who is alive.
type Mode uint8

// The modes.
const (
	// Textbook: the node knows the configured members but not who is alive,
	// so it sends to crashed peers too. Message counts match the literature.
	Textbook Mode = iota
	// View: a membership view (memberlist in the runtime) says who is alive;
	// peers known dead are skipped.
	View
)

// String returns the mode's name.
func (m Mode) String() string {
	if m == View {
		return "view"
	}
	return "textbook"
}

// Term is the coordinator's epoch and the fencing token handed to the user.
// The high 32 bits count elections (the epoch); the low 32 bits are the tag
// of the node that won (see Tag). Two coordinators therefore never share a
// term, even on the two sides of a partition, and a new coordinator's term is
// greater than every term its electorate has seen.
type Term uint64

// The term arithmetic (docs/design.md, "Terms: the arithmetic"). An honest
// member raises the epoch by one per election, so epochs are small: a
// cluster holding one election a second for 68 years stays below MaxEpoch.
// No member makes, adopts or announces a term whose epoch is above
// MaxEpoch, so epochs never wrap (a wrapped epoch would make every honest
// announcement look stale); a member whose epoch has reached MaxEpoch does
// not stand. How fast a member's epoch may rise at all is bounded by its
// epoch allowance (Node, term.go): at most MaxEpochStep epochs at once,
// and EpochRate more per tick, so that forged or buggy frames cannot walk
// a member to MaxEpoch in any time that matters.
const (
	MaxEpoch     uint32 = 1<<31 - 1
	MaxEpochStep uint32 = 1 << 20
	// EpochRate is how many epochs a tick adds to a member's epoch
	// allowance, up to MaxEpochStep.
	EpochRate = 16
)

// Plausible reports whether a member that knows term known, its epoch
// allowance whole, adopts t at once: t's epoch is at most MaxEpoch and at
// most MaxEpochStep above known's. A member that has just started (epoch
// 0) is no exception: one forged frame would otherwise take it to
// MaxEpoch.
func (t Term) Plausible(known Term) bool {
	e, k := t.Epoch(), known.Epoch()
	if e > MaxEpoch {
		return false
	}
	return e <= k || e-k <= MaxEpochStep
}

// MakeTerm builds a term from an epoch and a node tag.
func MakeTerm(epoch uint32, tag uint32) Term { return Term(uint64(epoch)<<32 | uint64(tag)) }

// Epoch is the election counter part of the term.
func (t Term) Epoch() uint32 { return uint32(t >> 32) }

// Tag is the winner's tag part of the term.
func (t Term) Tag() uint32 { return uint32(t) }

// String formats a term as epoch.tag, e.g. "3.7".
func (t Term) String() string {
	return strconv.FormatUint(uint64(t.Epoch()), 10) + "." + strconv.FormatUint(uint64(t.Tag()), 10)
}

// Tag is the 32-bit value a node puts in the low half of the terms it wins:
// the ID itself when it is a decimal number below 2^32 (the simulator's
// numeric IDs), else the FNV-1a hash of the ID. The runtime refuses members
// whose tags collide (membership checks it), so a term names one node.
func Tag(id string) uint32 {
	if v, ok := decimal32(id); ok {
		return v
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()
}

// decimal32 reads id as strconv.ParseUint(id, 10, 32) does (decimal digits
// only, leading zeros allowed, a value below 2^32), at a fraction of its
// cost and without building an error for an ID that is not a number: the
// node takes the tag of a heartbeat's sender twice for every heartbeat.
func decimal32(id string) (uint32, bool) {
	if id == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(id); i++ {
		d := id[i] - '0'
		if d > 9 {
			return 0, false
		}
		if v = v*10 + uint64(d); v > math.MaxUint32 {
			return 0, false
		}
	}
	return uint32(v), true
}

// CompareID orders IDs: decimal numbers numerically (shorter is smaller),
// numbers before other strings, other strings bytewise.
func CompareID(a, b string) int {
	na, nb := isDecimal(a), isDecimal(b)
	switch {
	case na && nb:
		if len(a) != len(b) {
			return cmp.Compare(len(a), len(b))
		}
	case na:
		return -1
	case nb:
		return 1
	}
	return strings.Compare(a, b)
}

func isDecimal(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Rank is what an election maximises: the rating est(S) first, then the ID.
type Rank struct {
	Rating int64
	ID     string
}

// Compare orders ranks by (rating, ID).
func (r Rank) Compare(o Rank) int {
	if c := cmp.Compare(r.Rating, o.Rating); c != 0 {
		return c
	}
	return CompareID(r.ID, o.ID)
}

// Peer is a member as the core sees it.
type Peer struct {
	ID     string
	Rating int64
	// NonVoter members follow the coordinator but never stand.
	NonVoter bool
}

// Rank returns the peer's (rating, ID).
func (p Peer) Rank() Rank { return Rank{p.Rating, p.ID} }
